package dnsclient_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/postline/postline/internal/dnsclient"
)

func TestCacheHonoursTTL(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.srv.SetTTL(60)
	f.srv.AddMX("example.com", 10, "mx.example.com")
	f.srv.SetNegativeTTL(30)
	f.srv.AddA("nomx.example.com", "192.0.2.1")

	tests := []struct {
		name     string
		ttl      time.Duration
		wantKind dnsclient.Kind
	}{
		{name: "example.com", ttl: 60 * time.Second},
		{name: "missing.example.com", ttl: 30 * time.Second, wantKind: dnsclient.NotFound},
		{name: "nomx.example.com", ttl: 30 * time.Second, wantKind: dnsclient.NoData},
	}
	for _, tt := range tests {
		lookup := func(when string) {
			t.Helper()
			_, err := f.r.LookupMX(context.Background(), tt.name)
			if (tt.wantKind == 0 && err != nil) || (tt.wantKind != 0 && !isKind(err, tt.wantKind)) {
				t.Fatalf("LookupMX(%q) %s: %v, want kind %v", tt.name, when, err, tt.wantKind)
			}
		}
		before := f.srv.Queries()
		lookup("first")
		f.clock.Advance(tt.ttl - time.Second)
		lookup("within TTL")
		if got := f.srv.Queries() - before; got != 1 {
			t.Errorf("LookupMX(%q) twice within TTL %v sent %d queries, want 1", tt.name, tt.ttl, got)
		}
		f.clock.Advance(time.Second)
		lookup("after TTL")
		if got := f.srv.Queries() - before; got != 2 {
			t.Errorf("LookupMX(%q) after TTL %v expired: %d queries in all, want 2", tt.name, tt.ttl, got)
		}
	}
}

func TestTemporaryIsNotCached(t *testing.T) {
	t.Parallel()
	f := setup(t)
	tests := []struct {
		name  string
		rcode int
	}{
		{"servfail.example", dns.RcodeServerFailure},
		{"refused.example", dns.RcodeRefused},
	}
	for _, tt := range tests {
		f.srv.SetRcode(tt.name, tt.rcode)
		before := f.srv.Queries()
		for range 2 {
			_, err := f.r.LookupTXT(context.Background(), tt.name)
			var e *dnsclient.Error
			if !errors.As(err, &e) || e.Kind != dnsclient.Temporary || e.Rcode != tt.rcode {
				t.Fatalf("LookupTXT(%q) = %v; want Temporary with rcode %d", tt.name, err, tt.rcode)
			}
		}
		if got := f.srv.Queries() - before; got != 2 {
			t.Errorf("two LookupTXT(%q) sent %d queries, want 2 (rcode %d not cached, not retried)", tt.name, got, tt.rcode)
		}
	}
}

func TestTimeoutIsTemporary(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *dnsclient.Config) { c.Timeout = 100 * time.Millisecond })
	f.srv.AddMX("slow.example", 10, "mx.slow.example")
	f.srv.SetDelay("slow.example", 5*time.Second)

	start := time.Now()
	_, err := f.r.LookupMX(context.Background(), "slow.example")
	elapsed := time.Since(start)
	if !dnsclient.IsTemporary(err) {
		t.Errorf("LookupMX(slow.example) = %v, want Temporary", err)
	}
	if elapsed > time.Second {
		t.Errorf("LookupMX(slow.example) took %v with 2 attempts of 100ms", elapsed)
	}
	if got := f.srv.Queries(); got != 2 {
		t.Errorf("queries = %d, want 2 (Attempts)", got)
	}
}

func TestContextCancel(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *dnsclient.Config) { c.Timeout = time.Second })
	f.srv.SetDelay("slow.example", 5*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()

	start := time.Now()
	_, err := f.r.LookupTXT(ctx, "slow.example")
	if !dnsclient.IsTemporary(err) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("LookupTXT with expiring ctx = %v, want Temporary wrapping DeadlineExceeded", err)
	}
	if elapsed := time.Since(start); elapsed > 500*time.Millisecond {
		t.Errorf("LookupTXT returned %v after its ctx expired at 50ms", elapsed)
	}
}

func TestConcurrentLookupsShareOneQuery(t *testing.T) {
	t.Parallel()
	// No cache, so only singleflight can explain a single query.
	f := setup(t, func(c *dnsclient.Config) { c.CacheSize = -1; c.Timeout = time.Second })
	f.srv.AddMX("example.com", 10, "mx.example.com")
	f.srv.SetDelay("example.com", 200*time.Millisecond)

	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for range 10 {
		wg.Go(func() {
			_, err := f.r.LookupMX(context.Background(), "Example.COM")
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("LookupMX: %v", err)
		}
	}
	if got := f.srv.Queries(); got != 1 {
		t.Errorf("10 concurrent lookups sent %d queries, want 1", got)
	}
}

func TestCacheEvictsLeastRecentlyUsed(t *testing.T) {
	t.Parallel()
	f := setup(t, func(c *dnsclient.Config) { c.CacheSize = 2 })
	for _, name := range []string{"a.example", "b.example", "c.example"} {
		f.srv.AddTXT(name, name)
	}
	steps := []struct {
		name        string
		wantQueries int
	}{
		{"a.example", 1},
		{"b.example", 2},
		{"a.example", 2}, // hit; b is now least recently used
		{"c.example", 3}, // evicts b
		{"a.example", 3},
		{"b.example", 4},
	}
	for i, s := range steps {
		if _, err := f.r.LookupTXT(context.Background(), s.name); err != nil {
			t.Fatalf("step %d LookupTXT(%q): %v", i, s.name, err)
		}
		if got := f.srv.Queries(); got != s.wantQueries {
			t.Errorf("step %d LookupTXT(%q): %d queries in all, want %d", i, s.name, got, s.wantQueries)
		}
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	t.Parallel()
	tests := []dnsclient.Config{
		{Server: "127.0.0.1:53", Timeout: -time.Second},
		{Server: "127.0.0.1:53", Attempts: -1},
		{Server: ":53"},
	}
	for _, cfg := range tests {
		if _, err := dnsclient.New(cfg); err == nil {
			t.Errorf("New(%+v) succeeded, want an error", cfg)
		}
	}
}
