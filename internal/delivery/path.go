package delivery

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"github.com/postline/postline/internal/shaping"
	"golang.org/x/time/rate"
)

// path is one egress path: the connections from one source to one site
// (or to one relay) and the limits they share. A path outlives its
// connections (pathIdleLife), so that its rates and its count of failed
// connections do not start over whenever its pool empties. Guarded by
// Transport.mu.
type path struct {
	key     string
	name    string // the site, or the relay host
	lim     pathLimits
	connLim *rate.Limiter // max_connection_rate; nil: none
	msgLim  *rate.Limiter // max_message_rate; nil: none
	provs   []*provider   // the provider limits in force for it

	idle  []*session // most recently used last
	open  int        // connections busy, idle or being dialled: at most lim.conns
	queue []*waiter  // admitted deliveries waiting for a connection, first come first served

	lastMsg  time.Time     // when the last message was let start (spacing)
	cursor   time.Time     // when the next delivery turned away is told to come back
	hold     time.Duration // moving mean of how long a delivery holds a connection
	failures int           // connection attempts failed in a row
	delayed  time.Time     // no dials before then (after lim.failures failures)
	used     time.Time     // last admission or release
	retry    *time.Timer   // dispatches the queue when max_connection_rate allows a dial
}

// provider is the limits every site of one provider shares
// (provider_connection_limit, provider_max_message_rate): this process's
// share of them when several deliver from one database (Config.Shares),
// else the whole. Guarded by Transport.mu.
type provider struct {
	name    string
	limited bool // limit applies (it may be 0: no share)
	limit   int
	open    int
	closing int // idle connections being closed for a path that waits, or to fit a smaller share
	msgLim  *rate.Limiter
	rate    shaping.Rate // the rate msgLim is tuned to: this process's share
	lastMsg time.Time
	cursor  time.Time          // when the next delivery it turns away is told to come back
	blocked map[*path]struct{} // paths that found it full
	used    time.Time
	pl      shaping.ProviderLimit // the limits last asked for, whole
}

// grant is a connection handed to a delivery: an open session, or a slot
// to dial into (s nil) no sooner than dialAt. provs are the providers
// whose limits the connection counts against.
type grant struct {
	s      *session
	provs  []*provider
	dialAt time.Time
}

// waiter is an admitted delivery's place in its path's queue.
type waiter struct {
	ch chan grant // buffered, so dispatching never blocks
}

// pathLocked returns the path of tk, made or retuned to tk's limits.
func (t *Transport) pathLocked(tk *Ticket, now time.Time) *path {
	p := t.paths[tk.key]
	if p == nil {
		t.pruneLocked(now)
		p = &path{key: tk.key, name: tk.site}
		t.paths[tk.key] = p
	}
	p.used = now
	old := p.lim
	p.lim = tk.lim
	if p.lim.connRate != old.connRate || p.connLim == nil && p.lim.connRate.IsSet() {
		p.connLim = retune(p.connLim, p.lim.connRate, now)
	}
	if p.lim.msgRate != old.msgRate || p.msgLim == nil && p.lim.msgRate.IsSet() {
		p.msgLim = retune(p.msgLim, p.lim.msgRate, now)
		p.cursor = time.Time{} // the schedule of the old rate is void
	}
	p.provs = p.provs[:0]
	for _, pl := range tk.provLimits {
		p.provs = append(p.provs, t.providerLocked(pl, now))
	}
	if p.lim.conns > old.conns {
		t.dispatchLocked(p, now)
	} else if p.lim.conns < old.conns {
		t.shedIdleLocked(p)
	}
	return p
}

// providerLocked returns the provider of pl, tuned to its limits (this
// process's share of them).
func (t *Transport) providerLocked(pl shaping.ProviderLimit, now time.Time) *provider {
	pr := t.provs[pl.Provider]
	if pr == nil {
		pr = &provider{name: pl.Provider, blocked: map[*path]struct{}{}}
		t.provs[pl.Provider] = pr
	}
	pr.used = now
	pr.pl = pl
	t.tuneLocked(pr, now)
	return pr
}

// tuneLocked sets pr to this process's share of its limits now. Shares
// change when a process joins or leaves, whether or not this one admits
// anything: tuned only at admission, a process whose deliveries all
// waited in line kept the whole limit after another joined and took its
// share (4 connections under provider_connection_limit 3).
func (t *Transport) tuneLocked(pr *provider, now time.Time) {
	pl := pr.pl
	limited, limit, r := shareOf(t.cfg.Shares, pl)
	if r != pr.rate || pr.msgLim == nil && r.IsSet() {
		pr.msgLim, pr.rate = retune(pr.msgLim, r, now), r
	}
	pr.limited, pr.limit = limited, limit
	if excess := pr.open - pr.closing - limit; limited && excess > 0 {
		for range min(excess, t.idleOfLocked(pr)) {
			t.reclaimIdleLocked(pr, nil) // the share shrank: a process joined
		}
	}
}

// shareOf is this process's share of pl: whether a connection limit
// applies, the limit, and the message rate. KumoMTA's "local:" limits are
// per process already; the others are split by shares (nil: this process
// is the only one). A process that has not settled among the others yet
// gets no connection to a provider with a shared limit.
func shareOf(sh Shares, pl shaping.ProviderLimit) (bool, int, shaping.Rate) {
	cl, r := pl.ConnectionLimit, pl.MaxMessageRate
	sharedConns, sharedRate := cl.IsSet() && !cl.Local, r.IsSet() && !r.Local
	if sh == nil || !sharedConns && !sharedRate {
		return cl.IsSet(), cl.N, r
	}
	n := sh.Divisor()
	if n == 0 {
		return true, 0, r
	}
	limited, limit := cl.IsSet(), cl.N
	if sharedConns {
		limit = sh.Share(cl.N)
	}
	if sharedRate && n > 1 {
		r.Per *= time.Duration(n)
		r.MaxBurst = max(1, r.MaxBurst/n)
	}
	return limited, limit, r
}

// idleOfLocked counts the idle connections counted against pr.
func (t *Transport) idleOfLocked(pr *provider) int {
	n := 0
	for _, q := range t.paths {
		for _, s := range q.idle {
			if slices.Contains(s.provs, pr) {
				n++
			}
		}
	}
	return n
}

// takeLocked takes a connection for a delivery on p: an idle session, or
// a slot to dial into when p and its providers are under their limits
// and max_connection_rate allows a dial within maxRateHold.
func (t *Transport) takeLocked(p *path, now time.Time) (grant, bool) {
	if t.closed {
		return grant{}, false
	}
	if n := len(p.idle); n > 0 {
		s := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		s.timer.Stop() // if it already fired, expire finds s gone
		return grant{s: s, provs: s.provs}, true
	}
	if p.open >= p.lim.conns {
		return grant{}, false
	}
	for _, pr := range p.provs {
		t.tuneLocked(pr, now)
		if pr.limited && pr.open >= pr.limit {
			pr.blocked[p] = struct{}{} // its next release dispatches p
			t.reclaimIdleLocked(pr, p)
			return grant{}, false
		}
	}
	dialAt := now
	if p.connLim != nil {
		r := p.connLim.ReserveN(now, 1)
		if d := r.DelayFrom(now); d > maxRateHold {
			r.CancelAt(now)
			t.retryLocked(p, d)
			return grant{}, false
		} else {
			dialAt = now.Add(d)
		}
	}
	p.open++
	for _, pr := range p.provs {
		pr.open++
	}
	return grant{provs: slices.Clone(p.provs), dialAt: dialAt}, true
}

// reclaimIdleLocked closes the connection idle longest on another path of
// provider pr than p (p nil: any path), for p, which found pr full: an idle connection to one site
// must not keep another site of the same provider waiting (with one MX
// host per domain and provider_connection_limit 3, idle connections to
// three finished domains held every place for their idle_timeout, and 96
// messages waited). Its release dispatches p (blocked on pr).
func (t *Transport) reclaimIdleLocked(pr *provider, p *path) {
	var from *path
	var oldest *session
	for _, q := range t.paths {
		if q == p || len(q.idle) == 0 || !slices.Contains(q.idle[0].provs, pr) {
			continue
		}
		if oldest == nil || q.idle[0].idleSince.Before(oldest.idleSince) {
			from, oldest = q, q.idle[0]
		}
	}
	if oldest == nil {
		return
	}
	from.idle = slices.Delete(from.idle, 0, 1)
	oldest.timer.Stop() // if it already fired, expire finds it gone
	pr.closing++
	go func() {
		oldest.quit()
		t.mu.Lock()
		pr.closing--
		t.mu.Unlock()
		t.release(from, oldest.provs)
	}()
}

// retryLocked dispatches p's queue again after d, when
// max_connection_rate allows the next dial.
func (t *Transport) retryLocked(p *path, d time.Duration) {
	if p.retry != nil || len(p.queue) == 0 {
		return
	}
	p.retry = time.AfterFunc(d-maxRateHold, func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		p.retry = nil
		t.dispatchLocked(p, time.Now())
	})
}

// dispatchLocked hands connections to p's queue, in order, while there
// are any to take.
func (t *Transport) dispatchLocked(p *path, now time.Time) {
	for len(p.queue) > 0 {
		g, ok := t.takeLocked(p, now)
		if !ok {
			return
		}
		w := p.queue[0]
		p.queue[0] = nil
		p.queue = p.queue[1:]
		w.ch <- g
	}
}

// leaveLocked takes w out of p's queue; false when it was dispatched
// already (its grant is in w.ch).
func (p *path) leaveLocked(w *waiter) bool {
	i := slices.Index(p.queue, w)
	if i < 0 {
		return false
	}
	p.queue = slices.Delete(p.queue, i, i+1)
	return true
}

// release gives back a connection that was closed (after QUIT's reply) or
// never opened, and hands its place to whoever waits for it: p's own
// queue first, then each provider's place to the site with the most
// deliveries waiting, so that the connection opened carries as many as it
// may.
func (t *Transport) release(p *path, provs []*provider) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	p.open--
	p.used = now
	t.dispatchLocked(p, now)
	for _, pr := range provs {
		pr.open--
		pr.used = now
		blocked := slices.Collect(maps.Keys(pr.blocked))
		clear(pr.blocked)
		slices.SortFunc(blocked, func(a, b *path) int { return len(b.queue) - len(a.queue) })
		for _, q := range blocked {
			t.dispatchLocked(q, now)
		}
	}
}

// fullProviderLocked is a provider of p whose connection limit is
// reached, or nil.
func fullProviderLocked(p *path) *provider {
	for _, pr := range p.provs {
		if pr.limited && pr.open >= pr.limit {
			return pr
		}
	}
	return nil
}

// lineLocked is how many admitted deliveries may wait in p's queue for a
// connection: connection_limit; or, while a provider of p is full, a
// connection's worth (max_deliveries_per_connection, at most
// providerLine), since the provider's next place goes to the site with the
// most waiting (release) and a connection opened for two messages carries
// two where it could carry ten. With a place in the queue capped at
// connection_limit, the simnet benchmark's outlook (100 sites of one MX
// host each under provider_connection_limit 5, 10 messages a connection)
// carried 3.2 messages a connection and went at 0.4 of its rate.
func (p *path) lineLocked() int {
	if fullProviderLocked(p) == nil {
		return p.lim.conns
	}
	return max(p.lim.conns, min(cmp.Or(p.lim.perConn, providerLine), providerLine))
}

// turnAwayLocked is how long a delivery p cannot take now waits: at the
// pace of a full provider of p, which is what holds every site of it
// back, else at p's own (waitLocked).
func (t *Transport) turnAwayLocked(p *path, now time.Time) time.Duration {
	pr := fullProviderLocked(p)
	if pr == nil {
		return p.waitLocked(now, now, p.connStep())
	}
	step := cmp.Or(p.hold, defaultHold) / time.Duration(max(1, pr.limit))
	if pr.msgLim != nil {
		step = max(step, interval(pr.msgLim))
	}
	at := later(pr.cursor, now.Add(minWait))
	pr.cursor = at.Add(step)
	return min(at.Sub(now), maxWait)
}

// pruneLocked forgets, at most once a minute, the paths and providers
// without connections or waiting deliveries that nothing used for
// pathIdleLife.
func (t *Transport) pruneLocked(now time.Time) {
	if now.Sub(t.pruned) < time.Minute {
		return
	}
	t.pruned = now
	for k, p := range t.paths {
		if p.open == 0 && len(p.queue) == 0 && now.Sub(p.used) > pathIdleLife {
			delete(t.paths, k)
		}
	}
	for k, pr := range t.provs {
		if pr.open == 0 && len(pr.blocked) == 0 && now.Sub(pr.used) > pathIdleLife {
			delete(t.provs, k)
		}
	}
	for k, pk := range t.pickers {
		if now.Sub(pk.used) > pathIdleLife {
			delete(t.pickers, k)
		}
	}
}
