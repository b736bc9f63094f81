package validation_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/validation"
)

func TestCacheHitKeepsValidatedAt(t *testing.T) {
	t.Parallel()
	f := setup(t)
	const email = "jane@acme-mail.com"
	first := f.validate(t, validation.ModeStandard, email)
	want := t0.Truncate(time.Millisecond)
	if first.Cached || !first.ValidatedAt.Equal(want) || first.ValidatedAt.Location() != time.UTC {
		t.Fatalf("first: Cached=%v ValidatedAt=%v, want false %v UTC", first.Cached, first.ValidatedAt, want)
	}
	queries := f.srv.Queries()
	f.clock.Advance(time.Hour)
	second := f.validate(t, validation.ModeStandard, email)
	if !second.Cached || !second.ValidatedAt.Equal(want) {
		t.Errorf("second: Cached=%v ValidatedAt=%v, want true %v", second.Cached, second.ValidatedAt, want)
	}
	if f.srv.Queries() != queries {
		t.Errorf("a cache hit sent %d DNS queries", f.srv.Queries()-queries)
	}

	// Another process (own LRU) sharing the Cache gets the same answer.
	cfg := f.cfg
	cfg.LRUSize = -1
	other, err := validation.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	third, err := other.Validate(t.Context(), validation.ModeStandard, email)
	if err != nil || !third.Cached || !third.ValidatedAt.Equal(want) {
		t.Errorf("shared Cache: Cached=%v ValidatedAt=%v err=%v, want true %v", third.Cached, third.ValidatedAt, err, want)
	}

	// After CacheTTL the verdict is fresh again (the DNS cache is long
	// expired too, so DNS is asked).
	f.clock.Advance(7 * 24 * time.Hour)
	fourth := f.validate(t, validation.ModeStandard, email)
	if fourth.Cached || !fourth.ValidatedAt.After(want) {
		t.Errorf("after TTL: Cached=%v ValidatedAt=%v, want a fresh verdict", fourth.Cached, fourth.ValidatedAt)
	}
}

func TestCacheStoresOnlyDNSVerdicts(t *testing.T) {
	t.Parallel()
	f := setup(t)
	tests := []struct {
		email  string
		cached bool
	}{
		{"jane@acme-mail.com", true},
		{"jane@nowhere.net", true},   // nxdomain is definitive
		{"jane@nullmx.org", true},    // so is null MX
		{"jane@bare.net", true},      // and no_mail_server
		{"jane@servfail.net", false}, // temporary: never
		{"jane@yopmail.com", false},  // decided without DNS: recomputed
		{"jane@example.com", false},  // reserved
		{"not an address", false},    // syntax
		{"jane@[8.8.8.8]", false},    // literal
		{"Jane@acme-mail.com", true}, // local-part case is kept in the key
		{"jane@ACME-MAIL.COM", true}, // domain case is not: a hit
	}
	for _, tt := range tests {
		f.validate(t, validation.ModeStandard, tt.email)
		got := f.validate(t, validation.ModeStandard, tt.email)
		if got.Cached != tt.cached {
			t.Errorf("%q twice: Cached = %v, want %v", tt.email, got.Cached, tt.cached)
		}
		if got.Email != tt.email {
			t.Errorf("%q: cached Email = %q", tt.email, got.Email)
		}
	}
}

func TestCacheFailureIsAnError(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *validation.Config) { c.Cache = brokenCache{} })
	_, err := f.v.Validate(t.Context(), validation.ModeStandard, "jane@acme-mail.com")
	if !errors.Is(err, errBroken) || apperr.CodeOf(err) != apperr.Unavailable {
		t.Errorf("Validate with a broken cache: err = %v (code %q), want Unavailable wrapping errBroken", err, apperr.CodeOf(err))
	}
	// Verdicts that never touch the cache still work.
	if _, err := f.v.Validate(t.Context(), validation.ModeStandard, "jane@example.com"); err != nil {
		t.Errorf("reserved address with a broken cache: %v", err)
	}
}

func TestCanceledContext(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := f.v.Validate(ctx, validation.ModeStandard, "jane@acme-mail.com"); !errors.Is(err, context.Canceled) {
		t.Errorf("Validate with a canceled context: err = %v, want context.Canceled", err)
	}
}
