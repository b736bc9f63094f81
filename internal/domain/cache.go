package domain

import (
	"context"
	"sync"
	"time"
)

// ownedCache keeps AccountDomain's answers for a moment. Every request
// to a domain's routes (a send, a log page, the domain itself) starts by
// reading the caller's domain; on PostgreSQL that is a round trip a
// request, and on SQLite a read of a row with two secrets to open.
//
// What it may serve is bounded:
//   - any domain write made through this Service (claims, verification,
//     settings, deletion, the claim sweep) empties it before returning,
//     and a read that began before such a write is not stored;
//   - an answer is at most ttl old: a change another process made (the
//     CLI, another serve on PostgreSQL) is seen within it;
//   - only found domains are kept: a domain added anywhere is found at
//     once.
//
// What the cached domain decides is checked again where it matters: the
// delivery worker reads the domain by id before every attempt.
type ownedCache struct {
	ttl time.Duration
	mu  sync.Mutex
	gen uint64 // advanced by every write
	m   map[ownedKey]ownedEntry
}

type ownedKey struct {
	account int64
	name    string
}

type ownedEntry struct {
	d     Domain
	until time.Time
}

const ownedCacheMax = 10000 // entries; a full cache starts over

func newOwnedCache(ttl time.Duration) *ownedCache {
	return &ownedCache{ttl: ttl, m: map[ownedKey]ownedEntry{}}
}

// get returns the cached domain, or the generation a read made now must
// be stored under.
func (c *ownedCache) get(k ownedKey, now time.Time) (Domain, uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[k]
	if ok && now.Before(e.until) {
		return e.d, c.gen, true
	}
	return Domain{}, c.gen, false
}

func (c *ownedCache) put(k ownedKey, d Domain, gen uint64, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return // a write came while it was read
	}
	if len(c.m) >= ownedCacheMax {
		clear(c.m)
	}
	c.m[k] = ownedEntry{d: d, until: now.Add(c.ttl)}
}

// written forgets everything: a write may change any account's view (a
// verification ends other accounts' claims).
func (c *ownedCache) written() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	clear(c.m)
}

// cachingStore is the Store with AccountDomain served through the cache.
type cachingStore struct {
	Store
	c *ownedCache
}

func (s cachingStore) AccountDomain(ctx context.Context, accountID int64, name string) (Domain, error) {
	k := ownedKey{accountID, name}
	now := time.Now() // real time even when tests hold the service's clock
	d, gen, ok := s.c.get(k, now)
	if ok {
		return d, nil
	}
	d, err := s.Store.AccountDomain(ctx, accountID, name)
	if err == nil {
		s.c.put(k, d, gen, now)
	}
	return d, err
}

func (s cachingStore) CreateDomain(ctx context.Context, d Domain) (Domain, error) {
	defer s.c.written()
	return s.Store.CreateDomain(ctx, d)
}

func (s cachingStore) UpdateDomain(ctx context.Context, d Domain) error {
	defer s.c.written()
	return s.Store.UpdateDomain(ctx, d)
}

func (s cachingStore) VerifyDomain(ctx context.Context, d Domain, reason string) error {
	defer s.c.written()
	return s.Store.VerifyDomain(ctx, d, reason)
}

func (s cachingStore) DeleteDomain(ctx context.Context, id int64) error {
	defer s.c.written()
	return s.Store.DeleteDomain(ctx, id)
}

func (s cachingStore) DeleteExpiredClaims(ctx context.Context, now time.Time) (int64, error) {
	defer s.c.written()
	return s.Store.DeleteExpiredClaims(ctx, now)
}

func (s cachingStore) SaveDNSCheck(ctx context.Context, id int64, c *DNSCheck) error {
	defer s.c.written()
	return s.Store.SaveDNSCheck(ctx, id, c)
}
