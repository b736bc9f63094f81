package ratelimit

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// A shared counter (the database, Redis) costs a round trip per request;
// on PostgreSQL that was the largest per-request cost of intake after the
// commit itself. A leasing Limiter takes a run of count numbers at once
// (one Incr by n) and hands them out from memory, in order:
//
//   - never more than the limit: a number is handed out once, by the one
//     process that took it, and a request is allowed only when its number
//     is within the limit, as before;
//   - a process holds one run per key at a time: requests that find it
//     spent while a new one is being taken wait for that one instead of
//     each taking their own;
//   - a run is at most 1/32 of what the counter left and at most 64, so
//     near the limit runs are single numbers; with several processes,
//     numbers one holds unused can make another refuse early (at most a
//     run per process);
//   - once a process has seen the window's count reach the limit it
//     refuses the rest of that window without asking (counts only grow).
//
// X-RateLimit-Remaining is the limit less the request's number: exact in
// one process (numbers go out in order), with several an estimate, off by
// at most the numbers other processes hold.
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
	next, last int64  // the run: numbers next..last are still this process's
	seen       int64  // the highest count the counter returned
	fetching   *fetch // the run being taken, nil when none is
	expires    time.Time
}

// fetch is a run being taken; done closes when it has arrived or failed.
type fetch struct {
	done chan struct{}
	err  error // set before done closes
}

func newLeases() *leases { return &leases{m: map[memKey]*lease{}} }

// get returns k's lease, creating it; the caller holds mu.
func (ls *leases) get(k memKey, expires time.Time) *lease {
	now := time.Now()
	if now.Sub(ls.lastSweep) >= time.Minute { // finished windows' leases
		for key, l := range ls.m {
			if now.After(l.expires) && l.fetching == nil {
				delete(ls.m, key)
			}
		}
		ls.lastSweep = now
	}
	l := ls.m[k]
	if l == nil {
		l = &lease{expires: expires}
		ls.m[k] = l
	}
	return l
}

// allowLeased is Allow for a leasing Limiter.
func (l *Limiter) allowLeased(ctx context.Context, key string, limit int, window time.Duration) (Result, error) {
	start := l.now().Truncate(window)
	reset := start.Add(window)
	k := memKey{key, start.UnixNano()}
	ls := l.leases
	for {
		ls.mu.Lock()
		le := ls.get(k, reset)
		switch {
		case le.next > 0 && le.next <= le.last:
			n := le.next
			le.next++
			ls.mu.Unlock()
			return result(n, limit, reset), nil
		case le.seen >= int64(limit): // used up: counts only grow
			ls.mu.Unlock()
			return result(int64(limit)+1, limit, reset), nil
		case le.fetching != nil: // a run is on its way: wait for it
			f := le.fetching
			ls.mu.Unlock()
			select {
			case <-f.done:
				if f.err != nil { // the counter failed for all who waited, at once
					return Result{}, f.err
				}
				continue
			case <-ctx.Done():
				return Result{}, ctx.Err()
			}
		}
		size := min(max((int64(limit)-le.seen)/leaseFraction, 1), leaseMax)
		hi, err := l.takeRun(ctx, le, key, start, size, window)
		if err != nil {
			return Result{}, err
		}
		return result(hi-size+1, limit, reset), nil
	}
}

// takeRun asks the counter for size numbers for le, with ls.mu held on
// entry (released on return), and keeps all but the first as le's run.
// Whatever happens, those waiting for it are woken.
func (l *Limiter) takeRun(ctx context.Context, le *lease, key string, start time.Time, size int64, window time.Duration) (hi int64, err error) {
	ls := l.leases
	f := &fetch{done: make(chan struct{})}
	le.fetching = f
	ls.mu.Unlock()
	defer func() {
		ls.mu.Lock()
		defer ls.mu.Unlock()
		if r := recover(); r != nil {
			err = fmt.Errorf("ratelimit: counter: %v", r)
		}
		f.err = err
		le.fetching = nil
		close(f.done)
		if err == nil { // hi-size+1 .. hi are ours: the first for this request, the rest the run
			le.seen = max(le.seen, hi)
			le.next, le.last = hi-size+2, hi
		}
	}()
	return l.counter.Incr(ctx, key, start, size, window)
}
