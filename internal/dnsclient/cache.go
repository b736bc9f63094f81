package dnsclient

import (
	"container/list"
	"sync"
	"time"

	"github.com/miekg/dns"
)

// Cache bounds. Positive answers live for their smallest TTL, negative ones
// for the SOA's negative TTL (RFC 2308 §5), both clamped to [minTTL, cap].
// Negative answers get the shorter cap because a domain owner who has just
// published a record (an MX, a verification TXT) should not wait an hour.
const (
	minTTL         = time.Second
	maxTTL         = time.Hour
	maxNegativeTTL = 5 * time.Minute
)

type cacheKey struct {
	name  string // normalized
	qtype uint16
}

// result is what a query produced and what the cache stores: the answer
// records of the asked type, or a failure kind with its rcode and cause.
// It is shared between callers and must not be modified.
type result struct {
	rrs  []dns.RR
	kind Kind // 0 for a positive answer
	// authenticated is the response's AD bit: the resolver validated the
	// answer with DNSSEC (RFC 4035 §3.2.3).
	authenticated bool
	rcode         int
	err           error         // cause of a Temporary result
	ttl           time.Duration // 0: do not cache (always so for Temporary)
}

type cacheEntry struct {
	key     cacheKey
	res     result
	expires time.Time
}

// cache is a bounded LRU of results. A nil *cache caches nothing.
type cache struct {
	mu    sync.Mutex
	size  int
	ll    *list.List // front = most recently used; values are *cacheEntry
	items map[cacheKey]*list.Element
}

func newCache(size int) *cache {
	if size <= 0 {
		return nil
	}
	return &cache{size: size, ll: list.New(), items: make(map[cacheKey]*list.Element)}
}

// get returns the unexpired result for key.
func (c *cache) get(key cacheKey, now time.Time) (result, bool) {
	if c == nil {
		return result{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		return result{}, false
	}
	e := el.Value.(*cacheEntry)
	if !now.Before(e.expires) {
		c.ll.Remove(el)
		delete(c.items, key)
		return result{}, false
	}
	c.ll.MoveToFront(el)
	return e.res, true
}

// put stores res until now+res.ttl, evicting the least recently used entry
// when full. Results with a zero ttl are not stored.
func (c *cache) put(key cacheKey, res result, now time.Time) {
	if c == nil || res.ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := &cacheEntry{key: key, res: res, expires: now.Add(res.ttl)}
	if el, ok := c.items[key]; ok {
		el.Value = e
		c.ll.MoveToFront(el)
		return
	}
	c.items[key] = c.ll.PushFront(e)
	for c.ll.Len() > c.size {
		last := c.ll.Back()
		c.ll.Remove(last)
		delete(c.items, last.Value.(*cacheEntry).key)
	}
}

// clampTTL converts a TTL in seconds and bounds it to [minTTL, limit].
func clampTTL(seconds uint32, limit time.Duration) time.Duration {
	d := time.Duration(seconds) * time.Second
	return min(max(d, minTTL), limit)
}
