package event

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/postline/postline/internal/apperr"
)

// Store is the storage the Service needs. An implementation may be bound
// to a caller's transaction (see RecordTx).
type Store interface {
	// Insert stores entries atomically (in the bound transaction, or in one
	// of its own) and keeps the hourly counts.
	Insert(ctx context.Context, entries []Entry) error
	// List returns up to f.Limit entries matching f in f.Order.
	List(ctx context.Context, f Filter) ([]Entry, error)
	// Count counts entries matching f (ignoring Limit, Offset, Order),
	// stopping at max: it returns (max, false) when more match. When
	// f.OnlyTimeAndType() it must be exact and cheap at any size.
	Count(ctx context.Context, f Filter, max int) (n int, exact bool, err error)
	// Bounds returns the smallest and largest id of the domain's entries
	// within f's time range (Start, End; other fields ignored), or 0, 0.
	// hi is also a horizon: no entry with an id at or below it may still
	// commit later (it is lowered below the ids of running transactions).
	Bounds(ctx context.Context, f Filter) (lo, hi int64, err error)
	// Prune deletes entries created before t, in batches of at most batch
	// rows per transaction, and returns how many it deleted.
	Prune(ctx context.Context, before time.Time, batch int) (int64, error)
	// CompactCounts tidies the hourly counts of hours before t (the store
	// may spread a busy hour over several rows); totals do not change.
	CompactCounts(ctx context.Context, before time.Time) error
}

// Config tunes the Service. Zero values take the defaults.
type Config struct {
	// CountCap bounds the counting of a filtered list's total beyond the
	// requested page (default 1000); see Page.Exact. Counting a substring
	// filter costs about cap/selectivity rows: 1000 past the page keeps a
	// common word under 15 ms at any table size (BENCHMARKS.md).
	CountCap int
	// Heartbeat is the longest a stream stays silent (default 15 s).
	Heartbeat time.Duration
	// Poll is how often a follower looks for new entries without being
	// woken (default 5 s): the safety net for writers in other processes
	// on SQLite and for notifications lost while reconnecting.
	Poll time.Duration
	Now  func() time.Time
}

// Service records and reads the delivery log.
type Service struct {
	store Store
	cfg   Config
	hub   *hub
	pages *pageCache
}

// NewService returns the service over st.
func NewService(st Store, cfg Config) *Service {
	cfg.CountCap = cmp.Or(cfg.CountCap, 1000)
	cfg.Heartbeat = cmp.Or(cfg.Heartbeat, 15*time.Second)
	cfg.Poll = cmp.Or(cfg.Poll, 5*time.Second)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Service{store: st, cfg: cfg, hub: newHub(), pages: newPageCache()}
}

// Record stores entries in one transaction, then wakes the followers of
// their domains. Entries without CreatedAt get the current time.
func (s *Service) Record(ctx context.Context, entries ...Entry) error {
	publish, err := s.RecordTx(ctx, s.store, entries...)
	if err != nil {
		return err
	}
	publish()
	return nil
}

// RecordTx stores entries through tx, a Store bound to the caller's
// transaction, and returns the function that wakes followers: call it
// after the transaction commits, never before (a follower woken early
// would look, find nothing, and sleep until the next poll).
func (s *Service) RecordTx(ctx context.Context, tx Store, entries ...Entry) (publish func(), err error) {
	if len(entries) == 0 {
		return func() {}, nil
	}
	now := s.cfg.Now().UTC().Truncate(time.Millisecond)
	list := make([]Entry, len(entries))
	domains := make([]int64, 0, 1)
	for i, e := range entries {
		if err := check(e); err != nil {
			return nil, fmt.Errorf("event: entry %d: %w", i, err)
		}
		if e.CreatedAt.IsZero() {
			e.CreatedAt = now
		}
		e.CreatedAt = e.CreatedAt.UTC().Truncate(time.Millisecond)
		if len(e.Details) == 0 {
			e.Details = json.RawMessage(`{}`)
		} else if e.Details, err = compactDetails(e.Details); err != nil {
			return nil, fmt.Errorf("event: entry %d: %w", i, err)
		}
		list[i] = e
		if !slices.Contains(domains, e.DomainID) {
			domains = append(domains, e.DomainID)
		}
	}
	if err := tx.Insert(ctx, list); err != nil {
		return nil, err
	}
	return func() { s.wake(domains...) }, nil
}

func check(e Entry) error {
	switch {
	case e.DomainID <= 0:
		return apperr.Errorf(apperr.Invalid, "domain id missing")
	case !e.Type.Valid():
		return apperr.Errorf(apperr.Invalid, "unknown event type %q", e.Type)
	}
	return nil
}

// compactDetails checks that d is a JSON object and removes its
// insignificant whitespace: entries are later written raw into one-line
// SSE data fields, where a newline would end the field.
func compactDetails(d json.RawMessage) (json.RawMessage, error) {
	var b bytes.Buffer
	if err := json.Compact(&b, d); err != nil || b.Len() == 0 || b.Bytes()[0] != '{' {
		return nil, apperr.Errorf(apperr.Invalid, "details must be a JSON object")
	}
	return b.Bytes(), nil
}

// Wake tells the followers of a domain that it may have new entries; the
// PostgreSQL listener calls it for entries recorded by other processes.
func (s *Service) Wake(domainID int64) { s.wake(domainID) }

// wake marks the domains' cached pages old, then wakes their followers.
func (s *Service) wake(domainIDs ...int64) {
	s.pages.wake(domainIDs...)
	s.hub.publish(domainIDs...)
}

// WakeAll wakes every follower, after notifications may have been lost.
func (s *Service) WakeAll() {
	s.pages.wakeAll()
	s.hub.publishAll()
}

// Page is one page of a list.
type Page struct {
	Entries []Entry
	Total   int
	// Exact is false when counting stopped at the cap: Total is then a
	// lower bound (at least CountCap entries beyond this page).
	Exact bool
}

// Scan returns up to f.Limit entries f selects in f.Order, without a
// total: keyset paging by AfterID (OldestFirst) or UpToID (NewestIDFirst).
func (s *Service) Scan(ctx context.Context, f Filter) ([]Entry, error) {
	if f.Limit < 1 {
		f.Limit = 1
	}
	return s.store.List(ctx, f)
}

// Horizon is the domain's id at or below which no entry may still commit:
// a page that stops there is never missing an entry recorded later.
func (s *Service) Horizon(ctx context.Context, domainID int64) (int64, error) {
	_, hi, err := s.store.Bounds(ctx, Filter{DomainID: domainID})
	return hi, err
}

// List returns the page of entries f selects, newest first, with the total.
// A page asked again while the domain's log did not change comes from
// memory (pagecache.go).
func (s *Service) List(ctx context.Context, f Filter) (Page, error) {
	p, err := s.list(ctx, f)
	page := p.page
	page.Entries = slices.Clone(page.Entries) // the cache's copy stays as it is
	return page, err
}

// ListJSON is List for an answer written in JSON: it returns the page's
// entries rendered as a JSON array (AppendJSONArray), which a page served
// from memory renders once. The page's entries must not be changed.
func (s *Service) ListJSON(ctx context.Context, f Filter) (Page, []byte, error) {
	p, err := s.list(ctx, f)
	if err != nil || p.json != nil {
		return p.page, p.json, err
	}
	b := AppendJSONArray(make([]byte, 0, 64+len(p.page.Entries)*320), p.page.Entries)
	s.pages.rendered(f, p, b)
	return p.page, b, nil
}

func (s *Service) list(ctx context.Context, f Filter) (cachedPage, error) {
	f.Order = NewestFirst
	gen, all := s.pages.version(f.DomainID)
	stamp, _, err := s.store.Count(ctx, Filter{DomainID: f.DomainID}, 0) // the all-time total: exact, from the totals
	if err != nil {
		return cachedPage{}, err
	}
	now := time.Now() // not cfg.Now: the cache's lifetime is real time even when tests hold the clock
	if p, ok := s.pages.get(f, gen, all, stamp, now); ok {
		return p, nil
	}
	entries, err := s.store.List(ctx, f)
	if err != nil {
		return cachedPage{}, err
	}
	n, exact := stamp, true
	if f != (Filter{DomainID: f.DomainID, Limit: f.Limit, Offset: f.Offset, Order: f.Order}) {
		if n, exact, err = s.store.Count(ctx, f, f.Offset+f.Limit+s.cfg.CountCap); err != nil {
			return cachedPage{}, err
		}
	}
	// A concurrent insert may land between the two statements; the total
	// never claims fewer entries than the page shows.
	if len(entries) > 0 {
		n = max(n, f.Offset+len(entries))
	}
	p := cachedPage{page: Page{Entries: entries, Total: n, Exact: exact}, gen: gen, all: all, stamp: stamp, until: now.Add(pageCacheTTL)}
	s.pages.put(f, p)
	return p, nil
}
