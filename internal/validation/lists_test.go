package validation_test

import (
	"testing"

	"github.com/postline/postline/internal/validation"
)

func TestListsAndDisposable(t *testing.T) {
	t.Parallel()
	lists := validation.NewStaticLists(validation.ListEntries{
		BlockedDomains:   []string{"blocked-co.net", "Evil.Example.ORG.", "zip"},
		BlockedAddresses: []string{"Bad.Guy@acme-mail.com"},
		AllowedDomains:   []string{"mailinator.com"},
		AllowedAddresses: []string{"ok@blocked-co.net", " "},
	})
	f := setup(t, func(c *validation.Config) { c.Lists = lists })
	tests := []struct {
		email    string
		valid    bool
		reason   string
		warnings []string
		queries  bool // whether DNS is consulted
	}{
		{"x@yopmail.com", false, validation.ReasonDisposable, nil, false},
		{"x@a.b.yopmail.com", false, validation.ReasonDisposable, nil, false},        // every suffix
		{"x@sub.0-mailer.dynv6.net", false, validation.ReasonDisposable, nil, false}, // three-label entry
		{"x@dynv6.net", false, validation.ReasonNXDomain, nil, true},                 // a parent of an entry is not listed
		{"x@notyopmail.com", false, validation.ReasonNXDomain, nil, true},            // suffixes go by label
		{"x@blocked-co.net", false, validation.ReasonBlocklisted, nil, false},
		{"x@mx.blocked-co.net", false, validation.ReasonBlocklisted, nil, false},
		{"x@shop.zip", false, validation.ReasonBlocklisted, nil, false}, // a whole TLD
		{"bad.guy@acme-mail.com", false, validation.ReasonBlocklisted, nil, false},
		{"BAD.GUY@acme-mail.com", false, validation.ReasonBlocklisted, nil, false},
		{"good.guy@acme-mail.com", true, "", nil, true},
		{"x@mailinator.com", true, "", nil, true},                            // allow-list beats the disposable list
		{"x@eu.mailinator.com", false, validation.ReasonNXDomain, nil, true}, // allowed, then DNS decides
		{"ok@blocked-co.net", true, "", nil, true},                           // allowed address beats blocked domain
		{"a@example.org", false, validation.ReasonReservedDomain, nil, false},
	}
	for _, tt := range tests {
		before := f.srv.Queries()
		got := f.validate(t, validation.ModeStandard, tt.email)
		check(t, tt.email, got, tt.valid, tt.reason, tt.warnings...)
		if asked := f.srv.Queries() > before; asked != tt.queries {
			t.Errorf("%q: DNS asked = %v, want %v", tt.email, asked, tt.queries)
		}
	}
}

func TestRoleAndFreeWarnings(t *testing.T) {
	t.Parallel()
	f := setup(t)
	tests := []struct {
		email    string
		warnings []string
	}{
		{"admin@gmail.com", []string{"role_account", "free_provider"}},
		{"No-Reply+news@acme-mail.com", []string{"role_account"}},
		{"post.master@acme-mail.com", []string{"role_account"}},
		{"jane@outlook.com", []string{"free_provider"}},
		{"jane@acme-mail.com", nil},
		{"administrators@acme-mail.com", nil}, // not a listed role
		{"info@a-only.net", []string{"implicit_mx", "role_account"}},
	}
	for _, mode := range []validation.Mode{validation.ModeStandard, validation.ModeStrict} {
		for _, tt := range tests {
			got := f.validate(t, mode, tt.email)
			check(t, tt.email, got, true, "", tt.warnings...) // never invalid, even strict
		}
	}
	// Invalid addresses keep the annotations.
	got := f.validate(t, validation.ModeStrict, `"admin"@nowhere.net`)
	check(t, `"admin"@nowhere.net`, got, false, validation.ReasonSyntax, "quoted_string", "role_account")
}

func TestSuggestion(t *testing.T) {
	t.Parallel()
	f := setup(t)
	tests := []struct {
		email, suggestion string
		reason            string
	}{
		{"jane@gmial.com", "jane@gmail.com", validation.ReasonDisposable}, // gmial.com is on the list
		{"jane@hotmial.com", "jane@hotmail.com", validation.ReasonDisposable},
		{"jane@yaho.com", "jane@yahoo.com", validation.ReasonNXDomain},
		{"jane@gmail.con", "jane@gmail.com", validation.ReasonNXDomain},
		{"jane@outlok.com", "jane@outlook.com", validation.ReasonNXDomain},
		{`"jane doe"@gmial.com`, `"jane doe"@gmail.com`, validation.ReasonDisposable},
		{"jane@acme-mail.con", "jane@acme-mail.com", validation.ReasonNXDomain},
		{"jane@gmail.com", "", ""},
		{"jane@acme-mail.com", "", ""},
	}
	for _, tt := range tests {
		got := f.validate(t, validation.ModeStandard, tt.email)
		if got.Suggestion != tt.suggestion || got.Reason != tt.reason {
			t.Errorf("%q: got suggestion %q reason %q, want %q %q", tt.email, got.Suggestion, got.Reason, tt.suggestion, tt.reason)
		}
	}
}
