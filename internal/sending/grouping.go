package sending

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/postline/postline/internal/delivery"
	"github.com/postline/postline/internal/domain"
)

// GroupTransport is a Transport that can send one message to several
// recipients in one SMTP transaction (delivery.Transport.SendTicketAll).
// A Worker whose transport is one groups the deliveries of a message that
// is the same for every recipient (sharedCopyBlocker).
type GroupTransport interface {
	Transport
	SendTicketAll(ctx context.Context, tk *delivery.Ticket, from string, to []string, msg []byte) []delivery.Outcome
}

// Siblings selects the deliveries that may share a transaction with one
// claimed: those of the same send and Message-ID, at Domain (lowercase)
// unless it is "" (a relay takes every domain).
type Siblings struct {
	SendID    int64
	MessageID string
	Domain    string
}

// Reasons sharedCopyBlocker gives.
const (
	blockVERP     = "verp"     // a bounce address per delivery: its own MAIL FROM
	blockTracking = "tracking" // open, click or unsubscribe tokens name the delivery
	blockTo       = "to"       // a built message's To is the recipient's own address
)

// sharedCopyBlocker says why the copies of snd at dom may differ from one
// recipient to the next, or "" when every recipient gets the same bytes
// under the same envelope sender, so that one signed message and one
// transaction can carry them all. It decides from what compose and
// envelopeFrom read besides the send: the delivery's id (VERP, tracking
// tokens), its recipient (the To field of a built message) and its
// Message-ID, which the caller compares instead (Siblings: only copies
// with one Message-ID group; a raw message has one for every copy, a built
// one only with OneMessageID). Per-recipient variables (a batch: each
// recipient rendered on its own) make a send per recipient at intake, so
// they never meet here. tracking and verp say whether the worker tracks
// at all and has a VERP key.
func sharedCopyBlocker(snd Send, dom domain.Domain, tracking, verp bool) string {
	if verp && (dom.AuthDomain != "" || snd.Headers[forwardHeader] != "") {
		return blockVERP
	}
	if tracking {
		opens, clicks := rawTracking(snd, dom)
		if opens || clicks || dom.Tracking.Unsubscribe {
			return blockTracking
		}
	}
	if len(snd.Raw) == 0 && len(snd.Addressing.Cc) == 0 {
		// Without Cc each copy's To is its own recipient (message.Params).
		return blockTo
	}
	return ""
}

// siblingsOf says which deliveries may share c's transaction, false when
// none may (c's send differs per recipient, or is not known yet).
func (w *Worker) siblingsOf(ctx context.Context, c claimed) (Siblings, bool) {
	// A send prefetch could not keep in the cache (large attachments past
	// its byte budget) goes alone: loading it here would stall the claim
	// loop, which serves every tenant, on one tenant's attachments.
	if w.group == nil || !c.pre.loaded || c.d.SendID == 0 || !w.sends.has(c.d.SendID) {
		return Siblings{}, false
	}
	snd, _, err := w.sends.get(ctx, c.d.SendID)
	if err != nil || snd.Pruned || sharedCopyBlocker(snd, c.pre.dom, w.cfg.Tracking != nil, len(w.cfg.VERPKey) > 0) != "" {
		return Siblings{}, false
	}
	f := Siblings{SendID: c.d.SendID, MessageID: c.d.MessageID}
	if c.pre.dom.Delivery.Mode != domain.ModeSMTP {
		// Direct delivery: the domain's site. A relay is one site for all.
		f.Domain = strings.ToLower(c.d.Recipient[strings.LastIndexByte(c.d.Recipient, '@')+1:])
	}
	return f, true
}

// groupClaimed joins the claimed deliveries that may share a transaction
// (each unit's first carries the others in more), up to the recipient
// limit last seen for their site, and tops units up with their due
// siblings that the claim did not take. It runs in the claim loop, one
// claim after another, so that a message to many recipients is claimed in
// full units rather than spread over the units of concurrent claims.
//
// Only units whose message has a recipient after the unit's last one
// (Delivery.Later of the member with the highest id) are topped up: a
// message to one recipient, the usual submission, costs no query of its
// own (a top-up per unit cost 15% of the deliveries per second on
// PostgreSQL, and one after every full claim 4-5% of the CPU end to end),
// and a message's recipients given back or retried one by one are joined
// again whenever one of them is claimed, however the claims cut them.
func (w *Worker) groupClaimed(ctx, attemptCtx context.Context, cs []claimed) []claimed {
	if w.group == nil {
		return cs
	}
	var out []claimed
	unitOf := map[Siblings]int{}
	var keys []Siblings // of out's units, "" SendID for a lone delivery
	for _, c := range cs {
		f, ok := w.siblingsOf(attemptCtx, c)
		if !ok {
			out, keys = append(out, c), append(keys, Siblings{})
			continue
		}
		if i, found := unitOf[f]; found && 1+len(out[i].more) < w.limits.get(f) {
			out[i].more = append(out[i].more, c)
			continue
		}
		unitOf[f] = len(out)
		out, keys = append(out, c), append(keys, f)
	}
	for i, f := range keys {
		if !laterThan(out[i]) {
			continue
		}
		if n := w.limits.get(f) - 1 - len(out[i].more); f.SendID != 0 && n > 0 {
			out[i].more = append(out[i].more, w.claimSiblings(ctx, attemptCtx, out[i], f, n)...)
		}
	}
	return out
}

// laterThan reports whether c's message has a delivery after every member
// of c's unit: its member with the highest id has Later.
func laterThan(c claimed) bool {
	top := c.d
	for _, m := range c.more {
		if m.d.ID > top.ID {
			top = m.d
		}
	}
	return top.Later
}

// claimSiblings claims up to n more deliveries for c's unit, with their
// suppression verdicts; none when the store fails (the unit goes as it is).
func (w *Worker) claimSiblings(ctx, attemptCtx context.Context, c claimed, f Siblings, n int) []claimed {
	now := w.cfg.Now()
	ds, err := w.store.ClaimSiblings(ctx, w.owner, now, now.Add(w.cfg.Lease), f, n)
	if err != nil {
		if ctx.Err() == nil {
			w.cfg.Logger.Warn("claiming the other recipients of a message", "send", f.SendID, "error", err)
		}
		return nil
	}
	out := make([]claimed, len(ds))
	to := make([]string, len(ds))
	for i, d := range ds {
		out[i] = claimed{d: d, pre: prefetched{dom: c.pre.dom, loaded: true}, at: c.at}
		to[i] = d.Recipient
	}
	if len(ds) > 0 {
		if vs, err := w.supp.CheckMany(attemptCtx, c.d.DomainID, to); err == nil {
			for i := range out {
				out[i].pre.verdict, out[i].pre.checked = vs[out[i].d.Recipient], true
			}
		}
	}
	return out
}

// all is c's unit: c itself, then the deliveries sharing its transaction.
func (c claimed) all() []claimed {
	one := c
	one.more = nil
	return append([]claimed{one}, c.more...)
}

// rcptLimits remembers max_recipients_per_transaction as the transport
// last said it for a site (delivery.Ticket.MaxRecipients), for claims
// that group before any ticket is asked for: the shaping's default until
// then. A unit found larger at its admission gives its excess back.
type rcptLimits struct {
	mu sync.Mutex
	m  map[Siblings]rcptLimit
}

type rcptLimit struct {
	n  int
	at time.Time
}

// rcptLimitLife is how long a learned limit is trusted: a reloaded
// shaping file applies to claims after it.
const rcptLimitLife = time.Minute

func (l *rcptLimits) get(f Siblings) int {
	k := Siblings{Domain: f.Domain}
	l.mu.Lock()
	defer l.mu.Unlock()
	if v, ok := l.m[k]; ok && time.Since(v.at) < rcptLimitLife {
		return v.n
	}
	return delivery.DefaultRecipientsPerTransaction
}

func (l *rcptLimits) set(f Siblings, n int) {
	k := Siblings{Domain: f.Domain}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil || len(l.m) >= 4096 { // a bound, not an LRU
		l.m = map[Siblings]rcptLimit{}
	}
	l.m[k] = rcptLimit{n: n, at: time.Now()}
}
