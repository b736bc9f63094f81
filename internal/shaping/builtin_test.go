package shaping

import (
	"testing"
)

func TestBuiltinRules(t *testing.T) {
	t.Parallel()
	b := Builtin()
	if len(b.Warnings()) != 0 || len(b.Unimplemented()) != 0 {
		t.Fatalf("the built-in file has warnings %q and ignored keys %q", b.Warnings(), b.Unimplemented())
	}
	if r, err := Load(); err != nil || r.Files() != nil || len(r.For("gmail.com", []string{"gmail-smtp-in.l.google.com"}, "").Automation) == 0 {
		t.Fatalf("Load() with no files should give the built-in rules: %v", err)
	}
	providers := []struct {
		domain   string
		mx       []string
		provider string
		perConn  int
	}{
		{"gmail.com", []string{"gmail-smtp-in.l.google.com", "alt1.gmail-smtp-in.l.google.com"}, "google", 50},
		{"workspace.example", []string{"aspmx.l.google.com"}, "google", 50},
		{"yahoo.com", yahooMX, "yahoo", 20},
		{"aol.com", []string{"mx-aol.mail.gm0.yahoodns.net"}, "yahoo", 20},
		{"outlook.com", []string{"outlook-com.olc.protection.outlook.com"}, "outlook", 50},
		{"contoso.example", []string{"contoso-example.mail.protection.outlook.com"}, "office365", 50},
		{"icloud.com", []string{"mx01.mail.icloud.com", "mx02.mail.icloud.com"}, "apple", 20},
		{"comcast.net", []string{"mx1a1.comcast.net", "mx2h1.comcast.net"}, "comcast", 1000},
		{"firm.example", []string{"us-smtp-inbound-1.mimecast.com"}, "mimecast", 100},
		{"web.de", []string{"mx-ha02.web.de"}, "gmx-webde", 20},
		{"small.example", []string{"mail.small.example"}, "", 0},
	}
	for _, p := range providers {
		s := b.For(p.domain, p.mx, "")
		if s.Provider != p.provider || s.MaxDeliveriesPerConnection != p.perConn {
			t.Errorf("%s: provider %q, max_deliveries_per_connection %d; want %q, %d", p.domain, s.Provider, s.MaxDeliveriesPerConnection, p.provider, p.perConn)
		}
		if s.EnableTLS != TLSUnset {
			t.Errorf("%s: the built-in rules set enable_tls %s; direct delivery's own default must stay", p.domain, s.EnableTLS)
		}
	}

	// The well-known throttling replies, whatever the MX hosts are called.
	rules := b.For("any.example", []string{"mx.any.example"}, "").Automation
	replies := []struct {
		reply string
		kind  ActionKind
	}{
		{"421-4.7.28 [192.0.2.1 15] Our system has detected an unusual rate of unsolicited mail originating from your IP address. " +
			"To protect our users from spam, mail sent from your IP address has been temporarily rate limited.", ActionSetConfig},
		{"421 4.7.28 mx.example rate limited, try again later", ActionSetConfig},
		{"421 4.7.0 Try again later, closing connection. (EHLO) gsmtp", ActionSetConfig},
		{"451 4.7.650 The mail server [192.0.2.1] has been temporarily rate limited due to IP reputation.", ActionSetConfig},
		{"421 4.7.0 [TS01] Messages from 192.0.2.1 temporarily deferred due to user complaints", ActionSetConfig},
		{"421 4.7.0 [TSS04] Messages from 192.0.2.1 temporarily deferred due to unexpected volume or user complaints", ActionSuspend},
		{"554 5.7.9 Message not accepted for policy reasons. [TS03] All messages from 192.0.2.1 will be permanently deferred", ActionSuspend},
		{"421 RL000001 Too many sessions opened", ActionSetConfig},
	}
	for _, r := range replies {
		if !matchesAny(rules, r.reply, r.kind) {
			t.Errorf("no built-in %s rule for %q", r.kind, r.reply)
		}
	}
	for _, ok := range []string{"250 2.0.0 OK", "550 5.1.1 The email account that you tried to reach does not exist",
		"421 4.7.0 TLS required for RCPT", "451 4.7.1 Greylisted, please retry"} {
		for _, r := range rules {
			if r.Matches(ok) {
				t.Errorf("built-in rule %s matches the ordinary reply %q", r, ok)
			}
		}
	}
}
