package connlimit

import (
	"cmp"
	"crypto/tls"
	"fmt"
	"net"
	"time"
)

// The defaults of an SMTP listener's bounds.
const (
	SMTPMax            = 1000
	SMTPPerIP          = 20
	SMTPPreAuthTimeout = 30 * time.Second
	SMTPCommandTimeout = 5 * time.Minute // RFC 5321 4.5.3.2.7
)

// SMTP completes an SMTP listener's bounds: zero values take the defaults,
// and a refused client gets a 421 (over TLS with tc, for implicit TLS).
func SMTP(c Config, tc *tls.Config) Config {
	if c.Max <= 0 {
		c.Max = SMTPMax
	}
	if c.PerIP <= 0 {
		c.PerIP = SMTPPerIP
	}
	t := Timeouts{First: SMTPPreAuthTimeout, Idle: SMTPCommandTimeout}
	if c.Timeouts != nil {
		t.First = cmp.Or(c.Timeouts.First, t.First)
		t.Idle = cmp.Or(c.Timeouts.Idle, t.Idle)
	}
	c.Timeouts = &t
	c.Refuse = SMTPRefusal(tc)
	return c
}

// SMTPRefusal is a Refuse hook for SMTP listeners: the client gets a 421
// greeting naming the bound it met and the connection is closed (RFC 5321
// §3.1 lets a server answer 421 in place of 220). With tc the answer
// follows a TLS handshake, as an implicit TLS client expects (RFC 8314).
func SMTPRefusal(tc *tls.Config) func(net.Conn, Refusal) {
	return func(c net.Conn, r Refusal) {
		if tc != nil {
			t := tls.Server(c, tc)
			if t.Handshake() != nil {
				return
			}
			defer t.Close()
			c = t
		}
		fmt.Fprintf(c, "%s\r\n", SMTPReply(r))
	}
}

// SMTPReply is the 421 line a refused SMTP client reads.
func SMTPReply(r Refusal) string {
	if r.PerIP {
		return fmt.Sprintf("421 4.7.0 Too many connections from your address (at most %d at once); "+
			"close one and try again later", r.Limit)
	}
	return fmt.Sprintf("421 4.3.2 Too many connections to this server (at most %d at once); try again later", r.Limit)
}
