package delivery

import (
	"io"
	"net"
	"strings"
	"sync/atomic"
	"time"
)

// aLongTimeAgo is a deadline in the past, which makes pending and future
// I/O fail at once.
var aLongTimeAgo = time.Unix(1, 0)

// deadlineConn is the TCP connection under a session (and under its TLS
// layer). It adds what go-smtp's client lacks:
//
//   - a per-operation deadline of CommandTimeout for every read and write
//     outside go-smtp's own command deadlines (go-smtp clears its deadline
//     after each command, leaving the message body unbounded), so no step
//     can hang;
//   - cancellation: abort (called by context.AfterFunc when a Send's ctx
//     ends) moves the deadline into the past, and keeps it there even if
//     go-smtp sets a new one afterwards.
//
// Read, Write and SetDeadline are called by the one goroutine driving the
// session; abort may be called from any.
type deadlineConn struct {
	net.Conn
	timeout  time.Duration
	explicit bool // a deadline set by go-smtp (or tls) is in force
	aborted  atomic.Bool
}

func (c *deadlineConn) SetDeadline(t time.Time) error {
	c.explicit = !t.IsZero()
	return c.set(t)
}

// set applies t, unless the connection was aborted. Setting first and
// checking after means a concurrent abort always wins.
func (c *deadlineConn) set(t time.Time) error {
	err := c.Conn.SetDeadline(t)
	if c.aborted.Load() {
		c.Conn.SetDeadline(aLongTimeAgo)
	}
	return err
}

func (c *deadlineConn) Read(p []byte) (int, error) {
	if !c.explicit {
		c.set(time.Now().Add(c.timeout))
	}
	return c.Conn.Read(p)
}

func (c *deadlineConn) Write(p []byte) (int, error) {
	if !c.explicit {
		c.set(time.Now().Add(c.timeout))
	}
	return c.Conn.Write(p)
}

// abort makes all I/O on c fail from now on.
func (c *deadlineConn) abort() {
	c.aborted.Store(true)
	c.Conn.SetDeadline(aLongTimeAgo)
}

// greetedConn replays a synthetic "220" greeting before the real stream.
// go-smtp's client can only do STARTTLS as part of constructing a client
// (NewClientStartTLS, which says EHLO localhost and gives up the connection
// when STARTTLS is not offered); to choose per server, this package sends
// STARTTLS itself and starts a fresh client on the TLS connection, which
// expects a greeting the server will not send again.
type greetedConn struct {
	net.Conn
	r io.Reader
}

func newGreetedConn(c net.Conn) *greetedConn {
	return &greetedConn{Conn: c, r: io.MultiReader(strings.NewReader("220 STARTTLS done\r\n"), c)}
}

func (c *greetedConn) Read(p []byte) (int, error) { return c.r.Read(p) }
