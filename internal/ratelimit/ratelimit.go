// Package ratelimit enforces per-account request budgets in fixed windows
// (per hour for validation, per minute for domain endpoints) and reports the
// state the X-RateLimit headers need.
//
// Fixed windows were chosen over GCRA or sliding logs because the interface
// document's headers speak of "remaining in the current window": a counter
// per (key, window) answers that exactly, is one atomic increment in every
// backend, and is shared across processes by the database or Redis.
package ratelimit

import (
	"context"
	"sync"
	"time"
)

// Result is the outcome of one Allow call.
type Result struct {
	Allowed   bool
	Limit     int
	Remaining int
	Reset     time.Time // end of the current window
}

// RetryAfter is the whole seconds until the window resets, at least 1.
func (r Result) RetryAfter(now time.Time) int {
	s := int(r.Reset.Sub(now).Seconds() + 0.999)
	return max(s, 1)
}

// Counter atomically adds by (at least 1) to the counter of key in the
// window starting at windowStart and returns the new count. expire is how
// long the counter must be kept; backends may drop it after that.
type Counter interface {
	Incr(ctx context.Context, key string, windowStart time.Time, by int64, expire time.Duration) (int64, error)
	// Get returns the count of key in the window starting at windowStart
	// without changing it (0 when there is none).
	Get(ctx context.Context, key string, windowStart time.Time) (int64, error)
	// Decr takes one back from the count of key in the window, never
	// below zero (a count that is gone stays gone).
	Decr(ctx context.Context, key string, windowStart time.Time) error
	// Reset clears the count of key in the window.
	Reset(ctx context.Context, key string, windowStart time.Time) error
}

// Limiter applies limits through a Counter.
type Limiter struct {
	counter Counter
	now     func() time.Time
	leases  *leases // nil: every request is counted by the Counter itself
	volume  volumeLeases
}

// New returns a Limiter; now may be nil for time.Now.
func New(c Counter, now func() time.Time) *Limiter {
	if now == nil {
		now = time.Now
	}
	return &Limiter{counter: c, now: now}
}

// NewLeasing returns a Limiter for a Counter shared by processes, which
// takes count numbers from it in runs (lease.go).
func NewLeasing(c Counter, now func() time.Time) *Limiter {
	l := New(c, now)
	l.leases = newLeases()
	return l
}

// Allow counts one request for key against limit per window.
func (l *Limiter) Allow(ctx context.Context, key string, limit int, window time.Duration) (Result, error) {
	if l.leases != nil {
		return l.allowLeased(ctx, key, limit, window)
	}
	now := l.now()
	start := now.Truncate(window)
	n, err := l.counter.Incr(ctx, key, start, 1, window)
	if err != nil {
		return Result{}, err
	}
	return result(n, limit, start.Add(window)), nil
}

// result is the answer for the request counted as number n.
func result(n int64, limit int, reset time.Time) Result {
	return Result{
		Allowed:   n <= int64(limit),
		Limit:     limit,
		Remaining: int(max(int64(limit)-n, 0)),
		Reset:     reset,
	}
}

// Now is the limiter's clock, for computing Retry-After.
func (l *Limiter) Now() time.Time { return l.now() }

// Memory is a Counter for a single process.
type Memory struct {
	mu        sync.Mutex
	counts    map[memKey]memCount
	lastSweep time.Time
}

type memKey struct {
	key   string
	start int64
}

type memCount struct {
	n       int64
	expires time.Time
}

// NewMemory returns an empty in-memory Counter.
func NewMemory() *Memory { return &Memory{counts: map[memKey]memCount{}} }

// Incr implements Counter.
func (m *Memory) Incr(_ context.Context, key string, windowStart time.Time, by int64, expire time.Duration) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	if now.Sub(m.lastSweep) > time.Minute { // expired windows would otherwise pile up
		for k, c := range m.counts {
			if now.After(c.expires) {
				delete(m.counts, k)
			}
		}
		m.lastSweep = now
	}
	k := memKey{key, windowStart.UnixNano()}
	c := m.counts[k]
	c.n += max(by, 1)
	c.expires = windowStart.Add(expire)
	m.counts[k] = c
	return c.n, nil
}

// Get implements Counter.
func (m *Memory) Get(_ context.Context, key string, windowStart time.Time) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.counts[memKey{key, windowStart.UnixNano()}].n, nil
}

// Decr implements Counter.
func (m *Memory) Decr(_ context.Context, key string, windowStart time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := memKey{key, windowStart.UnixNano()}
	if c, ok := m.counts[k]; ok && c.n > 0 {
		c.n--
		m.counts[k] = c
	}
	return nil
}

// Reset implements Counter.
func (m *Memory) Reset(_ context.Context, key string, windowStart time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.counts, memKey{key, windowStart.UnixNano()})
	return nil
}
