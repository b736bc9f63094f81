package app_test

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/delivery"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/store"
)

// TestDirectDeliveryRefusesNonPublicMX: without --delivery-allow-private,
// a recipient whose MX (or, with no MX, whose domain) resolves to
// 127.0.0.1, ::1 or ::ffff:127.0.0.1 fails permanently at once with "MX
// resolves to a non-public address", and the SMTP sink listening there
// gets no connection; a relay on loopback, which the operator set, still
// delivers. No log entry names a loopback address and port.
func TestDirectDeliveryRefusesNonPublicMX(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		e := startSend(t, d, false, func(c *config.Config) { c.DeliveryAllowPrivate = false })
		e.DNS.AddA("implicit-rcpt.example", "127.0.0.1") // no MX: the domain is its own MX
		e.DNS.AddMX("v6-rcpt.example", 10, "mx.v6-rcpt.example")
		e.DNS.AddAAAA("mx.v6-rcpt.example", "::1")
		e.DNS.AddRR(&dns.AAAA{Hdr: dns.RR_Header{Name: "mx.v6-rcpt.example.", Rrtype: dns.TypeAAAA, Class: dns.ClassINET, Ttl: 60},
			AAAA: net.ParseIP("::ffff:127.0.0.1")})
		rcpts := []string{"ann@rcpt.example.net", "bob@implicit-rcpt.example", "cy@v6-rcpt.example"}
		if resp := e.send(t, basicParts(rcpts...), nil); resp.StatusCode != 202 {
			t.Fatalf("send: %d %s", resp.StatusCode, resp.Body)
		}
		for _, r := range rcpts {
			if got := strings.Join(e.chain(t, r, event.Failed, event.Delivered), " "); got != "queued send permanent_fail failed" {
				t.Errorf("%s: log %q, want a permanent failure on the first attempt", r, got)
			}
		}
		if n := e.sink.Sessions(); n != 0 {
			t.Errorf("the sink on 127.0.0.1 got %d connections, want none", n)
		}
		body := string(e.Do(apitest.Request{Method: "GET", Path: "/api/domains/shop.example.com/log?limit=100", Auth: e.user.Auth()}).Body)
		if c := strings.Count(body, delivery.MsgNonPublic); c != len(rcpts) {
			t.Errorf("the log says %q %d times, want once per recipient:\n%s", delivery.MsgNonPublic, c, body)
		}
		for _, addr := range []string{"127.0.0.1", "::1", "::ffff:"} {
			if strings.Contains(body, addr) {
				t.Errorf("the tenant's log names %s:\n%s", addr, body)
			}
		}

		relay := startSend(t, d, true, func(c *config.Config) { c.DeliveryAllowPrivate = false })
		if resp := relay.send(t, basicParts("dee@rcpt.example.net"), nil); resp.StatusCode != 202 {
			t.Fatalf("send through the relay: %d %s", resp.StatusCode, resp.Body)
		}
		if _, err := relay.sink.WaitForMessages(ctxTimeout(t, 15*time.Second), 1); err != nil {
			t.Errorf("a relay on loopback without --delivery-allow-private: %v, want it delivered as before", err)
		}
	})
}

// TestDeliveryLogHidesDialErrorAddress: a connection refused at the MX is
// logged for the tenant as its class ("connection refused"), never with
// the address and port dialled.
func TestDeliveryLogHidesDialErrorAddress(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().(*net.TCPAddr).Port
	ln.Close() // nothing listens there now: connection refused
	e := startSend(t, store.SQLite, false, func(c *config.Config) { c.MXPort = closed })
	if resp := e.send(t, basicParts("ann@rcpt.example.net"), nil); resp.StatusCode != 202 {
		t.Fatalf("send: %d %s", resp.StatusCode, resp.Body)
	}
	e.chain(t, "ann@rcpt.example.net", event.TemporaryFail, event.Deferred)
	body := string(e.Do(apitest.Request{Method: "GET", Path: "/api/domains/shop.example.com/log?limit=100", Auth: e.user.Auth()}).Body)
	if !strings.Contains(body, "connection refused") {
		t.Errorf("the log does not say the connection was refused:\n%s", body)
	}
	if strings.Contains(body, "127.0.0.1:") {
		t.Errorf("the tenant's log names the address dialled:\n%s", body)
	}
}
