package sending

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/delivery"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/suspend"
)

// ControlConfig is what the operator's queue control needs besides the
// counts: the store's selections, the suspensions, and who to wake.
type ControlConfig struct {
	Store       ControlStore
	Suspensions *suspend.Service
	// Sites names destinations' sites for the listing by site and the
	// site selector; nil names each destination by its recipient domain
	// or relay host.
	Sites SiteResolver
	// Events is woken for the domains whose deliveries a bounce failed
	// (live tails); nil wakes nothing.
	Events *event.Service
	// Wake makes this process's worker look for due deliveries at once
	// (after a retry or a resume); nil: it finds them at its next poll.
	Wake func()
}

// WithControl turns on queue control (suspend, resume, retry and bounce
// by selector, the listing by group) and returns q.
func (q *Queue) WithControl(c ControlConfig) *Queue {
	q.ctl = &c
	return q
}

// Group is the waiting deliveries of one site, sending domain or account.
type Group struct {
	Name                       string
	Pending, Deferred, Sending int
	// Held is how many of the pending and deferred ones were put back
	// because a site suspension holds them.
	Held int
	// Suspension is the suspension in force on the group, nil when none.
	Suspension *suspend.Suspension
	// Shaping is what delivery enforces on a site (by site only, when the
	// ControlConfig's Sites is a SiteShaper); nil otherwise.
	Shaping *delivery.SiteShaping
}

// Waiting is the group's deliveries not yet finished.
func (g Group) Waiting() int { return g.Pending + g.Deferred + g.Sending }

// Groups lists the waiting deliveries by site, sending domain or account
// (by), the largest group first. Sites are named by looking up each
// recipient domain's MX hosts (at most siteLookups domains; the others,
// and those whose lookup fails, are named by the recipient domain).
func (q *Queue) Groups(ctx context.Context, by suspend.Kind) ([]Group, error) {
	if !slices.Contains(suspend.Kinds, by) {
		return nil, apperr.Field("by", "want site, domain or account")
	}
	counts, err := q.ctl.Store.QueueGroups(ctx, by)
	if err != nil {
		return nil, err
	}
	first := map[string]Destination{} // by site: each site's first destination
	if by == suspend.Site {
		sites := q.siteNames(ctx, counts)
		for i := range counts {
			counts[i].Name = sites[counts[i].Dest]
			if _, ok := first[counts[i].Name]; !ok {
				first[counts[i].Name] = counts[i].Dest
			}
		}
	}
	held, err := q.ctl.Suspensions.List(ctx)
	if err != nil {
		return nil, err
	}
	byName := map[string]*Group{}
	var out []*Group
	for _, c := range counts {
		g := byName[c.Name]
		if g == nil {
			g = &Group{Name: c.Name}
			for _, sp := range held {
				if sp.Kind == by && sp.Value == c.Name {
					g.Suspension = &sp
				}
			}
			byName[c.Name] = g
			out = append(out, g)
		}
		g.Held += c.Held
		switch c.State {
		case StatePending:
			g.Pending += c.N
		case StateDeferred:
			g.Deferred += c.N
		case StateSending:
			g.Sending += c.N
		}
	}
	slices.SortStableFunc(out, func(a, b *Group) int { return cmp.Or(b.Waiting()-a.Waiting(), strings.Compare(a.Name, b.Name)) })
	if by == suspend.Site {
		q.siteShaping(ctx, out, first)
	}
	groups := make([]Group, len(out))
	for i, g := range out {
		groups[i] = *g
	}
	return groups, nil
}

// Lookups of sites: how many destinations one listing names by their MX
// hosts, how many at once, and how long each may take.
const (
	siteLookups     = 1000
	siteConcurrency = 8
	siteTimeout     = 3 * time.Second
)

// siteNames names the sites of the counts' destinations.
func (q *Queue) siteNames(ctx context.Context, counts []GroupCount) map[Destination]string {
	names := map[Destination]string{}
	var dests []Destination
	for _, c := range counts {
		if _, ok := names[c.Dest]; !ok {
			names[c.Dest] = cmp.Or(c.Dest.RelayHost, c.Dest.Domain)
			dests = append(dests, c.Dest)
		}
	}
	if q.ctl.Sites == nil {
		return names
	}
	dests = dests[:min(len(dests), siteLookups)]
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, siteConcurrency)
	for _, d := range dests {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			lctx, cancel := context.WithTimeout(ctx, siteTimeout)
			defer cancel()
			if site, err := q.ctl.Sites.SiteOf(lctx, d); err == nil && site != "" {
				mu.Lock()
				names[d] = site
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return names
}

// SiteShaper is a SiteResolver that also says what delivery enforces on
// a destination's site: the listing by site shows it.
type SiteShaper interface {
	ShapingOf(ctx context.Context, dest Destination) (delivery.SiteShaping, error)
}

// siteShaping fills in the groups' Shaping from each site's first
// destination (at most siteLookups of them; their MX hosts were just
// looked up, so the lookups hit the resolver's cache).
func (q *Queue) siteShaping(ctx context.Context, groups []*Group, first map[string]Destination) {
	shaper, ok := q.ctl.Sites.(SiteShaper)
	if !ok {
		return
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, siteConcurrency)
	for _, g := range groups[:min(len(groups), siteLookups)] {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			lctx, cancel := context.WithTimeout(ctx, siteTimeout)
			defer cancel()
			if s, err := shaper.ShapingOf(lctx, first[g.Name]); err == nil && s.Site != "" {
				g.Shaping = &s // each goroutine writes its own group
			}
		}()
	}
	wg.Wait()
}

// selectionBatch bounds the destinations one statement names.
const selectionBatch = 500

// selections turns a selector into what the store applies, in batches: a
// domain or an account that does not exist is NotFound; a site becomes
// the destinations of waiting deliveries named so, and the deliveries
// held for it.
func (q *Queue) selections(ctx context.Context, sel Selector) ([]Selection, error) {
	if sel.Kind == "" {
		return []Selection{{}}, nil
	}
	v, err := q.ctl.Suspensions.Canonical(ctx, sel.Kind, sel.Value)
	if err != nil {
		return nil, err
	}
	switch sel.Kind {
	case suspend.Domain:
		return []Selection{{Domain: v}}, nil
	case suspend.Account:
		return []Selection{{Account: v}}, nil
	}
	counts, err := q.ctl.Store.QueueGroups(ctx, suspend.Site)
	if err != nil {
		return nil, err
	}
	var relays, domains []string
	for d, name := range q.siteNames(ctx, counts) {
		switch {
		case name != v:
		case d.RelayHost != "":
			relays = append(relays, d.RelayHost)
		default:
			domains = append(domains, d.Domain)
		}
	}
	slices.Sort(relays)
	slices.Sort(domains)
	out := []Selection{{Site: v}}
	for len(relays) > 0 || len(domains) > 0 {
		s := Selection{Site: v}
		n := min(len(relays), selectionBatch)
		s.RelayHosts, relays = relays[:n], relays[n:]
		n = min(len(domains), selectionBatch-len(s.RelayHosts))
		s.RcptDomains, domains = domains[:n], domains[n:]
		out = append(out, s)
	}
	return out, nil
}

// Retry makes the selected deferred deliveries due now and returns how
// many; their attempt counts and maximum age are unchanged. A delivery
// held by a suspension stays held.
func (q *Queue) Retry(ctx context.Context, sel Selector) (int64, error) {
	sels, err := q.selections(ctx, sel)
	if err != nil {
		return 0, err
	}
	var total int64
	now := q.now()
	for _, s := range sels {
		n, err := q.ctl.Store.RetrySelected(ctx, s, now)
		if err != nil {
			return total, err
		}
		total += n
	}
	q.wake()
	return total, nil
}

// bounceBatch is how many deliveries one transaction of Bounce fails.
const bounceBatch = 500

// Bounce fails the selected deliveries that wait (pending or deferred,
// held or not; never one being attempted) with the operator's reason:
// each is logged `failed` with details.reason the reason. It returns how
// many. A selector and a reason are required.
func (q *Queue) Bounce(ctx context.Context, sel Selector, reason string) (int64, error) {
	if sel.Kind == "" {
		return 0, apperr.Field("selector", "name a site, a domain or an account")
	}
	reason, err := suspend.CheckReason(reason)
	if err != nil {
		return 0, err
	}
	if reason == "" {
		return 0, apperr.Field("reason", "required: it is logged with every delivery failed")
	}
	sels, err := q.selections(ctx, sel)
	if err != nil {
		return 0, err
	}
	now := q.now().UTC().Truncate(time.Millisecond)
	entries := func(ds []Delivery) []event.Entry {
		out := make([]event.Entry, len(ds))
		for i, d := range ds {
			out[i] = event.Entry{DomainID: d.DomainID, MessageID: d.MessageID, Type: event.Failed, Sender: d.Sender,
				Recipient: d.Recipient, Subject: d.Subject, Tags: d.Tags, CreatedAt: now,
				Details: event.NewDetails(event.WithUserVariables(map[string]any{"reason": reason, "attempts": d.Attempts,
					"bounced_by": "operator"}, d.UserVars))}
		}
		return out
	}
	var total int64
	woken := map[int64]bool{}
	for _, s := range sels {
		for {
			ds, err := q.ctl.Store.FailSelected(ctx, s, "bounced by the operator: "+reason, now, bounceBatch, entries)
			total += int64(len(ds))
			for _, d := range ds {
				if !woken[d.DomainID] && q.ctl.Events != nil {
					woken[d.DomainID] = true
					q.ctl.Events.Wake(d.DomainID)
				}
			}
			if err != nil {
				return total, err
			}
			if len(ds) < bounceBatch {
				break
			}
		}
	}
	return total, nil
}

// Suspend holds what r names (see package suspend). Suspending a site
// again makes the deliveries held for it due, so they are held again
// under the new end.
func (q *Queue) Suspend(ctx context.Context, r suspend.Request) (suspend.Suspension, error) {
	sp, err := q.ctl.Suspensions.Suspend(ctx, r)
	if err == nil && sp.Kind == suspend.Site {
		_, err = q.ctl.Store.WakeHeldSite(ctx, sp.Value, q.now())
	}
	return sp, err
}

// Resume ends the suspension with that id; NotFound when none is in force.
func (q *Queue) Resume(ctx context.Context, id int64) (suspend.Suspension, error) {
	sp, err := q.ctl.Suspensions.Resume(ctx, id)
	return q.released(ctx, sp, err)
}

// ResumeOf ends the suspension of the selector; NotFound when none is in
// force.
func (q *Queue) ResumeOf(ctx context.Context, sel Selector) (suspend.Suspension, error) {
	sp, err := q.ctl.Suspensions.ResumeOf(ctx, sel.Kind, sel.Value)
	return q.released(ctx, sp, err)
}

// released makes what a suspension held due at once: a site's held
// deliveries are marked; a domain's or an account's the next claim takes.
func (q *Queue) released(ctx context.Context, sp suspend.Suspension, err error) (suspend.Suspension, error) {
	if err != nil {
		return sp, err
	}
	if sp.Kind == suspend.Site {
		// The suspension is gone: its deliveries must not wait for their
		// next look (a minute) because the caller went away.
		if _, err := q.ctl.Store.WakeHeldSite(context.WithoutCancel(ctx), sp.Value, q.now()); err != nil {
			return sp, err
		}
	}
	q.wake()
	return sp, nil
}

// Suspensions lists the suspensions in force.
func (q *Queue) Suspensions(ctx context.Context) ([]suspend.Suspension, error) {
	return q.ctl.Suspensions.List(ctx)
}

func (q *Queue) wake() {
	if q.ctl.Wake != nil {
		q.ctl.Wake()
	}
}
