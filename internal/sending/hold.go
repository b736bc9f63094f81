package sending

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/suspend"
)

// Holds decides, just before a claimed delivery is sent, whether an
// operator's suspension holds it (package suspend). The claim already
// leaves the deliveries of suspended domains and accounts alone; what
// reaches here is a delivery claimed before its domain or account was
// suspended, and every delivery to a suspended site, whose site is known
// only once its destination is named.
type Holds struct {
	Suspensions *suspend.Service
	// Sites names a delivery's site; nil: no site is ever held.
	Sites SiteResolver
	Store HoldStore
}

// Delays of a held delivery: a domain's or account's is back in the queue
// where the claim leaves it, and looked at again once the suspensions'
// copy (at most a second old) may have changed; a site's that has no end
// is looked at again after a minute (resuming the site makes it due at
// once).
const (
	holdRecheck  = time.Second
	holdOpenSite = time.Minute
)

// UseHolds makes the worker put back deliveries that suspensions hold.
// Call it before Start.
func (w *Worker) UseHolds(h *Holds) { w.holds = h }

// holdSuspended puts d back in the queue when a suspension holds it, and
// reports whether it did: the delivery is then not an attempt.
func (w *Worker) holdSuspended(ctx context.Context, dom domain.Domain, d Delivery) bool {
	if w.holds == nil {
		return false
	}
	now := w.cfg.Now()
	site, next, held := w.holds.check(ctx, dom, d, now)
	if !held {
		return false
	}
	if err := w.holds.Store.HoldDelivery(ctx, d.ID, w.owner, site, next); err != nil {
		w.cfg.Logger.Warn("putting back a suspended delivery", "delivery", d.ID, "error", err)
	}
	return true
}

// check returns whether d is held, for which site ("" for its domain or
// account) and until when.
func (h *Holds) check(ctx context.Context, dom domain.Domain, d Delivery, now time.Time) (site string, next time.Time, held bool) {
	if _, ok := h.Suspensions.Match(ctx, func(sp suspend.Suspension) bool {
		return (sp.Kind == suspend.Domain && sp.Value == dom.Name) || (sp.Kind == suspend.Account && sp.AccountID == dom.AccountID)
	}); ok {
		return "", now.Add(holdRecheck), true
	}
	if h.Sites == nil || !h.Suspensions.Any(ctx, suspend.Site) && !h.Suspensions.Any(ctx, suspend.Tenant) {
		return "", time.Time{}, false // no site suspended: no lookup
	}
	site, err := h.Sites.SiteOf(ctx, DestinationOf(dom, d.Recipient))
	if err != nil || site == "" {
		return "", time.Time{}, false // the attempt meets the same failure and says so
	}
	until, _, ok := h.Suspensions.Suspended(ctx, site)
	if !ok {
		// An automation rule's SuspendTenant: the account at the site.
		sp, held := h.Suspensions.Holding(ctx, suspend.Tenant, strings.ToLower(fmt.Sprintf("%d@%s", dom.AccountID, site)))
		if !held {
			return "", time.Time{}, false
		}
		until = *cmp.Or(sp.Until, &time.Time{})
	}
	if until.IsZero() {
		until = now.Add(holdOpenSite)
	}
	return site, until, true
}

// DestinationOf is where a delivery of dom to recipient goes.
func DestinationOf(dom domain.Domain, recipient string) Destination {
	if dom.Delivery.Mode == domain.ModeSMTP {
		return Destination{RelayHost: strings.ToLower(strings.TrimSuffix(dom.Delivery.Host, "."))}
	}
	return Destination{Domain: strings.ToLower(recipient[strings.LastIndexByte(recipient, '@')+1:])}
}
