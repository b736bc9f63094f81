package sending

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"sync"
	"time"
)

// sendCache keeps recently used sends so that a send to many recipients is
// loaded once, not once per recipient.
type sendCache struct {
	store  Store
	size   int // sends kept at most
	budget int // attachment bytes kept at most, beyond the newest send
	mu     sync.Mutex
	items  map[int64]cachedSend
	bytes  int    // attachment bytes kept
	added  uint64 // sequence of additions: the smallest are the oldest
}

type cachedSend struct {
	send  Send
	atts  []Attachment
	bytes int
	at    time.Time
	seq   uint64
}

const sendCacheSize, sendCacheTTL = 64, time.Minute

// sendCacheBytes bounds the attachments kept: without it, transactional
// mail with large files (25 MiB a send) would keep gigabytes. A send
// evicted for it is loaded again by each of its deliveries.
const sendCacheBytes = 64 << 20

// newSendCache keeps sendCacheSize sends, or four per worker slot when
// that is more: what survives an eviction (half) must hold the sends of
// every delivery claimed and not yet built (up to twice the slots).
func newSendCache(st Store, concurrency int) *sendCache {
	return &sendCache{store: st, size: max(sendCacheSize, 4*concurrency), budget: sendCacheBytes,
		items: map[int64]cachedSend{}}
}

func (c *sendCache) get(ctx context.Context, id int64) (Send, []Attachment, error) {
	c.mu.Lock()
	if it, ok := c.items[id]; ok && time.Since(it.at) < sendCacheTTL {
		c.mu.Unlock()
		return it.send, it.atts, nil
	}
	c.mu.Unlock()
	s, atts, err := c.store.LoadSend(ctx, id)
	if err != nil {
		return s, nil, err
	}
	c.put(s, atts)
	return s, atts, nil
}

// put adds a send. A full cache first drops its oldest half: those were
// added before the claims now being attempted, whose sends prefetch just
// put (dropping any at random could drop those and load them again). The
// oldest also go while the attachments would pass the byte budget; the
// newest send is kept whatever its size.
func (c *sendCache) put(s Send, atts []Attachment) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropLocked(s.ID)
	n := 0
	for _, a := range atts {
		n += len(a.Data)
	}
	full := len(c.items) >= c.size
	if full || c.bytes+n > c.budget {
		ids := slices.Collect(maps.Keys(c.items))
		slices.SortFunc(ids, func(a, b int64) int { return cmp.Compare(c.items[a].seq, c.items[b].seq) })
		for _, id := range ids {
			overCount := full && len(c.items) > c.size/2
			if !overCount && c.bytes+n <= c.budget {
				break
			}
			c.dropLocked(id)
		}
	}
	c.added++
	c.items[s.ID] = cachedSend{send: s, atts: atts, bytes: n, at: time.Now(), seq: c.added}
	c.bytes += n
}

func (c *sendCache) dropLocked(id int64) {
	if it, ok := c.items[id]; ok {
		c.bytes -= it.bytes
		delete(c.items, id)
	}
}

func (c *sendCache) forget(id int64) {
	c.mu.Lock()
	c.dropLocked(id)
	c.mu.Unlock()
}

// has reports whether the send cache holds a fresh copy of send id.
func (c *sendCache) has(id int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	it, ok := c.items[id]
	return ok && time.Since(it.at) < sendCacheTTL
}
