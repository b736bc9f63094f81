package event

import (
	"sync"
	"time"
)

// A log page is read far more often than its domain's log changes (a
// console or a script polling the first page), and reading one costs a
// hundred row reads where answering from memory costs a copy. pageCache
// keeps List's recent answers and serves one again only while nothing
// can have changed it:
//
//   - the domain's all-time total (one small read of the per-type totals,
//     taken before the page) is the same: every insert and every prune
//     changes it, in any process, the moment it commits;
//   - no wake-up for the domain came since (this process's writes, and
//     PostgreSQL notifications of other processes'), which also covers an
//     insert and a prune of the same size between two reads;
//   - it is younger than pageCacheTTL, a last bound for what neither sees.
//
// A page read while a commit lands is stored under the total read before
// it, so it is never served after that commit is visible.
type pageCache struct {
	mu    sync.Mutex
	gens  map[int64]uint64 // per domain, advanced by every wake-up
	all   uint64           // advanced by WakeAll
	pages map[Filter]cachedPage
	rows  int // entries held, at most pageCacheRows
}

type cachedPage struct {
	page     Page
	json     []byte // page.Entries as a JSON array, rendered once; nil until asked for
	gen, all uint64
	stamp    int // the domain's all-time total before the page was read
	until    time.Time
}

const (
	pageCacheTTL  = time.Second
	pageCacheRows = 20000 // about 6 MB of entries; a full cache starts over
)

func newPageCache() *pageCache {
	return &pageCache{gens: map[int64]uint64{}, pages: map[Filter]cachedPage{}}
}

// version is what a page read now will be stored under.
func (c *pageCache) version(domainID int64) (gen, all uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gens[domainID], c.all
}

// get returns f's page when it is still current. Its entries are the
// cache's own: callers copy before changing them.
func (c *pageCache) get(f Filter, gen, all uint64, stamp int, now time.Time) (cachedPage, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.pages[f]
	if !ok || p.gen != gen || p.all != all || p.stamp != stamp || !now.Before(p.until) {
		return cachedPage{}, false
	}
	return p, true
}

// put stores page (which the cache then owns) with its rendering, if any.
func (c *pageCache) put(f Filter, p cachedPage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.pages[f]; ok {
		c.rows -= len(old.page.Entries)
	}
	if c.rows+len(p.page.Entries) > pageCacheRows {
		clear(c.pages)
		c.rows = 0
	}
	c.pages[f] = p
	c.rows += len(p.page.Entries)
}

// rendered keeps b as the rendering of f's page while that page is
// still the one stored (a newer read may have replaced it meanwhile).
func (c *pageCache) rendered(f Filter, p cachedPage, b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur, ok := c.pages[f]; ok && cur.gen == p.gen && cur.all == p.all && cur.stamp == p.stamp && cur.until.Equal(p.until) && cur.json == nil {
		cur.json = b
		c.pages[f] = cur
	}
}

// wake advances the domains' generations: their cached pages are old.
func (c *pageCache) wake(domainIDs ...int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range domainIDs {
		c.gens[id]++
	}
}

func (c *pageCache) wakeAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.all++
}
