package delivery

import (
	"context"
	"time"
)

// dest is the connections to one destination (pool key): how many are open
// and which of them are idle. Guarded by Transport.mu.
type dest struct {
	idle []*session    // most recently used last
	open int           // idle + busy + being dialled; at most MaxConnsPerDest
	wake chan struct{} // closed (and replaced) when a slot or idle session frees up
}

// acquire returns an idle session for key, or nil with a connection slot
// reserved for the caller to dial into (give it back with release if the
// dial fails). It waits while the destination is at MaxConnsPerDest.
func (t *Transport) acquire(ctx context.Context, key string) (*session, error) {
	return t.take(ctx, key, true)
}

// take is acquire; with idleOK false it only reserves a slot.
func (t *Transport) take(ctx context.Context, key string, idleOK bool) (*session, error) {
	for {
		t.mu.Lock()
		if t.closed {
			t.mu.Unlock()
			return nil, ErrClosed
		}
		d := t.dests[key]
		if d == nil {
			d = &dest{wake: make(chan struct{})}
			t.dests[key] = d
		}
		if n := len(d.idle); idleOK && n > 0 {
			s := d.idle[n-1]
			d.idle[n-1] = nil
			d.idle = d.idle[:n-1]
			s.timer.Stop() // if it already fired, expire finds s gone
			t.mu.Unlock()
			return s, nil
		}
		if d.open < t.cfg.MaxConnsPerDest {
			d.open++
			t.mu.Unlock()
			return nil, nil
		}
		wake := d.wake
		t.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// release gives back the slot of a session that was closed or never
// opened.
func (t *Transport) release(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if d := t.dests[key]; d != nil {
		d.open--
		t.wakeLocked(key, d)
	}
}

// finish ends a Send's use of s: back to the idle pool if reusable and the
// pool is open, else closed (with QUIT if it is still healthy).
func (t *Transport) finish(key string, s *session, reusable bool) {
	if !reusable {
		s.abort()
		t.release(key)
		return
	}
	t.mu.Lock()
	d := t.dests[key]
	if t.closed || t.cfg.IdleTimeout < 0 || d == nil {
		t.mu.Unlock()
		s.quit()
		t.release(key)
		return
	}
	d.idle = append(d.idle, s)
	if s.timer == nil {
		s.timer = time.AfterFunc(t.cfg.IdleTimeout, func() { t.expire(key, s) })
	} else {
		s.timer.Reset(t.cfg.IdleTimeout)
	}
	t.wakeLocked(key, d)
	t.mu.Unlock()
}

// expire closes s if it is still idle when its IdleTimeout ends.
func (t *Transport) expire(key string, s *session) {
	t.mu.Lock()
	d := t.dests[key]
	found := false
	if d != nil {
		for i, x := range d.idle {
			if x == s {
				d.idle = append(d.idle[:i], d.idle[i+1:]...)
				d.open--
				t.wakeLocked(key, d)
				found = true
				break
			}
		}
	}
	t.mu.Unlock()
	if found {
		s.quit()
	}
}

// wakeLocked wakes the Sends waiting on d, and forgets d when it holds no
// connections (a waiter looks the key up again when woken). t.mu is held.
func (t *Transport) wakeLocked(key string, d *dest) {
	close(d.wake)
	d.wake = make(chan struct{})
	if d.open <= 0 && len(d.idle) == 0 {
		delete(t.dests, key)
	}
}

// MXSlot reserves one of the connections to the MX host (on the MX port)
// that delivery counts against MaxConnsPerDest, for another conversation
// with the same server (the validator's mailbox probe), so that the two
// together never open more connections to a server than delivery's bound.
// It waits while the destination is full; release gives the slot back.
func (t *Transport) MXSlot(ctx context.Context, host string) (release func(), err error) {
	key := mxKey(host, t.cfg.MXPort)
	if _, err := t.take(ctx, key, false); err != nil {
		return nil, err
	}
	return func() { t.release(key) }, nil
}
