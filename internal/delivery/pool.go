package delivery

import (
	"context"
	"sync"
	"time"
)

// finish ends a delivery's use of s: back to the pool (to the next
// delivery waiting on the path, or idle) if reusable, else closed at once.
func (t *Transport) finish(p *path, s *session, reusable bool) {
	s.count++
	if !reusable {
		s.abort()
		t.release(p, s.provs)
		return
	}
	t.park(p, s)
}

// neededElsewhere reports whether a provider the session counts against is
// full with another of its sites waiting for a place: the session is then
// closed rather than kept idle (reclaimIdleLocked). t.mu is held.
func neededElsewhere(provs []*provider) bool {
	for _, pr := range provs {
		if pr.limited && pr.open >= pr.limit && len(pr.blocked) > 0 {
			return true
		}
	}
	return false
}

// overShare reports whether a provider the session counts against has
// more connections than this process's share of its limit (which shrinks
// when another process joins): the session is closed rather than kept.
// t.mu is held.
func overShare(provs []*provider) bool {
	for _, pr := range provs {
		if pr.limited && pr.open > pr.limit {
			return true
		}
	}
	return false
}

// park puts a healthy session back: to the first delivery waiting on p,
// or idle until p's idle_timeout. It is closed with QUIT instead when the
// Transport is closed, reuse is off, it has carried
// max_deliveries_per_connection messages, or the path has more
// connections than its connection_limit (lowered by a reload) or a
// provider more than this process's share; its place
// counts until QUIT's reply.
func (t *Transport) park(p *path, s *session) {
	t.mu.Lock()
	for _, pr := range s.provs {
		t.tuneLocked(pr, time.Now())
	}
	if t.closed || p.lim.idle < 0 || p.lim.perConn > 0 && s.count >= p.lim.perConn || p.open > p.lim.conns ||
		len(p.queue) == 0 && neededElsewhere(s.provs) || overShare(s.provs) {
		t.mu.Unlock()
		s.quit()
		t.release(p, s.provs)
		return
	}
	p.used = time.Now()
	if len(p.queue) > 0 {
		w := p.queue[0]
		p.queue[0] = nil
		p.queue = p.queue[1:]
		w.ch <- grant{s: s, provs: s.provs}
		t.mu.Unlock()
		return
	}
	s.idleSince = p.used
	p.idle = append(p.idle, s)
	if s.timer == nil {
		s.timer = time.AfterFunc(p.lim.idle, func() { t.expire(p, s) })
	} else {
		s.timer.Reset(p.lim.idle)
	}
	t.mu.Unlock()
}

// expire closes s if it is still idle when its idle timeout ends.
func (t *Transport) expire(p *path, s *session) {
	t.mu.Lock()
	found := false
	for i, x := range p.idle {
		if x == s {
			p.idle = append(p.idle[:i], p.idle[i+1:]...)
			found = true
			break
		}
	}
	t.mu.Unlock()
	if found {
		s.quit()
		t.release(p, s.provs)
	}
}

// Close closes the idle connections (with QUIT) and makes later Sends and
// Admits fail with ErrClosed, as do deliveries waiting for a connection.
// Sends in progress finish; their connections are then closed rather than
// kept.
func (t *Transport) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	close(t.closing)
	type idleSession struct {
		p *path
		s *session
	}
	var idle []idleSession
	for _, p := range t.paths {
		for _, s := range p.idle {
			s.timer.Stop()
			idle = append(idle, idleSession{p, s})
		}
		p.idle = nil
		if p.retry != nil {
			p.retry.Stop()
			p.retry = nil
		}
	}
	t.mu.Unlock()
	var wg sync.WaitGroup
	for _, x := range idle {
		wg.Go(func() {
			x.s.quit()
			t.release(x.p, x.s.provs)
		})
	}
	wg.Wait()
	return nil
}

// MXSlot reserves one of the connections of the egress path to domain's
// MX hosts that delivery counts against connection_limit (and the
// providers' limits), for another conversation with the same servers (the
// validator's mailbox probe), so that the two together never open more
// connections to a site than delivery's bound. It waits while the path is
// full (an idle delivery connection is closed to make room); release
// gives the slot back.
func (t *Transport) MXSlot(ctx context.Context, domain string) (release func(), err error) {
	tk, _, e := t.prepare(ctx, Route{Mode: ModeDirect}, "postmaster@"+domain)
	if e != nil {
		return nil, e
	}
	tk.blocking = true
	now := time.Now()
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, t.fail(ctx, ErrClosed, StageConnect, "")
	}
	p := t.pathLocked(tk, now)
	tk.p = p
	if len(p.queue) == 0 {
		if g, ok := t.takeLocked(p, now); ok {
			tk.g = &g
		}
	}
	if tk.g == nil {
		tk.w = &waiter{ch: make(chan grant, 1)}
		p.queue = append(p.queue, tk.w)
	}
	t.mu.Unlock()
	g, e := t.connection(ctx, tk)
	if e != nil {
		return nil, e
	}
	if g.s != nil {
		g.s.quit() // its place is the probe's now
		g = grant{provs: g.s.provs, dialAt: time.Now()}
	}
	if e := t.sleepUntil(ctx, g.dialAt); e != nil {
		t.release(p, g.provs)
		return nil, e
	}
	return sync.OnceFunc(func() { t.release(p, g.provs) }), nil
}
