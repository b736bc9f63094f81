package validation_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/validation"
)

// check compares the verdict fields of got with want, naming the input.
func check(t *testing.T, email string, got validation.Result, valid bool, reason string, warnings ...string) {
	t.Helper()
	if warnings == nil {
		warnings = []string{}
	}
	if got.IsValid != valid || got.Reason != reason || !slices.Equal(got.Warnings, warnings) {
		t.Errorf("%q: got valid=%v reason=%q warnings=%q, want valid=%v reason=%q warnings=%q",
			email, got.IsValid, got.Reason, got.Warnings, valid, reason, warnings)
	}
	if got.Email != email {
		t.Errorf("%q: Email = %q", email, got.Email)
	}
	if (got.Error == nil) != valid {
		t.Errorf("%q: valid=%v but Error = %v", email, valid, got.Error)
	}
	if got.SpamtrapScore < 0 || got.SpamtrapScore > 1 {
		t.Errorf("%q: SpamtrapScore = %v, outside [0,1]", email, got.SpamtrapScore)
	}
}

func TestDNS(t *testing.T) {
	t.Parallel()
	f := setup(t)
	tests := []struct {
		email    string
		valid    bool
		reason   string
		warnings []string
	}{
		{"jane@acme-mail.com", true, "", nil},
		{"Jane@ACME-Mail.org", true, "", nil},                       // case-insensitive domain
		{"jane@nullmx.org", false, validation.ReasonNullMX, nil},    // RFC 7505
		{"jane@nowhere.net", false, validation.ReasonNXDomain, nil}, // not in the zone
		{"jane@a-only.net", true, "", []string{"implicit_mx"}},      // RFC 5321 §5.1
		{"jane@aaaa-only.net", true, "", []string{"implicit_mx"}},   // AAAA counts too
		{"jane@loopback-only.net", false, validation.ReasonNoMailServer, nil},
		{"jane@bare.net", false, validation.ReasonNoMailServer, nil}, // exists, no MX/A/AAAA
		{"jane@servfail.net", false, validation.ReasonDNSUnavailable, nil},
		{"jane@refused.net", false, validation.ReasonDNSUnavailable, nil},
	}
	for _, tt := range tests {
		got := f.validate(t, validation.ModeStandard, tt.email)
		check(t, tt.email, got, tt.valid, tt.reason, tt.warnings...)
		if got.Cached {
			t.Errorf("%q: first validation Cached = true", tt.email)
		}
	}
}

func TestTemporaryFailureNeverCached(t *testing.T) {
	t.Parallel()
	f := setup(t)
	for i := range 2 {
		before := f.srv.Queries()
		got := f.validate(t, validation.ModeStandard, "jane@servfail.net")
		check(t, "jane@servfail.net", got, false, validation.ReasonDNSUnavailable)
		if got.Cached {
			t.Errorf("call %d: Cached = true for dns_unavailable", i+1)
		}
		if f.srv.Queries() == before {
			t.Errorf("call %d: no DNS query; the failure was cached", i+1)
		}
	}
	if _, puts := f.cache.counts("standard:jane@servfail.net"); puts != 0 {
		t.Errorf("Cache.Put called %d times for dns_unavailable", puts)
	}
}

func TestTimeoutIsBounded(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		mod  func(*validation.Config)
	}{
		{"resolver timeout", func(*validation.Config) {}},
		{"LookupTimeout", func(c *validation.Config) { c.LookupTimeout = 50 * time.Millisecond }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, tt.mod)
			f.srv.SetDelay("slow.net", 10*time.Second)
			start := time.Now()
			got := f.validate(t, validation.ModeStandard, "jane@slow.net")
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("jane@slow.net took %v", d)
			}
			check(t, "jane@slow.net", got, false, validation.ReasonDNSUnavailable)
		})
	}
}

func TestReservedNamesAskNoDNS(t *testing.T) {
	t.Parallel()
	f := setup(t)
	for _, email := range []string{
		"a@foo.test", "a@example", "a@x.invalid", "a@localhost", "a@my.localhost",
		"a@printer.local", "a@abc.onion", "a@example.com", "a@mail.example.org",
		"a@EXAMPLE.NET", "a@corp", "a@lan", "a@home", "a@intranet", "a@private",
		"a@internal", "a@router.home.arpa", "a@[127.0.0.1]", "a@[10.1.2.3]",
		"a@[192.168.0.1]", "a@[IPv6:::1]", "a@[IPv6:fe80::1]", "a@[192.0.2.1]",
	} {
		before := f.srv.Queries()
		got := f.validate(t, validation.ModeStandard, email)
		if got.IsValid || got.Reason != validation.ReasonReservedDomain {
			t.Errorf("%q: got valid=%v reason=%q, want reserved_domain", email, got.IsValid, got.Reason)
		}
		if n := f.srv.Queries() - before; n != 0 {
			t.Errorf("%q: %d DNS queries, want 0", email, n)
		}
	}
}

func TestDomainLiterals(t *testing.T) {
	t.Parallel()
	f := setup(t)
	tests := []struct {
		mode     validation.Mode
		email    string
		valid    bool
		reason   string
		warnings []string
	}{
		{validation.ModeStandard, "a@[8.8.8.8]", true, "", []string{"domain_literal"}},
		{validation.ModeStandard, "a@[IPv6:2606:4700::1111]", true, "", []string{"domain_literal"}},
		{validation.ModeStrict, "a@[8.8.8.8]", false, validation.ReasonSyntax, []string{"domain_literal"}},
		{validation.ModeStandard, "a@[127.0.0.1]", false, validation.ReasonReservedDomain, []string{"domain_literal"}},
	}
	for _, tt := range tests {
		before := f.srv.Queries()
		got := f.validate(t, tt.mode, tt.email)
		check(t, tt.email, got, tt.valid, tt.reason, tt.warnings...)
		if f.srv.Queries() != before {
			t.Errorf("%q: a literal was looked up", tt.email)
		}
	}
}

func TestStrictAndStandard(t *testing.T) {
	t.Parallel()
	f := setup(t)
	tests := []struct {
		mode     validation.Mode
		email    string
		valid    bool
		reason   string
		warnings []string
	}{
		{validation.ModeStandard, `"john"@acme-mail.com`, true, "", []string{"quoted_string"}},
		{validation.ModeStrict, `"john"@acme-mail.com`, false, validation.ReasonSyntax, []string{"quoted_string"}},
		{validation.ModeStrict, `john@acme-mail.com`, true, "", nil},
		{validation.ModeStandard, `john(home)@acme-mail.com`, true, "", []string{"comment", "cfws_near_at"}},
		{validation.ModeStrict, `john(home)@acme-mail.com`, false, validation.ReasonSyntax, []string{"comment", "cfws_near_at"}},
		{validation.ModeStandard, "not-an-address", false, validation.ReasonSyntax, nil},
		{validation.ModeStrict, "", false, validation.ReasonSyntax, nil},
		{validation.ModeStandard, strings.Repeat("a", 1025) + "@acme-mail.com", false, validation.ReasonSyntax, nil},
		{validation.ModeStrict, strings.Repeat("a", 64) + "@" + strings.Repeat("b", 60) + "." + strings.Repeat("c", 60) + "." + strings.Repeat("d", 60) + "." + strings.Repeat("e", 60) + ".com", false, validation.ReasonSyntax, []string{"address_too_long"}},
	}
	for _, tt := range tests {
		got := f.validate(t, tt.mode, tt.email)
		check(t, tt.email, got, tt.valid, tt.reason, tt.warnings...)
		if !tt.valid && tt.reason == validation.ReasonSyntax && tt.warnings != nil {
			if msg := *got.Error; !strings.Contains(msg, tt.warnings[0]) {
				t.Errorf("%q: Error %q does not name %s", tt.email, msg, tt.warnings[0])
			}
		}
	}
}

// The strict verdict on a quoted form must never be served for the plain
// form (nor the reverse), although both normalize to john@acme-mail.com.
func TestCacheKeepsQuotedAndPlainApart(t *testing.T) {
	t.Parallel()
	f := setup(t)
	steps := []struct {
		mode     validation.Mode
		email    string
		valid    bool
		warnings []string
		cached   bool
	}{
		{validation.ModeStandard, `john@acme-mail.com`, true, nil, false},
		{validation.ModeStrict, `"john"@acme-mail.com`, false, []string{"quoted_string"}, false},
		{validation.ModeStrict, `john@acme-mail.com`, true, nil, false}, // other mode: other key
		{validation.ModeStrict, `john@acme-mail.com`, true, nil, true},
		{validation.ModeStandard, `"john"@acme-mail.com`, true, []string{"quoted_string"}, false},
		{validation.ModeStandard, `"john"@acme-mail.com`, true, []string{"quoted_string"}, true},
		{validation.ModeStandard, `john@acme-mail.com`, true, nil, true},
		{validation.ModeStrict, `"john"@acme-mail.com`, false, []string{"quoted_string"}, false},
	}
	for i, s := range steps {
		got := f.validate(t, s.mode, s.email)
		reason := ""
		if !s.valid {
			reason = validation.ReasonSyntax
		}
		check(t, s.email, got, s.valid, reason, s.warnings...)
		if got.Cached != s.cached {
			t.Errorf("step %d %s %q: Cached = %v, want %v", i, s.mode, s.email, got.Cached, s.cached)
		}
	}
}

func TestOffline(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *validation.Config) { c.Offline = true; c.Resolver = nil })
	for _, email := range []string{"jane@nowhere.net", "jane@nowhere.net"} {
		got := f.validate(t, validation.ModeStandard, email)
		check(t, email, got, true, "", "dns_not_checked")
		if got.Cached {
			t.Errorf("%q: offline verdict was cached", email)
		}
	}
	if f.srv.Queries() != 0 {
		t.Errorf("offline validation sent %d queries", f.srv.Queries())
	}
	got := f.validate(t, validation.ModeStandard, "a@example.com")
	check(t, "a@example.com", got, false, validation.ReasonReservedDomain)
}
