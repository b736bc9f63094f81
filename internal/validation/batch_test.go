package validation_test

import (
	"errors"
	"testing"

	"github.com/postline/postline/internal/validation"
)

func TestBatch(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.validate(t, validation.ModeStrict, "c@acme-mail.com") // cached before the batch

	emails := []string{
		"c@acme-mail.com",   // cached
		"a@acme-mail.com",   // validated
		"a@ACME-mail.com",   // same key as the previous: validated once, counted validated
		"not-an-address",    // syntax
		"x@nowhere.net",     // nxdomain
		"c@acme-mail.com",   // cached again
		`"q"@acme-mail.com`, // strict: syntax
		"x@servfail.net",    // dns_unavailable
		"not-an-address",    // repeat of an uncached invalid entry
	}
	type want struct {
		valid, cached bool
		reason        string
	}
	wants := []want{
		{true, true, ""},
		{true, false, ""},
		{true, false, ""},
		{false, false, validation.ReasonSyntax},
		{false, false, validation.ReasonNXDomain},
		{true, true, ""},
		{false, false, validation.ReasonSyntax},
		{false, false, validation.ReasonDNSUnavailable},
		{false, false, validation.ReasonSyntax},
	}
	results, sum, err := f.v.ValidateBatch(t.Context(), validation.ModeStrict, emails)
	if err != nil {
		t.Fatalf("ValidateBatch: %v", err)
	}
	if len(results) != len(emails) {
		t.Fatalf("%d results for %d entries", len(results), len(emails))
	}
	for i, r := range results {
		w := wants[i]
		if r.Email != emails[i] || r.IsValid != w.valid || r.Cached != w.cached || r.Reason != w.reason {
			t.Errorf("entry %d %q: got email=%q valid=%v cached=%v reason=%q, want valid=%v cached=%v reason=%q",
				i, emails[i], r.Email, r.IsValid, r.Cached, r.Reason, w.valid, w.cached, w.reason)
		}
	}
	wantSum := validation.Summary{Total: 9, Valid: 4, Invalid: 5, Cached: 2, Validated: 7}
	if sum != wantSum {
		t.Errorf("summary = %+v, want %+v", sum, wantSum)
	}
	if sum.Valid+sum.Invalid != sum.Total || sum.Cached+sum.Validated != sum.Total {
		t.Errorf("summary arithmetic broken: %+v", sum)
	}
	// The repeated key was looked up (and stored) once.
	if gets, puts := f.cache.counts("strict:a@acme-mail.com"); gets != 1 || puts != 1 {
		t.Errorf("repeated entry: %d cache reads, %d writes, want 1 and 1", gets, puts)
	}
	// A second run of the same batch: everything DNS-backed is now cached.
	_, sum, err = f.v.ValidateBatch(t.Context(), validation.ModeStrict, emails)
	if err != nil {
		t.Fatal(err)
	}
	if want := (validation.Summary{Total: 9, Valid: 4, Invalid: 5, Cached: 5, Validated: 4}); sum != want {
		t.Errorf("second run summary = %+v, want %+v", sum, want)
	}
}

func TestBatchResultsDoNotAlias(t *testing.T) {
	t.Parallel()
	f := setup(t)
	results, _, err := f.v.ValidateBatch(t.Context(), validation.ModeStandard,
		[]string{"info@acme-mail.com", "info@acme-mail.com"})
	if err != nil {
		t.Fatal(err)
	}
	results[0].Warnings[0] = "changed"
	if results[1].Warnings[0] != "role_account" {
		t.Errorf("entries share their Warnings slice: %q", results[1].Warnings)
	}
}

func TestBatchEmptyAndErrors(t *testing.T) {
	t.Parallel()
	f := setup(t)
	results, sum, err := f.v.ValidateBatch(t.Context(), validation.ModeStandard, nil)
	if err != nil || len(results) != 0 || sum != (validation.Summary{}) {
		t.Errorf("empty batch: %v %+v %v", results, sum, err)
	}
	broken := setup(t, func(c *validation.Config) { c.Cache = brokenCache{} })
	if _, _, err := broken.v.ValidateBatch(t.Context(), validation.ModeStandard, []string{"a@acme-mail.com", "bad"}); !errors.Is(err, errBroken) {
		t.Errorf("batch with a broken cache: err = %v", err)
	}
}
