package ratelimit

import (
	"context"
	"sync"
	"time"
)

// Volume budgets are counted in units a request spends many of at once
// (bytes stored), not one per request. A request is allowed when the
// window's count with its units stays within the limit; a refused
// request spends nothing, so a large one refused leaves room for smaller
// ones.
//
// On a shared counter a leasing Limiter reserves runs of units, as it
// does for requests (lease.go): a run is what the request needs or 1/32
// of what the counter left, whichever is more, at most volumeLeaseMax
// beyond the need. Units a process reserved and did not spend count as
// spent (at most one run per process and window: restarts, and the end
// of the window); with several processes, a refused request's run past
// the limit can make another process refuse early. Near the limit runs
// are just the request's need.
const volumeLeaseMax = 64 << 20

// volumeLease is one key's reserved units in one window.
type volumeLease struct {
	mu      sync.Mutex // held while reserving: a key's requests wait for one round trip
	avail   int64      // reserved by this process, not spent yet
	seen    int64      // the highest count the counter returned
	expires time.Time
}

type volumeLeases struct {
	mu        sync.Mutex
	m         map[memKey]*volumeLease
	lastSweep time.Time
}

// get returns k's lease, creating it.
func (vs *volumeLeases) get(k memKey, expires time.Time) *volumeLease {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	now := time.Now()
	if vs.m == nil {
		vs.m = map[memKey]*volumeLease{}
	}
	if now.Sub(vs.lastSweep) >= time.Minute {
		for key, l := range vs.m {
			if now.After(l.expires) {
				delete(vs.m, key)
			}
		}
		vs.lastSweep = now
	}
	l := vs.m[k]
	if l == nil {
		l = &volumeLease{expires: expires}
		vs.m[k] = l
	}
	return l
}

// Spend counts n units for key against limit per window. When they do not
// fit it counts nothing and returns false with the whole seconds until the
// window ends (at least 1).
func (l *Limiter) Spend(ctx context.Context, key string, n, limit int64, window time.Duration) (ok bool, retryAfter int, err error) {
	now := l.now()
	start := now.Truncate(window)
	reset := start.Add(window)
	retryAfter = Result{Reset: reset}.RetryAfter(now)
	n = max(n, 1)
	if l.leases == nil {
		// One process: the count is exact, and asking first costs nothing.
		used, err := l.counter.Get(ctx, key, start)
		if err != nil || used+n > limit {
			return false, retryAfter, err
		}
		_, err = l.counter.Incr(ctx, key, start, n, window)
		return err == nil, retryAfter, err
	}
	le := l.volume.get(memKey{key, start.UnixNano()}, reset)
	le.mu.Lock()
	defer le.mu.Unlock()
	if le.avail >= n {
		le.avail -= n
		return true, retryAfter, nil
	}
	need := n - le.avail
	if le.seen+need > limit { // counts only grow: it cannot fit
		return false, retryAfter, nil
	}
	run := need + min(max((limit-le.seen)/32, 0), volumeLeaseMax)
	hi, err := l.counter.Incr(ctx, key, start, run, window)
	if err != nil {
		return false, retryAfter, err
	}
	le.seen = max(le.seen, hi)
	// Of the run, only what lies within the limit may be handed out.
	usable := le.avail + run - max(hi-limit, 0)
	if usable < n {
		le.avail = max(usable, 0)
		return false, retryAfter, nil
	}
	le.avail = usable - n
	return true, retryAfter, nil
}
