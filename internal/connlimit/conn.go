package connlimit

import (
	"container/list"
	"crypto/tls"
	"net"
	"net/netip"
	"sync/atomic"
	"time"
)

// Conn is a connection a Listener admitted; closing it gives its place back.
type Conn struct {
	net.Conn
	l    *Listener
	addr netip.Addr

	// Under l.mu: the conn's place on the evictable list, and whether its
	// place was given back (closed or evicted).
	idleAt *list.Element
	closed bool

	governed bool         // Timeouts set: reads get this Conn's deadlines
	idle     atomic.Int64 // nanoseconds allowed between reads
	end      atomic.Int64 // unix nanoseconds the first phase ends; 0 after Promote
}

func (l *Listener) wrap(c net.Conn, addr netip.Addr) *Conn {
	lc := &Conn{Conn: c, l: l, addr: addr}
	if t := l.cfg.Timeouts; t != nil {
		lc.governed = true
		lc.idle.Store(int64(t.Idle))
		lc.end.Store(time.Now().Add(t.First).UnixNano())
	}
	return lc
}

// Of finds the Conn under c (a *tls.Conn over one, say); nil when c did
// not come from a Listener.
func Of(c net.Conn) *Conn {
	for c != nil {
		switch v := c.(type) {
		case *Conn:
			return v
		case *tls.Conn:
			c = v.NetConn()
		default:
			return nil
		}
	}
	return nil
}

// Promote ends the first phase: from now on a read may wait Idle. Servers
// call it once the client has authenticated (or, with no authentication,
// named a recipient the server takes mail for).
func (c *Conn) Promote() {
	if c == nil { // a conn from another listener (tests' own servers)
		return
	}
	c.end.Store(0)
	if c.l.cfg.EvictUntilPromote {
		c.l.setEvictable(c, false)
	}
}

// Read reads with the Conn's deadline when it governs its own.
func (c *Conn) Read(p []byte) (int, error) {
	if c.governed {
		d := time.Now().Add(time.Duration(c.idle.Load()))
		if end := c.end.Load(); end != 0 && end < d.UnixNano() {
			d = time.Unix(0, end)
		}
		if err := c.Conn.SetReadDeadline(d); err != nil {
			return 0, err
		}
	}
	return c.Conn.Read(p)
}

// SetReadDeadline is ignored when the Conn governs its own deadlines.
func (c *Conn) SetReadDeadline(t time.Time) error {
	if c.governed {
		return nil
	}
	return c.Conn.SetReadDeadline(t)
}

// SetDeadline sets only the write deadline when the Conn governs reads.
func (c *Conn) SetDeadline(t time.Time) error {
	if c.governed {
		return c.Conn.SetWriteDeadline(t)
	}
	return c.Conn.SetDeadline(t)
}

// CloseWrite half-closes when the connection can (net/http uses it to
// let the client read an error before the close).
func (c *Conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// Close closes the connection and gives its place back, once.
func (c *Conn) Close() error {
	err := c.Conn.Close()
	c.l.release(c)
	return err
}
