package mtasts_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/postline/postline/internal/dnsclient"
	"github.com/postline/postline/internal/dnstest"
	"github.com/postline/postline/internal/mtasts"
	"github.com/postline/postline/internal/mtasts/mtaststest"
	"github.com/postline/postline/internal/smtptest"
	"github.com/postline/postline/internal/testutil/clock"
)

const enforce = "version: STSv1\r\nmode: enforce\r\nmx: mx.example.test\r\nmax_age: 86400\r\n"

type fixture struct {
	dns   *dnstest.Server
	web   *mtaststest.Server
	store *mtaststest.MemStore
	clock *clock.Fake
	svc   *mtasts.Service
}

// setup serves example.test's enforce policy (id "one") from a policy
// server at 127.0.0.1 with a certificate from a CA the service trusts.
func setup(t *testing.T, mod ...func(*mtasts.Config)) *fixture {
	t.Helper()
	ca := smtptest.NewCA(t)
	f := &fixture{dns: dnstest.New(t), web: mtaststest.New(t, ca), store: &mtaststest.MemStore{},
		clock: clock.New(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))}
	f.dns.AddTXT("_mta-sts.example.test", "v=STSv1; id=one;")
	f.dns.AddA("mta-sts.example.test", "127.0.0.1")
	f.web.SetPolicy("example.test", enforce)
	res, err := dnsclient.New(dnsclient.Config{Server: f.dns.Addr(), Timeout: time.Second, CacheSize: -1})
	if err != nil {
		t.Fatal(err)
	}
	cfg := mtasts.Config{Resolver: res, Store: f.store, Port: f.web.Port(), RootCAs: ca.Pool(),
		AllowPrivate: true, Timeout: 5 * time.Second, Now: f.clock.Now}
	for _, m := range mod {
		m(&cfg)
	}
	if f.svc, err = mtasts.New(cfg); err != nil {
		t.Fatal(err)
	}
	return f
}

// policy asks for example.test's policy after the process memo's minute.
func (f *fixture) policy(t *testing.T) (mtasts.Policy, bool) {
	t.Helper()
	f.clock.Advance(61 * time.Second)
	return f.svc.Policy(context.Background(), "example.test")
}

func TestPolicyFetchedAndCached(t *testing.T) {
	t.Parallel()
	f := setup(t)
	p, ok := f.svc.Policy(context.Background(), "example.test")
	if !ok || p.Mode != mtasts.ModeEnforce || p.ID != "one" || !p.Matches("mx.example.test") {
		t.Fatalf("Policy = %+v, %v; want enforce, id one, mx.example.test", p, ok)
	}
	c := f.stored()
	if c.ID != "one" || c.Body != enforce || !c.ExpiresAt.Equal(f.clock.Now().Add(24*time.Hour)) ||
		!c.RefreshAt.Equal(f.clock.Now().Add(12*time.Hour)) {
		t.Errorf("stored %+v; want id one, the body, expiry in max_age (24h), refresh at half (12h)", c)
	}
	if p, ok := f.policy(t); !ok || p.Mode != mtasts.ModeEnforce || f.web.Fetches() != 1 {
		t.Errorf("second Policy = %+v, %v after %d fetches; want the cached policy, one fetch", p, ok, f.web.Fetches())
	}
	// The record's id changes: the policy is fetched again.
	f.web.SetPolicy("example.test", "version: STSv1\nmode: testing\nmx: mx.example.test\nmax_age: 600\n")
	f.setRecord("v=STSv1; id=two")
	if p, ok := f.policy(t); !ok || p.Mode != mtasts.ModeTesting || p.ID != "two" || f.web.Fetches() != 2 {
		t.Errorf("Policy after a new id = %+v, %v (%d fetches); want testing under id two, fetched again", p, ok, f.web.Fetches())
	}
}

// setRecord replaces example.test's _mta-sts TXT records ("" removes them).
func (f *fixture) setRecord(txt string) {
	f.dns.Remove("_mta-sts.example.test", dns.TypeTXT)
	if txt != "" {
		f.dns.AddTXT("_mta-sts.example.test", txt)
	}
}

func TestPolicyMemo(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.svc.Policy(context.Background(), "example.test")
	f.setRecord("v=STSv1; id=two")
	f.clock.Advance(30 * time.Second)
	if p, ok := f.svc.Policy(context.Background(), "example.test"); !ok || p.ID != "one" || f.web.Fetches() != 1 {
		t.Errorf("Policy within a minute = %+v, %v (%d fetches); want the remembered answer", p, ok, f.web.Fetches())
	}
}

func TestPolicyRefreshBeforeExpiry(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.svc.Policy(context.Background(), "example.test")
	f.clock.Advance(12 * time.Hour) // the refresh time: half of max_age
	if _, ok := f.policy(t); !ok || f.web.Fetches() != 2 {
		t.Fatalf("Policy at refresh time: ok %v, %d fetches; want the policy fetched again", ok, f.web.Fetches())
	}
	if c := f.stored(); !c.ExpiresAt.Equal(f.clock.Now().Add(24 * time.Hour)) {
		t.Errorf("expiry after the refresh = %v, want %v", c.ExpiresAt, f.clock.Now().Add(24*time.Hour))
	}
}

func TestPolicyCachedWhenFetchFails(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.svc.Policy(context.Background(), "example.test")
	f.web.Set("example.test", serverError)
	f.setRecord("v=STSv1; id=two") // a new id, but the server fails
	if p, ok := f.policy(t); !ok || p.ID != "one" || p.Mode != mtasts.ModeEnforce || f.web.Fetches() != 2 {
		t.Fatalf("Policy with a failing server = %+v, %v (%d fetches); want the cached policy after one try", p, ok, f.web.Fetches())
	}
	if p, ok := f.policy(t); !ok || p.ID != "one" || f.web.Fetches() != 2 {
		t.Errorf("Policy a minute later = %+v, %v (%d fetches); want the cached policy, no new try within 5 minutes", p, ok, f.web.Fetches())
	}
	f.clock.Advance(5 * time.Minute)
	if _, ok := f.policy(t); !ok || f.web.Fetches() != 3 {
		t.Errorf("Policy after 5 minutes: ok %v, %d fetches; want another try", ok, f.web.Fetches())
	}
}

var serverError = mtaststest.Response{Status: 500, Body: "oops"}

func TestPolicyCachedWhenRecordGone(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.svc.Policy(context.Background(), "example.test")
	f.setRecord("")
	if p, ok := f.policy(t); !ok || p.Mode != mtasts.ModeEnforce {
		t.Fatalf("Policy without the record = %+v, %v; want the cached policy until it expires", p, ok)
	}
	f.dns.SetRcode("_mta-sts.example.test", dns.RcodeServerFailure)
	if _, ok := f.policy(t); !ok {
		t.Error("Policy with a failing DNS lookup: none; want the cached policy")
	}
	f.clock.Advance(24 * time.Hour)
	if p, ok := f.policy(t); ok {
		t.Errorf("Policy after max_age without the record = %+v; want none", p)
	}
	if f.web.Fetches() != 1 {
		t.Errorf("%d fetches, want 1: no record, nothing to fetch", f.web.Fetches())
	}
}

func TestNoPolicy(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		records     []string // nil keeps "v=STSv1; id=one;"
		resp        *mtaststest.Response
		mod         func(*mtasts.Config)
		wantFetches int // requests that reach the policy server
	}{
		{name: "no record", records: []string{}},
		{name: "no v=STSv1 record", records: []string{"v=spf1 -all"}},
		{name: "two records", records: []string{"v=STSv1; id=a", "v=STSv1; id=b"}},
		{name: "HTTP 404", resp: &mtaststest.Response{Status: 404}, wantFetches: 1},
		{name: "redirect not followed", resp: &mtaststest.Response{Status: 302, Location: "https://mta-sts.example.test/p"}, wantFetches: 1},
		{name: "not text/plain", resp: &mtaststest.Response{Body: enforce, ContentType: "text/html"}, wantFetches: 1},
		{name: "body past 64 KiB", resp: &mtaststest.Response{Body: enforce + strings.Repeat("x: y\n", 14000)}, wantFetches: 1},
		{name: "unparsable policy", resp: &mtaststest.Response{Body: "version: STSv1\nmode: enforce\n"}, wantFetches: 1},
		// A body that never ends, slowly (under 64 KiB): the fetch's
		// timeout ends it, and Policy answers.
		{name: "body that never ends", resp: &mtaststest.Response{Body: enforce, Endless: true}, wantFetches: 1,
			mod: func(c *mtasts.Config) { c.Timeout = time.Second }},
		// The handshake fails before any request.
		{name: "certificate from an untrusted CA", mod: func(c *mtasts.Config) { c.RootCAs = smtptest.NewCA(t).Pool() }},
		// Never connected: mta-sts.example.test is at 127.0.0.1.
		{name: "loopback refused without AllowPrivate", mod: func(c *mtasts.Config) { c.AllowPrivate = false }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var mods []func(*mtasts.Config)
			if tt.mod != nil {
				mods = append(mods, tt.mod)
			}
			f := setup(t, mods...)
			if tt.records != nil {
				f.setRecord("")
				for _, r := range tt.records {
					f.dns.AddTXT("_mta-sts.example.test", r)
				}
			}
			if tt.resp != nil {
				f.web.Set("example.test", *tt.resp)
			}
			if p, ok := f.svc.Policy(context.Background(), "example.test"); ok {
				t.Errorf("Policy = %+v, want none", p)
			}
			if _, ok, _ := f.store.LoadPolicy(context.Background(), "example.test"); ok {
				t.Error("a policy was cached")
			}
			if got := f.web.Fetches(); got != tt.wantFetches {
				t.Errorf("%d requests reached the policy server, want %d", got, tt.wantFetches)
			}
		})
	}
}

// stored is what the store holds for example.test.
func (f *fixture) stored() mtasts.Cached {
	c, _, _ := f.store.LoadPolicy(context.Background(), "example.test")
	return c
}
