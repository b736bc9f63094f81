package ratelimit

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// countingCounter counts the calls that reach the shared counter.
type countingCounter struct {
	Counter
	calls atomic.Int64
}

func (c *countingCounter) Incr(ctx context.Context, key string, start time.Time, by int64, expire time.Duration) (int64, error) {
	c.calls.Add(1)
	return c.Counter.Incr(ctx, key, start, by, expire)
}

// One leasing process allows exactly the limit, counts Remaining down one
// request at a time, and asks the shared counter far less than once a
// request; once the window is used up it stops asking.
func TestLeasingOneProcessIsExact(t *testing.T) {
	t.Parallel()
	for name, c := range counters(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cc := &countingCounter{Counter: c}
			now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
			l := NewLeasing(cc, func() time.Time { return now })
			ctx := context.Background()
			const limit = 5000
			for i := 1; i <= limit+500; i++ {
				r, err := l.Allow(ctx, "acct:1", limit, time.Hour)
				if err != nil {
					t.Fatal(err)
				}
				if want := i <= limit; r.Allowed != want || r.Remaining != max(limit-i, 0) {
					t.Fatalf("request %d: allowed %v remaining %d; want %v and %d", i, r.Allowed, r.Remaining, want, max(limit-i, 0))
				}
				if i == limit {
					if calls := cc.calls.Load(); calls > limit/10 {
						t.Fatalf("%d requests asked the shared counter %d times", limit, calls)
					}
				}
			}
			calls := cc.calls.Load()
			for range 100 {
				if r, _ := l.Allow(ctx, "acct:1", limit, time.Hour); r.Allowed {
					t.Fatal("allowed past the limit")
				}
			}
			if cc.calls.Load() != calls {
				t.Fatalf("refusals in a used-up window asked the counter %d more times", cc.calls.Load()-calls)
			}
			now = now.Add(time.Hour)
			if r, _ := l.Allow(ctx, "acct:1", limit, time.Hour); !r.Allowed || r.Remaining != limit-1 {
				t.Fatalf("next window: %+v, want a fresh budget", r)
			}
		})
	}
}

// Several processes leasing from one counter, concurrently: never more
// than the limit in all, and at most one run (64) short of it.
func TestLeasingProcessesShareTheLimit(t *testing.T) {
	t.Parallel()
	for name, c := range counters(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			procs := []*Limiter{NewLeasing(c, nil), NewLeasing(c, nil), NewLeasing(c, nil)}
			const limit, tries = 3000, 4000
			var allowed atomic.Int64
			var wg sync.WaitGroup
			for w := range 12 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range tries / 12 {
						r, err := procs[w%len(procs)].Allow(context.Background(), "shared-"+name, limit, time.Hour)
						if err != nil {
							t.Error(err)
							return
						}
						if r.Allowed {
							allowed.Add(1)
						}
					}
				}()
			}
			wg.Wait()
			if n := allowed.Load(); n > limit || n < limit-leaseMax {
				t.Fatalf("%d of %d requests allowed across 3 processes with a limit of %d; want %d at most and at least %d",
					n, tries, limit, limit, limit-leaseMax)
			}
		})
	}
}

// slowCounter answers after a delay, as a database across a network does.
type slowCounter struct {
	Counter
	delay time.Duration
}

func (s slowCounter) Incr(ctx context.Context, key string, start time.Time, by int64, expire time.Duration) (int64, error) {
	time.Sleep(s.delay)
	return s.Counter.Incr(ctx, key, start, by, expire)
}

// Requests that arrive together while a process's run is spent wait for
// the one run being taken instead of each taking their own: a burst on
// one process cannot take the budget away from another.
func TestLeasingBurstTakesOneRun(t *testing.T) {
	t.Parallel()
	shared := slowCounter{Counter: NewMemory(), delay: 5 * time.Millisecond}
	at := time.Date(2026, 11, 26, 12, 30, 0, 0, time.UTC)
	clock := func() time.Time { return at }
	a, b := NewLeasing(shared, clock), NewLeasing(shared, clock)
	ctx := context.Background()
	const limit, burst = 3000, 20
	var wg sync.WaitGroup
	for range burst {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r, err := a.Allow(ctx, "k", limit, time.Hour); err != nil || !r.Allowed {
				t.Errorf("burst request: %+v, %v", r, err)
			}
		}()
	}
	wg.Wait()
	if n, _ := shared.Get(ctx, "k", at.Truncate(time.Hour)); n > burst+leaseMax {
		t.Fatalf("a burst of %d on one process moved the shared count to %d (more than one run of %d)", burst, n, leaseMax)
	}
	allowedB := 0
	for {
		r, err := b.Allow(ctx, "k", limit, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if !r.Allowed {
			break
		}
		allowedB++
	}
	if allowedB < limit-burst-leaseMax {
		t.Fatalf("the other process was allowed %d, want at least %d (%d less the burst and one run)", allowedB, limit-burst-leaseMax, limit)
	}
}

// failingCounter fails every Incr after holding it a while.
type failingCounter struct {
	Counter
	hold  time.Duration
	calls atomic.Int64
}

func (f *failingCounter) Incr(context.Context, string, time.Time, int64, time.Duration) (int64, error) {
	f.calls.Add(1)
	time.Sleep(f.hold)
	return 0, errors.New("counter down")
}

// When the counter fails, everyone waiting for the run gets the error at
// once (and is let through by the caller) instead of each asking the
// failing counter in turn.
func TestLeasingCounterFailureReachesWaiters(t *testing.T) {
	t.Parallel()
	fc := &failingCounter{Counter: NewMemory(), hold: 300 * time.Millisecond}
	l := NewLeasing(fc, nil)
	var wg sync.WaitGroup
	var failed atomic.Int64
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := l.Allow(context.Background(), "k", 1000, time.Hour); err != nil {
				failed.Add(1)
			}
		}()
	}
	wg.Wait()
	if failed.Load() != 10 {
		t.Fatalf("%d of 10 requests saw the counter's failure", failed.Load())
	}
	if n := fc.calls.Load(); n >= 10 {
		t.Fatalf("the failing counter was asked %d times by 10 requests arriving together", n)
	}
}
