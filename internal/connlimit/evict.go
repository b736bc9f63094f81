package connlimit

import "net"

// Eviction: at the total bound, a Listener with Evict set closes the
// connection that has been evictable longest and admits the new one,
// instead of refusing it. Evictable connections are those that hold a
// place without doing anything for anyone: an HTTP keep-alive connection
// between requests (or before its first), an SMTP session before it
// authenticated. Without it, a few addresses holding idle connections
// (each within its per-address bound) filled the listener, and every
// other client, /readyz included, was refused for as long as they held.

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
	switch {
	case c.closed:
	case evictable && c.idleAt == nil:
		c.idleAt = l.idle.PushBack(c)
	case !evictable && c.idleAt != nil:
		l.idle.Remove(c.idleAt)
		c.idleAt = nil
	}
}

// victim is the longest-evictable conn (under l.mu), which the caller
// drops from the counts and closes once the lock is released; nil when
// there is none.
func (l *Listener) victim() *Conn {
	if !l.cfg.Evict || l.idle.Len() == 0 {
		return nil
	}
	l.evicted++
	return l.idle.Front().Value.(*Conn)
}

// forget takes c off the evictable list when it closes.
func (l *Listener) forget(c *Conn) {
	if c.idleAt != nil {
		l.idle.Remove(c.idleAt)
		c.idleAt = nil
	}
	c.closed = true
}
