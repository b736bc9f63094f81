package account

import (
	"sync"
	"time"
)

// keyCacheTTL is how long a key checked against the database is trusted
// from memory. It bounds how late a revocation or a disabled account takes
// effect in a process that did not make the change (every process drops
// its whole cache when it makes one itself), at one database read per key
// per TTL instead of one per request.
const keyCacheTTL = 2 * time.Second

// keyCacheMax bounds the cache; a full cache is emptied, not grown.
const keyCacheMax = 10000

// keyCache maps a key's SHA-256 (never the key) to what the database said
// about it. Only keys that exist are cached: unknown keys would let anyone
// fill it.
type keyCache struct {
	mu sync.Mutex
	m  map[string]cachedKey
}

type cachedKey struct {
	key   Key
	acc   Account
	until time.Time
}

func (c *keyCache) get(hash string, now time.Time) (Key, Account, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[hash]
	if !ok || !now.Before(e.until) {
		return Key{}, Account{}, false
	}
	return e.key, e.acc, true
}

func (c *keyCache) put(hash string, k Key, a Account, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= keyCacheMax {
		c.m = map[string]cachedKey{}
	}
	c.m[hash] = cachedKey{key: k, acc: a, until: now.Add(keyCacheTTL)}
}

// touched records a last_used_at write, so the next requests within the
// TTL do not write again.
func (c *keyCache) touched(hash string, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[hash]; ok {
		e.key.LastUsedAt = &at
		c.m[hash] = e
	}
}

// clear forgets everything: after a revocation, a disabled or enabled
// account, the next request of every key reads the database.
func (c *keyCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m = nil
}
