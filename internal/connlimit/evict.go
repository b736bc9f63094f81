package connlimit

import (
	"container/list"
	"net"
	"net/netip"
)

// Eviction: at the total bound, a Listener with Evict set closes an
// evictable connection and admits the new one, instead of refusing it.
// Evictable connections are those that hold a place without doing
// anything for anyone: an HTTP keep-alive connection between requests
// (or before its first), an SMTP session before it authenticated (on the
// inbound listener, where anyone may name a bounce address, any session).
// Without it, a few addresses holding idle connections (each within its
// per-address bound) filled the listener, and every other client,
// /readyz included, was refused for as long as they held.
//
// The victim is the oldest evictable connection of the client address
// that holds the most of them: a flood churning new connections from a
// few addresses then closes its own, not the lone client that is still
// on its way to AUTH (with oldest-first alone, 150 new connections a
// second under a bound of 100 closed every such client that took 1 s).

// SetEvictable marks c as one the Listener may close to admit another
// (true) or not (false). It does nothing for a conn from another listener.
func SetEvictable(c net.Conn, evictable bool) {
	lc := Of(c)
	if lc == nil || lc.l == nil {
		return
	}
	lc.l.setEvictable(lc, evictable)
}

func (l *Listener) setEvictable(c *Conn, evictable bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if evictable {
		l.markEvictable(c)
	} else {
		l.unmark(c)
	}
}

// markEvictable puts c at the back of its address's evictable list
// (under l.mu).
func (l *Listener) markEvictable(c *Conn) {
	if c.closed || c.idleAt != nil {
		return
	}
	key := ClientKey(c.addr)
	q := l.evictable[key]
	if q == nil {
		q = list.New()
		l.evictable[key] = q
	}
	c.idleAt = q.PushBack(c)
}

// unmark takes c off its address's evictable list (under l.mu).
func (l *Listener) unmark(c *Conn) {
	if c.idleAt == nil {
		return
	}
	key := ClientKey(c.addr)
	q := l.evictable[key]
	q.Remove(c.idleAt)
	c.idleAt = nil
	if q.Len() == 0 {
		delete(l.evictable, key)
	}
}

// victim is the conn to close for a newcomer (under l.mu): the oldest
// evictable one of the address holding the most; the caller drops it from
// the counts and closes it once the lock is released. nil when there is
// none.
func (l *Listener) victim() *Conn {
	if !l.cfg.Evict {
		return nil
	}
	var most *list.List
	var mostKey netip.Addr
	for key, q := range l.evictable {
		if most == nil || q.Len() > most.Len() || q.Len() == most.Len() && key.Less(mostKey) {
			most, mostKey = q, key
		}
	}
	if most == nil {
		return nil
	}
	l.evicted++
	return most.Front().Value.(*Conn)
}

// forget takes c off the evictable lists when it closes.
func (l *Listener) forget(c *Conn) {
	l.unmark(c)
	c.closed = true
}
