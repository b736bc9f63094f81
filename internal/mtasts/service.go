package mtasts

import (
	"cmp"
	"context"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// Timings of the cache (see the package documentation).
const (
	maxRefresh   = 24 * time.Hour  // a cached policy is fetched again at least daily
	retryFailed  = 5 * time.Minute // after a failed refresh, the cached policy is used this long
	memoTTL      = time.Minute     // a process reuses its answer for a domain this long
	memoCapacity = 10000           // domains remembered at once; past it the memo starts afresh
)

// Resolver is the DNS the Service needs; *dnsclient.Resolver satisfies it.
type Resolver interface {
	LookupTXT(ctx context.Context, name string) ([]string, error)
	LookupIP(ctx context.Context, host string) ([]netip.Addr, error)
}

// Cached is a fetched policy as the Store keeps it.
type Cached struct {
	Domain    string
	ID        string    // the TXT record's id it was fetched under
	Body      string    // the policy as served
	FetchedAt time.Time // when it was fetched
	ExpiresAt time.Time // FetchedAt + max_age: not used past it
	RefreshAt time.Time // when to fetch it again (before ExpiresAt)
}

// Store keeps fetched policies (the database, so that they survive
// restarts and processes share them).
type Store interface {
	// LoadPolicy returns the policy kept for domain, if any.
	LoadPolicy(ctx context.Context, domain string) (Cached, bool, error)
	// SavePolicy keeps c for c.Domain, replacing what was kept.
	SavePolicy(ctx context.Context, c Cached) error
}

// Config configures a Service. Resolver and Store are required.
type Config struct {
	Resolver Resolver
	Store    Store
	// Port is the HTTPS port of policy hosts. Default 443 (tests use
	// their own).
	Port int
	// RootCAs verifies policy hosts' certificates; nil means the system's
	// roots (SSL_CERT_FILE when set).
	RootCAs *x509.CertPool
	// AllowPrivate lets fetches connect to non-public addresses.
	AllowPrivate bool
	// Timeout bounds one fetch. Default 20s.
	Timeout time.Duration
	// Now is the clock of the cache. Default time.Now.
	Now func() time.Time
	// Logger receives failed fetches and unreadable policies. Default:
	// discarded.
	Logger *slog.Logger
}

// Service finds domains' policies. It is safe for concurrent use.
type Service struct {
	cfg   Config
	fetch *fetcher
	group singleflight.Group

	mu   sync.Mutex
	memo map[string]memoEntry
}

type memoEntry struct {
	p     Policy
	ok    bool
	until time.Time
}

// New checks cfg, fills in its defaults and returns a Service.
func New(cfg Config) (*Service, error) {
	if cfg.Resolver == nil || cfg.Store == nil {
		return nil, errors.New("mtasts: Config.Resolver and Config.Store are required")
	}
	if cfg.Port < 0 || cfg.Port > 65535 {
		return nil, errors.New("mtasts: Port is not a port")
	}
	cfg.Port = cmp.Or(cfg.Port, 443)
	cfg.Timeout = cmp.Or(cfg.Timeout, 20*time.Second)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Service{cfg: cfg, fetch: newFetcher(cfg), memo: make(map[string]memoEntry)}, nil
}

// Policy returns domain's policy, and false when it has none (no record
// and nothing cached, or nothing usable could be fetched).
func (s *Service) Policy(ctx context.Context, domain string) (Policy, bool) {
	now := s.cfg.Now()
	s.mu.Lock()
	m, hit := s.memo[domain]
	s.mu.Unlock()
	if hit && now.Before(m.until) {
		return m.p, m.ok
	}
	p, ok, until := s.find(ctx, domain, now)
	if ctx.Err() == nil {
		s.mu.Lock()
		if len(s.memo) >= memoCapacity {
			s.memo = make(map[string]memoEntry)
		}
		s.memo[domain] = memoEntry{p: p, ok: ok, until: until}
		s.mu.Unlock()
	}
	return p, ok
}

// find runs the steps of the package documentation; until is how long
// the answer may be reused.
func (s *Service) find(ctx context.Context, domain string, now time.Time) (Policy, bool, time.Time) {
	until := now.Add(memoTTL)
	txts, dnsErr := s.cfg.Resolver.LookupTXT(ctx, "_mta-sts."+domain)
	id, recErr := "", dnsErr
	if dnsErr == nil {
		id, recErr = FindRecord(txts)
	}
	cached, valid := s.load(ctx, domain, now)
	var cp Policy
	if valid {
		cp, valid = s.parse(cached)
		if valid {
			until = minTime(until, cached.ExpiresAt)
		}
	}
	switch {
	case recErr != nil && valid:
		return cp, true, until // no record now, or DNS failed: keep the cached policy
	case recErr != nil:
		return Policy{}, false, until
	case valid && cached.ID == id && now.Before(cached.RefreshAt):
		return cp, true, until
	}
	v, _, _ := s.group.Do(domain, func() (any, error) { return s.refresh(ctx, domain, id, now, cached, valid), nil })
	r := v.(refreshed)
	return r.p, r.ok, r.until
}

type refreshed struct {
	p     Policy
	ok    bool
	until time.Time
}

// refresh fetches and stores domain's policy under id; on failure it
// falls back to the cached one (valid says whether it may be used).
func (s *Service) refresh(ctx context.Context, domain, id string, now time.Time, cached Cached, valid bool) refreshed {
	body, err := s.fetch.fetch(ctx, domain)
	var p Policy
	if err == nil {
		p, err = Parse(body)
	}
	if err != nil {
		s.cfg.Logger.Info("MTA-STS policy fetch failed", "domain", domain, "error", err, "cached_policy_used", valid)
		// Not again for a while, in this process (the answer is
		// remembered) and, for a due refresh, in the others (RefreshAt).
		until := now.Add(retryFailed)
		if !valid {
			return refreshed{until: until}
		}
		if cached.ID == id {
			cached.RefreshAt = until
			s.save(ctx, cached)
		}
		cp, _ := s.parse(cached)
		return refreshed{p: cp, ok: true, until: minTime(until, cached.ExpiresAt)}
	}
	p.ID = id
	c := Cached{Domain: domain, ID: id, Body: body, FetchedAt: now, ExpiresAt: now.Add(p.MaxAge),
		RefreshAt: now.Add(min(p.MaxAge/2, maxRefresh))}
	s.save(ctx, c)
	return refreshed{p: p, ok: true, until: now.Add(memoTTL)}
}

// load returns the stored policy and whether it is unexpired.
func (s *Service) load(ctx context.Context, domain string, now time.Time) (Cached, bool) {
	c, ok, err := s.cfg.Store.LoadPolicy(ctx, domain)
	if err != nil {
		s.cfg.Logger.Warn("reading the cached MTA-STS policy failed", "domain", domain, "error", err)
		return Cached{}, false
	}
	return c, ok && now.Before(c.ExpiresAt)
}

func (s *Service) save(ctx context.Context, c Cached) {
	if err := s.cfg.Store.SavePolicy(ctx, c); err != nil {
		s.cfg.Logger.Warn("caching the MTA-STS policy failed", "domain", c.Domain, "error", err)
	}
}

// parse reads a cached body; a body that no longer parses is no policy.
func (s *Service) parse(c Cached) (Policy, bool) {
	p, err := Parse(c.Body)
	if err != nil {
		s.cfg.Logger.Warn("cached MTA-STS policy unreadable", "domain", c.Domain, "error", err)
		return Policy{}, false
	}
	p.ID = c.ID
	return p, true
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
