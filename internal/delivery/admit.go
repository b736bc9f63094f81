package delivery

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/postline/postline/internal/egress"
	"github.com/postline/postline/internal/shaping"
	"golang.org/x/time/rate"
)

// Ticket is a delivery Admit let start: its next hop resolved and its
// place under its egress path's limits taken. Hand it to SendTicket, or
// give it back with Release; either ends it. A Ticket belongs to one
// goroutine.
type Ticket struct {
	t          *Transport
	route      Route
	key        string   // the egress path
	site       string   // the site (direct) or the relay host
	domain     string   // the recipient's domain (direct)
	hosts      []string // the MX hosts by preference, or the relay host
	implicit   bool     // hosts is the domain itself (no MX records)
	dt         DirectTLS
	lim        pathLimits
	provLimits []shaping.ProviderLimit
	source     egress.Source  // the egress source (Name "" for none)
	picker     *picker        // the round robin that chose source, or nil
	pick       egress.Pick    // its choice, taken back if the delivery waits
	warmDay    time.Time      // the UTC day its warm-up cap counted it; zero: not counted
	rules      []shaping.Rule // the automation rules in force for the site

	p        *path
	g        *grant              // the connection admission took, or
	w        *waiter             // its place in the path's queue
	msgAt    time.Time           // the start booked for the message
	booked   []*rate.Reservation // message-rate bookings, given back unless used
	blocking bool                // Send's own: waits for its turn as long as its ctx allows
	ended    bool
	// spent: the delivery went out through its source (a connection was
	// dialled, or a transaction began on a reused one), so its warm-up
	// count stays spent whatever the outcome; otherwise SendTicket gives
	// it back.
	spent bool
}

// Admit asks, without waiting, whether a delivery to recipient over r may
// start now. It resolves the next hop (the recipient domain's MX hosts,
// which the resolver caches, or the relay), finds the egress path (the
// site through r.Source) and the shaping settings in force for it, and
// takes what the path's limits allow now: a connection (an idle one or a
// free slot) with a start for the message under max_message_rate (at most
// maxRateHold ahead), or a place in the path's queue (connection_limit
// places; a connection's worth while a provider of the site is full),
// whose start is booked when its connection comes.
//
// It returns a Ticket for SendTicket; or, with a nil Ticket, how long to
// wait before asking again: nothing was attempted, so it is not a failure,
// and deliveries turned away one after another are given later and later
// times, at the pace the path takes them, so they do not come back
// together; or an *Error when the delivery fails before any connection
// (DNS, an invalid route, a site backed off after
// consecutive_connection_failures_before_delay failed connections, a
// closed Transport), which is an attempt's outcome.
func (t *Transport) Admit(ctx context.Context, r Route, recipient string) (*Ticket, time.Duration, error) {
	tk, wait, e := t.admit(ctx, r, recipient, false)
	if e != nil {
		return nil, 0, e
	}
	return tk, wait, nil
}

// admit is Admit; blocking (Send, which waits for its turn) admits every
// delivery, however long it has to wait.
func (t *Transport) admit(ctx context.Context, r Route, rcpt string, blocking bool) (*Ticket, time.Duration, *Error) {
	if e := checkEnvelope(Envelope{To: rcpt}); e != nil {
		return nil, 0, e
	}
	tk, wait, e := t.prepare(ctx, r, rcpt)
	switch {
	case e != nil:
		return nil, 0, e
	case wait > 0 && blocking:
		return nil, 0, poolWait(r.Pool, wait)
	case wait > 0:
		return nil, wait, nil // no source of the pool has room today
	}
	tk.blocking = blocking
	got, wait, e := t.admitPath(ctx, tk)
	if got == nil {
		t.unchooseSource(tk) // not admitted: not sent through its source
	}
	return got, wait, e
}

// admitPath takes what tk's egress path allows now (see Admit).
func (t *Transport) admitPath(ctx context.Context, tk *Ticket) (*Ticket, time.Duration, *Error) {
	blocking, now := tk.blocking, time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, 0, t.fail(ctx, ErrClosed, StageConnect, "")
	}
	p := t.pathLocked(tk, now)
	tk.p = p
	if now.Before(p.delayed) {
		return nil, 0, &Error{Enhanced: "4.4.1", Temporary: true, Stage: StageConnect, Message: fmt.Sprintf(
			"no answer from any host of %s: %d connection attempts failed in a row; no new one before %s",
			p.name, p.failures, p.delayed.UTC().Format(time.RFC3339))}
	}
	at, booked, step := t.bookLocked(p, now)
	if !blocking && at.Sub(now) > maxRateHold {
		unbook(booked, now)
		return nil, p.waitLocked(now, at, step), nil
	}
	tk.msgAt, tk.booked = at, booked
	if len(p.queue) == 0 {
		if g, ok := t.takeLocked(p, now); ok {
			tk.g = &g
			return tk, 0, nil
		}
	}
	if blocking || len(p.queue) < p.lineLocked() {
		// Its start is booked when its connection comes (connection): a
		// start booked now passes unused while it waits in line, and the
		// rate's slots went to waiting deliveries instead of messages
		// (the simnet benchmark's outlook, 100 sites in line for 5
		// connections: half its rate).
		unbook(booked, now)
		tk.msgAt, tk.booked = time.Time{}, nil
		tk.w = &waiter{ch: make(chan grant, 1)}
		p.queue = append(p.queue, tk.w)
		return tk, 0, nil
	}
	unbook(booked, now)
	return nil, t.turnAwayLocked(p, now), nil
}

// prepare resolves r's next hop for rcpt, its egress source and the
// shaping that applies; or how long to wait when no source of r's pool
// has room today.
func (t *Transport) prepare(ctx context.Context, r Route, rcpt string) (*Ticket, time.Duration, *Error) {
	tk := &Ticket{t: t, route: r}
	var s shaping.Settings
	switch r.Mode {
	case ModeDirect:
		domain := strings.ToLower(rcpt[strings.LastIndexByte(rcpt, '@')+1:])
		if strings.HasPrefix(domain, "[") {
			return nil, 0, &Error{Enhanced: "5.1.2", Stage: StageDNS,
				Message: fmt.Sprintf("address literal %s is not supported for direct delivery", domain)}
		}
		if err := r.DirectTLS.Check(); err != nil {
			return nil, 0, configError("%s", strings.TrimPrefix(err.Error(), "delivery: "))
		}
		hosts, implicit, e := t.mxHosts(ctx, domain)
		if e != nil {
			return nil, 0, e
		}
		s = t.settings(domain, hosts, r.Source)
		tk.domain, tk.hosts, tk.implicit = domain, hosts, implicit
		tk.site = cmp.Or(s.Site, shaping.SiteName(hosts))
		tk.source = t.namedSource(r.Source)
		if r.Pool != "" {
			if wait, e := t.chooseSource(ctx, tk, r.Pool); e != nil || wait > 0 {
				return nil, wait, e
			}
			tk.route.Source = tk.source.Name
			s = t.settings(domain, hosts, tk.source.Name)
		}
		tk.key = "mx\x00" + tk.site + "\x00" + tk.source.Name
		s.Limits = t.overridden(ctx, tk.site, s.Limits)
		tk.dt = shapedTLS(r.DirectTLS, s.Limits)
	case ModeSMTP:
		rr, e := relayRoute(r)
		if e != nil {
			return nil, 0, e
		}
		s = t.settings(rr.Host, []string{rr.Host}, r.Source)
		tk.route, tk.site, tk.hosts = rr, rr.Host, []string{rr.Host}
		tk.key = relayKey(rr) + "\x00" + r.Source
		s.Limits = t.overridden(ctx, tk.site, s.Limits)
	default:
		return nil, 0, configError("unknown route mode %q", r.Mode)
	}
	tk.lim, tk.provLimits, tk.rules = t.limitsOf(s.Limits, r.Mode == ModeSMTP), s.ProviderLimits, s.Automation
	return tk, 0, nil
}

// settings are the shaping settings in force for domain at hosts through
// source; none without rules.
func (t *Transport) settings(domain string, hosts []string, source string) shaping.Settings {
	if t.cfg.Shaping == nil {
		return shaping.Settings{}
	}
	rules := t.cfg.Shaping()
	if rules == nil {
		return shaping.Settings{}
	}
	return rules.For(domain, hosts, source)
}

// bookLocked books the message's start under the path's and its
// providers' max_message_rate: the time it may start, the bookings, and
// the pace of the strictest rate (0 without one).
func (t *Transport) bookLocked(p *path, now time.Time) (time.Time, []*rate.Reservation, time.Duration) {
	at, step := now, time.Duration(0)
	var booked []*rate.Reservation
	book := func(l *rate.Limiter) {
		if l == nil {
			return
		}
		r := l.ReserveN(now, 1)
		booked = append(booked, r)
		if a := now.Add(r.DelayFrom(now)); a.After(at) {
			at = a
		}
		step = max(step, interval(l))
	}
	book(p.msgLim)
	for _, pr := range p.provs {
		book(pr.msgLim)
	}
	return at, booked, step
}

// unbook gives bookings back.
func unbook(booked []*rate.Reservation, now time.Time) {
	for _, r := range booked {
		r.CancelAt(now)
	}
}

// interval is the time between events at l's rate.
func interval(l *rate.Limiter) time.Duration {
	return time.Duration(float64(time.Second) / float64(l.Limit()))
}

// waitLocked is how long a delivery turned away from p waits: until
// earliest, and after the deliveries turned away before it, each step
// after the one before, so they come back one by one at the pace the path
// takes them; between minWait and maxWait.
func (p *path) waitLocked(now, earliest time.Time, step time.Duration) time.Duration {
	at := later(earliest, later(p.cursor, now.Add(minWait)))
	p.cursor = at.Add(step)
	return min(at.Sub(now), maxWait)
}

// connStep is the time between two deliveries of p starting: how long
// a delivery holds a connection over how many there are, or the message
// rate's interval when that is longer.
func (p *path) connStep() time.Duration {
	step := cmp.Or(p.hold, defaultHold) / time.Duration(max(1, p.lim.conns))
	if p.msgLim != nil {
		step = max(step, interval(p.msgLim))
	}
	return step
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Release gives back an admitted delivery that will not be sent now (its
// message could not be built, its worker is stopping): its connection
// goes back to the path and its message-rate booking is undone. It does
// nothing for a Ticket already ended.
func (tk *Ticket) Release() {
	if tk == nil || tk.ended {
		return
	}
	tk.ended = true
	t, now := tk.t, time.Now()
	t.mu.Lock()
	unbook(tk.booked, now)
	tk.booked = nil
	g := tk.g
	if tk.w != nil && !tk.p.leaveLocked(tk.w) {
		got := <-tk.w.ch // dispatched already
		g = &got
	}
	t.mu.Unlock()
	t.unchooseSource(tk)
	if g != nil {
		t.giveBack(tk.p, *g)
	}
}

// Waits reports whether tk's message cannot start at once: it has a place
// in its path's queue instead of a connection, or a start booked under
// max_message_rate that is still ahead. SendTicket then waits for its turn
// before it builds a session or sends anything; admission bounds how many
// deliveries wait so (places in a path's queue: path.lineLocked; starts
// booked at most maxRateHold ahead), so a caller may let other work run
// meanwhile.
func (tk *Ticket) Waits() bool {
	return tk != nil && !tk.ended && (tk.w != nil || time.Until(tk.msgAt) > 0)
}

// giveBack returns an unused grant: its session to the pool, its slot to
// the path.
func (t *Transport) giveBack(p *path, g grant) {
	if g.s != nil {
		t.park(p, g.s)
		return
	}
	t.release(p, g.provs)
}

// connection waits for tk's connection: the one admission took, or the
// one its place in the queue is given, for waitPatience at most (a
// blocking ticket: as long as ctx allows). Turned away, it says how long
// to wait (Error.Wait), and nothing was attempted.
func (t *Transport) connection(ctx context.Context, tk *Ticket) (grant, *Error) {
	if tk.g != nil {
		return *tk.g, nil
	}
	var patience <-chan time.Time
	if !tk.blocking {
		timer := time.NewTimer(waitPatience)
		defer timer.Stop()
		patience = timer.C
	}
	var e *Error
	select {
	case g := <-tk.w.ch:
		t.mu.Lock()
		t.bookTurnLocked(tk)
		t.mu.Unlock()
		return g, nil
	case <-ctx.Done():
		e = t.fail(ctx, ctx.Err(), StageConnect, "")
	case <-t.closing:
		e = t.fail(ctx, ErrClosed, StageConnect, "")
	case <-patience:
	}
	now := time.Now()
	t.mu.Lock()
	if !tk.p.leaveLocked(tk.w) {
		t.mu.Unlock()
		g := <-tk.w.ch // given just now
		if e == nil {
			t.mu.Lock()
			t.bookTurnLocked(tk)
			t.mu.Unlock()
			return g, nil
		}
		t.giveBack(tk.p, g)
		t.unbook(tk)
		return grant{}, e
	}
	if e == nil {
		e = &Error{Enhanced: "4.4.5", Temporary: true, Stage: StageConnect, Wait: t.turnAwayLocked(tk.p, now),
			Message: fmt.Sprintf("no connection to %s was free in time; not attempted", tk.site)}
	}
	unbook(tk.booked, now)
	tk.booked = nil
	t.mu.Unlock()
	return grant{}, e
}

// bookTurnLocked books the start of a message whose connection came
// after a wait in its path's queue: the first free slots of the path's
// and its providers' max_message_rate, which the gate waits for on the
// connection.
func (t *Transport) bookTurnLocked(tk *Ticket) {
	tk.msgAt, tk.booked, _ = t.bookLocked(tk.p, time.Now())
}

// unbook gives tk's message-rate bookings back.
func (t *Transport) unbook(tk *Ticket) {
	t.mu.Lock()
	defer t.mu.Unlock()
	unbook(tk.booked, time.Now())
	tk.booked = nil
}

// gate waits until tk's message may start: its booked time, and one
// rate interval after the path's (and each provider's) previous message
// when the rate allows no burst, so that messages whose connections came
// in another order than their bookings still never go closer together
// than the rate.
func (t *Transport) gate(ctx context.Context, tk *Ticket) *Error {
	t.mu.Lock()
	at := tk.msgAt
	spaced := func(l *rate.Limiter, last time.Time) {
		if l != nil && l.Burst() == 1 {
			at = later(at, last.Add(interval(l)))
		}
	}
	spaced(tk.p.msgLim, tk.p.lastMsg)
	for _, pr := range tk.p.provs {
		spaced(pr.msgLim, pr.lastMsg)
	}
	if tk.p.msgLim != nil {
		tk.p.lastMsg = at
	}
	for _, pr := range tk.p.provs {
		if pr.msgLim != nil {
			pr.lastMsg = at
		}
	}
	tk.booked = nil // spent
	t.mu.Unlock()
	if e := t.sleepUntil(ctx, at); e != nil {
		return e
	}
	if f, ok := ctx.Value(turnKey{}).(func(context.Context) error); ok {
		if err := f(ctx); err != nil {
			return t.fail(ctx, err, StageConnect, "")
		}
	}
	return nil
}

type turnKey struct{}

// WithTurn makes SendTicket call turn once the message's turn has come
// (its connection and its booked start), right before it is sent: a
// caller that let other work run while the ticket waited (Waits) takes
// its share back there. An error from turn ends the delivery unsent, as
// an ended ctx does.
func WithTurn(ctx context.Context, turn func(context.Context) error) context.Context {
	return context.WithValue(ctx, turnKey{}, turn)
}

// sleepUntil waits until at, or fails when ctx ends first.
func (t *Transport) sleepUntil(ctx context.Context, at time.Time) *Error {
	d := time.Until(at)
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return t.fail(ctx, ctx.Err(), StageConnect, "")
	}
}

// noteHold folds how long a delivery held a connection of p into the
// mean that paces the deliveries turned away.
func (t *Transport) noteHold(p *path, d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p.hold == 0 {
		p.hold = d
		return
	}
	p.hold += (d - p.hold) / 8
}

// connected notes a connection opened on p: its failures in a row end.
func (t *Transport) connected(p *path) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p.failures, p.delayed = 0, time.Time{}
}

// connFailed notes a delivery that could open no connection to any host
// of p; after lim.failures in a row, p dials nothing for FailureDelay
// (KumoMTA's consecutive_connection_failures_before_delay).
func (t *Transport) connFailed(p *path) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p.failures++
	if p.failures >= p.lim.failures {
		p.delayed = time.Now().Add(t.cfg.FailureDelay)
		t.cfg.Logger.Warn("delivery: no connection to a site; delaying its deliveries", "site", p.name,
			"failures", p.failures, "until", p.delayed)
	}
}

// SiteOf names the site direct delivery to domain goes to, as admission
// does (the shaping rules' site, honouring mx_rollup, else the MX hosts'
// set), so that what an operator suspends by site is what delivery
// shapes by; "" for a domain that takes no mail (null MX).
func (t *Transport) SiteOf(ctx context.Context, domain string) (string, error) {
	domain = strings.ToLower(domain)
	hosts, _, e := t.mxHosts(ctx, domain)
	switch {
	case e != nil && e.Enhanced == "5.1.10":
		return "", nil
	case e != nil:
		return "", e
	}
	return cmp.Or(t.settings(domain, hosts, "").Site, shaping.SiteName(hosts)), nil
}
