package validation_test

import (
	"context"
	"errors"
	"github.com/postline/postline/internal/testutil/clock"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/postline/postline/internal/dnsclient"
	"github.com/postline/postline/internal/dnstest"
	"github.com/postline/postline/internal/validation"
)

// t0 is the fake clock's start.
var t0 = time.Date(2026, 3, 4, 5, 6, 7, 891_234_567, time.UTC)

// fixture is what every test gets: a DNS server with the zone below, a
// fake clock, a counting in-memory Cache and a validator using them.
type fixture struct {
	srv   *dnstest.Server
	clock *clock.Fake
	cache *countingCache
	cfg   validation.Config
	v     *validation.Validator
}

// setup builds a fixture; mod adjusts the config before New.
func setup(t testing.TB, mod ...func(*validation.Config)) *fixture {
	t.Helper()
	srv := dnstest.New(t)
	zone(srv)
	clock := clock.New(t0)
	res, err := dnsclient.New(dnsclient.Config{
		Server: srv.Addr(), Timeout: 200 * time.Millisecond, Attempts: 1, NowFunc: clock.Now,
	})
	if err != nil {
		t.Fatalf("dnsclient.New: %v", err)
	}
	f := &fixture{srv: srv, clock: clock, cache: newCountingCache()}
	f.cfg = validation.Config{Resolver: res, Cache: f.cache, Now: clock.Now}
	for _, m := range mod {
		m(&f.cfg)
	}
	if f.v, err = validation.New(f.cfg); err != nil {
		t.Fatalf("validation.New: %v", err)
	}
	return f
}

// zone is the test DNS data.
func zone(s *dnstest.Server) {
	for _, d := range []string{"acme-mail.com", "acme-mail.org", "gmail.com", "outlook.com", "mailinator.com", "blocked-co.net"} {
		s.AddMX(d, 10, "mx."+d)
	}
	s.AddMX("nullmx.org", 0, ".")
	s.AddA("a-only.net", "192.0.2.10")
	s.AddAAAA("aaaa-only.net", "2001:db8::25")
	s.AddA("loopback-only.net", "127.0.0.1")
	s.AddTXT("bare.net", "v=spf1 -all") // exists, but no MX, A or AAAA
	s.SetRcode("servfail.net", dns.RcodeServerFailure)
	s.SetRcode("refused.net", dns.RcodeRefused)
}

// validate runs one validation and fails the test on an error.
func (f *fixture) validate(t testing.TB, mode validation.Mode, email string) validation.Result {
	t.Helper()
	r, err := f.v.Validate(context.Background(), mode, email)
	if err != nil {
		t.Fatalf("Validate(%s, %q): %v", mode, email, err)
	}
	return r
}

// countingCache is a MemoryCache that counts Get and Put calls per key.
type countingCache struct {
	*validation.MemoryCache
	mu         sync.Mutex
	gets, puts map[string]int
}

func newCountingCache() *countingCache {
	return &countingCache{MemoryCache: validation.NewMemoryCache(), gets: map[string]int{}, puts: map[string]int{}}
}

func (c *countingCache) Get(ctx context.Context, key string, now time.Time) (validation.Result, bool, error) {
	c.mu.Lock()
	c.gets[key]++
	c.mu.Unlock()
	return c.MemoryCache.Get(ctx, key, now)
}

func (c *countingCache) Put(ctx context.Context, key string, r validation.Result, exp time.Time) error {
	c.mu.Lock()
	c.puts[key]++
	c.mu.Unlock()
	return c.MemoryCache.Put(ctx, key, r, exp)
}

func (c *countingCache) counts(key string) (gets, puts int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gets[key], c.puts[key]
}

// brokenCache fails every call.
type brokenCache struct{}

var errBroken = errors.New("database is down")

func (brokenCache) Get(context.Context, string, time.Time) (validation.Result, bool, error) {
	return validation.Result{}, false, errBroken
}

func (brokenCache) Put(context.Context, string, validation.Result, time.Time) error { return errBroken }
