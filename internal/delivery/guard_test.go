package delivery_test

import (
	"strings"
	"testing"

	"github.com/postline/postline/internal/delivery"
	"github.com/postline/postline/internal/dnstest"
	"github.com/postline/postline/internal/smtptest"
)

// TestDirectRefusesNonPublic: without AllowPrivate, an MX host or an
// implicit MX at a loopback (or unspecified) address fails permanently
// with MsgNonPublic, naming no address, and nothing is dialled; another MX
// host is still tried; a relay on loopback is not affected.
func TestDirectRefusesNonPublic(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		zone func(s *dnstest.Server)
	}{
		{"mx at 127.0.0.1", func(s *dnstest.Server) {
			s.AddMX("example.test", 10, "mx.example.test")
			s.AddA("mx.example.test", "127.0.0.1")
		}},
		{"implicit mx at 127.0.0.1", func(s *dnstest.Server) { s.AddA("example.test", "127.0.0.1") }},
		{"mx at ::1", func(s *dnstest.Server) {
			s.AddMX("example.test", 10, "mx.example.test")
			s.AddAAAA("mx.example.test", "::1")
		}},
		{"mx at 0.0.0.0", func(s *dnstest.Server) {
			s.AddMX("example.test", 10, "mx.example.test")
			s.AddA("mx.example.test", "0.0.0.0")
		}},
		{"mx naming an address", func(s *dnstest.Server) { s.AddMX("example.test", 10, "127.0.0.1") }},
		{"every mx", func(s *dnstest.Server) {
			s.AddMX("example.test", 10, "mx1.example.test")
			s.AddMX("example.test", 20, "mx2.example.test")
			s.AddA("mx1.example.test", "127.0.0.1")
			s.AddA("mx2.example.test", "127.0.0.2")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, smtptest.Config{}, func(c *delivery.Config) { c.AllowPrivate = false })
			tt.zone(f.dns)
			_, err := f.send(t, direct, "rcpt@example.test")
			e := asError(t, err)
			if e.Message != delivery.MsgNonPublic || e.Temporary || e.Enhanced != "5.4.4" || e.RecipientRejected() {
				t.Errorf("error %v, want permanent 5.4.4 %q, not a rejection of the recipient", e, delivery.MsgNonPublic)
			}
			if strings.Contains(e.Message, "127.0.0") || !strings.Contains(e.Err.Error(), "127.0.0.") && !strings.Contains(e.Err.Error(), "::1") && !strings.Contains(e.Err.Error(), "0.0.0.0") {
				t.Errorf("message %q / cause %v: the address belongs in the cause (the operator's), never in the message", e.Message, e.Err)
			}
			if n := f.sessions(); n != 0 {
				t.Errorf("sink saw %d sessions, want none", n)
			}
		})
	}
	t.Run("relay on loopback", func(t *testing.T) {
		t.Parallel()
		f := setup(t, smtptest.Config{}, func(c *delivery.Config) { c.AllowPrivate = false })
		if _, err := f.send(t, f.relay(), "rcpt@example.test"); err != nil {
			t.Fatalf("relay at 127.0.0.1: %v, want it delivered (relays are the operator's)", err)
		}
	})
}
