package app

import (
	"context"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/delivery"
	"github.com/postline/postline/internal/dnsclient"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/sending"
	"github.com/postline/postline/internal/shaping"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/suspend"
)

// openQueueControl builds the operator's queue control (suspensions,
// retry and bounce by selector) and makes the worker honour suspensions.
// It comes after openSending: it wakes the worker.
func (a *App) openQueueControl() {
	a.Suspensions = suspend.New(store.NewSuspensions(a.DB), suspend.Config{Now: a.opts.Now, Check: a.suspendTarget})
	sites := siteNames{r: a.Resolver, transport: a.transport.Load}
	q := store.NewQueue(a.DB)
	a.Queue = sending.NewQueue(q, a.opts.Now).WithControl(sending.ControlConfig{Store: q, Suspensions: a.Suspensions,
		Sites: sites, Events: a.Events, Wake: a.Worker.Wake})
	a.Worker.UseHolds(&sending.Holds{Suspensions: a.Suspensions, Sites: sites, Store: q})
	a.openAutomation()
}

// suspendTarget checks that a suspension's domain or account exists and
// returns its name as stored.
func (a *App) suspendTarget(ctx context.Context, kind suspend.Kind, value string) (string, error) {
	switch kind {
	case suspend.Domain:
		n, err := domain.NormalizeName(value)
		if err != nil {
			return "", apperr.Field("domain", err.Error())
		}
		// A name several accounts claim exists (Conflict): the suspension
		// holds every claim's deliveries.
		if _, err := a.Domains.Get(ctx, n); err != nil && apperr.CodeOf(err) != apperr.Conflict {
			return "", err
		}
		return n, nil
	case suspend.Account:
		if err := account.CheckLogin(value); err != nil {
			return "", apperr.Errorf(apperr.NotFound, "account %q not found", value)
		}
		u, err := a.Accounts.User(ctx, value)
		return u.Login, err
	}
	return value, nil
}

// siteNames names destinations' sites as shaping does: a relay by its
// host, a recipient domain as delivery's admission does once sending is
// open (the shaping rules' site, honouring mx_rollup = false), else by
// its MX hosts (itself for an implicit MX), through the app's resolver and
// its cache, which delivery shares.
type siteNames struct {
	r         *dnsclient.Resolver
	transport func() *delivery.Transport
}

// ShapingOf implements sending.SiteShaper: what delivery enforces on the
// destination's site (the shaping rules loaded: serve's, or those a
// command loaded with LoadShaping; delivery's defaults without).
func (s siteNames) ShapingOf(ctx context.Context, dest sending.Destination) (delivery.SiteShaping, error) {
	t := s.transport()
	switch {
	case t == nil:
		return delivery.SiteShaping{}, apperr.Errorf(apperr.Unavailable, "delivery is not open")
	case dest.RelayHost != "":
		return t.RelayShaping(ctx, dest.RelayHost), nil
	}
	return t.DirectShaping(ctx, dest.Domain)
}

// SiteOf implements sending.SiteResolver; a null MX has no site ("").
func (s siteNames) SiteOf(ctx context.Context, dest sending.Destination) (string, error) {
	if dest.RelayHost != "" {
		return dest.RelayHost, nil
	}
	if t := s.transport(); t != nil {
		return t.SiteOf(ctx, dest.Domain)
	}
	mxs, err := s.r.LookupMX(ctx, dest.Domain)
	switch {
	case dnsclient.IsNoData(err):
		return shaping.SiteName([]string{dest.Domain}), nil
	case err != nil:
		return "", err
	case dnsclient.IsNullMX(mxs):
		return "", nil
	}
	hosts := make([]string, len(mxs))
	for i, mx := range mxs {
		hosts[i] = mx.Host
	}
	return shaping.SiteName(hosts), nil
}
