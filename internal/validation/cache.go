package validation

import (
	"container/list"
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/emailaddr"
)

// cacheKey is "mode:normalized", lower-cased, followed by "#" and the RFC
// warnings when the address has any (see the package doc for why). Case is
// folded because nothing cached depends on it: the cached part of a
// verdict is the DNS outcome, and everything that reads the local part
// (role accounts, the score) is recomputed on every hit.
func cacheKey(mode Mode, a emailaddr.Address) string {
	k := string(mode) + ":" + strings.ToLower(a.Normalized())
	if len(a.Warnings) == 0 {
		return k
	}
	ws := make([]string, len(a.Warnings))
	for i, w := range a.Warnings {
		ws[i] = string(w)
	}
	return k + "#" + strings.Join(ws, ",")
}

// lookup returns a verdict cached under key: the LRU first, then Cache
// (refilling the LRU until the entry's original expiry).
func (v *Validator) lookup(ctx context.Context, key string) (Result, bool, error) {
	if v.refresh {
		return Result{}, false, nil
	}
	now := v.now()
	if v.lru != nil {
		if r, ok := v.lru.get(key, now); ok {
			return r, true, nil
		}
	}
	if v.cache == nil {
		return Result{}, false, nil
	}
	r, ok, err := v.cache.Get(ctx, key, now)
	if err != nil {
		return Result{}, false, apperr.Wrap(apperr.Unavailable, err, "validation: cache unavailable")
	}
	if ok && v.lru != nil {
		if exp := r.ValidatedAt.Add(v.ttl); exp.After(now) {
			v.lru.put(key, r, exp)
		}
	}
	return r, ok, nil
}

// ForgetCached empties the in-process copy of the cache, so the next
// lookups read the shared cache (after `postline cache purge` or
// `validate --refresh` changed it from another process).
func (v *Validator) ForgetCached() {
	if v.lru != nil {
		v.lru.clear()
	}
}

// store caches a definitive verdict for CacheTTL.
func (v *Validator) store(ctx context.Context, key string, r Result) error {
	exp := r.ValidatedAt.Add(v.ttl)
	if v.lru != nil {
		v.lru.put(key, r, exp)
	}
	if v.cache == nil {
		return nil
	}
	if err := v.cache.Put(ctx, key, r, exp); err != nil {
		return apperr.Wrap(apperr.Unavailable, err, "validation: cache unavailable")
	}
	return nil
}

// lru is a bounded, expiring, least-recently-used map of verdicts.
type lru struct {
	mu    sync.Mutex
	max   int
	order *list.List // front = most recently used; values are *lruEntry
	byKey map[string]*list.Element
}

type lruEntry struct {
	key     string
	r       Result
	expires time.Time
}

func newLRU(size int) *lru {
	return &lru{max: size, order: list.New(), byKey: make(map[string]*list.Element)}
}

// get returns a copy of the entry under key if it has not expired at now;
// an expired entry is dropped.
func (c *lru) get(key string, now time.Time) (Result, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[key]
	if !ok {
		return Result{}, false
	}
	e := el.Value.(*lruEntry)
	if !now.Before(e.expires) {
		c.order.Remove(el)
		delete(c.byKey, key)
		return Result{}, false
	}
	c.order.MoveToFront(el)
	r := e.r
	r.Warnings = slices.Clone(r.Warnings)
	return r, true
}

// put stores r under key until expires, evicting the least recently used
// entry when full.
func (c *lru) put(key string, r Result, expires time.Time) {
	r.Warnings = slices.Clone(r.Warnings)
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[key]; ok {
		el.Value = &lruEntry{key: key, r: r, expires: expires}
		c.order.MoveToFront(el)
		return
	}
	c.byKey[key] = c.order.PushFront(&lruEntry{key: key, r: r, expires: expires})
	if c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.byKey, last.Value.(*lruEntry).key)
	}
}

func (c *lru) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// MemoryCache is an in-process Cache (for the CLI and tests): an expiring
// LRU of at most MemoryCacheSize entries. It never fails.
type MemoryCache struct{ lru *lru }

// MemoryCacheSize bounds a MemoryCache.
const MemoryCacheSize = 100_000

var _ Cache = (*MemoryCache)(nil)

// NewMemoryCache returns an empty MemoryCache.
func NewMemoryCache() *MemoryCache { return &MemoryCache{lru: newLRU(MemoryCacheSize)} }

// Get implements Cache.
func (m *MemoryCache) Get(_ context.Context, key string, now time.Time) (Result, bool, error) {
	r, ok := m.lru.get(key, now)
	return r, ok, nil
}

// Put implements Cache.
func (m *MemoryCache) Put(_ context.Context, key string, r Result, expires time.Time) error {
	m.lru.put(key, r, expires)
	return nil
}

// Len returns the number of entries, expired ones included until evicted.
func (m *MemoryCache) Len() int { return m.lru.len() }

func (c *lru) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.order.Init()
	clear(c.byKey)
}
