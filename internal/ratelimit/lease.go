package ratelimit

import (
	"context"
	"sync"
	"time"
)

// A shared counter (the database, Redis) costs a round trip per request;
// on PostgreSQL that was the largest per-request cost of intake after the
// commit itself. A leasing Limiter takes a run of count numbers at once
// (one IncrBy of n) and hands them out from memory:
//
//   - never more than the limit: a number is handed out once, by the one
//     process that took it, and a request is allowed only when its number
//     is within the limit, as before;
//   - a run is at most 1/32 of what the counter left and at most 64, so
//     near the limit runs are single numbers and the budget is exact; with
//     several processes, numbers one holds unused can make another refuse
//     early (at most a run for each process that holds one);
//   - once a process has seen the window's count reach the limit it
//     refuses the rest of that window without asking (counts only grow).
//
// X-RateLimit-Remaining is the limit less the request's number: exact in
// one process, with several an estimate, off by at most the numbers other
// processes hold.
const (
	leaseMax      = 64
	leaseFraction = 32
)

type leases struct {
	mu        sync.Mutex
	m         map[memKey]*lease
	lastSweep time.Time
}

// lease is one key's numbers in one window.
type lease struct {
	runs    []run // numbers taken, not yet handed out
	seen    int64 // the highest count the counter returned
	expires time.Time
}

type run struct{ next, last int64 }

func newLeases() *leases { return &leases{m: map[memKey]*lease{}} }

// take hands out a number from memory, or says how many to ask for: ok is
// false and size > 0 when the counter must be asked; n is 0 and ok true
// when the window is known to be used up (the request is refused).
func (ls *leases) take(k memKey, limit int64, expires time.Time) (n int64, size int64, ok bool) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.sweep(time.Now())
	l := ls.m[k]
	if l == nil {
		l = &lease{expires: expires}
		ls.m[k] = l
	}
	for len(l.runs) > 0 {
		r := &l.runs[0]
		n = r.next
		if r.next++; r.next > r.last {
			l.runs = l.runs[1:]
		}
		return n, 0, true
	}
	if l.seen >= limit {
		return 0, 0, true
	}
	return 0, min(max((limit-l.seen)/leaseFraction, 1), leaseMax), false
}

// took records that the counter now stands at hi after adding size: the
// numbers hi-size+1 .. hi are this process's. It returns the first.
func (ls *leases) took(k memKey, hi, size int64, expires time.Time) int64 {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	l := ls.m[k]
	if l == nil {
		l = &lease{expires: expires}
		ls.m[k] = l
	}
	l.seen = max(l.seen, hi)
	first := hi - size + 1
	if size > 1 {
		l.runs = append(l.runs, run{next: first + 1, last: hi})
	}
	return first
}

// sweep drops finished windows' leases, at most once a minute.
func (ls *leases) sweep(now time.Time) {
	if now.Sub(ls.lastSweep) < time.Minute {
		return
	}
	for k, l := range ls.m {
		if now.After(l.expires) {
			delete(ls.m, k)
		}
	}
	ls.lastSweep = now
}

// allowLeased is Allow for a leasing Limiter.
func (l *Limiter) allowLeased(ctx context.Context, key string, limit int, window time.Duration) (Result, error) {
	now := l.now()
	start := now.Truncate(window)
	k := memKey{key, start.UnixNano()}
	expires := start.Add(window)
	n, size, ok := l.leases.take(k, int64(limit), expires)
	if !ok {
		hi, err := l.counter.Incr(ctx, key, start, size, window)
		if err != nil {
			return Result{}, err
		}
		n = l.leases.took(k, hi, size, expires)
	}
	if n == 0 { // the window is used up
		n = int64(limit) + 1
	}
	return result(n, limit, start.Add(window)), nil
}
