package ratelimit

import (
	"context"
	"sync"
	"testing"
	"time"
)

func TestSpendOneProcess(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 23, 59, 0, 0, time.UTC)
	l := New(NewMemory(), func() time.Time { return now })
	ctx := context.Background()
	spend := func(n int64) (bool, int) {
		ok, after, err := l.Spend(ctx, "day:bytes:1", n, 1000, 24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return ok, after
	}
	if ok, _ := spend(600); !ok {
		t.Fatal("600 of 1000 refused")
	}
	if ok, after := spend(500); ok || after != 60 {
		t.Fatalf("600+500 of 1000: allowed %v, retry after %d, want refused for 60 s (midnight UTC)", ok, after)
	}
	if ok, _ := spend(400); !ok {
		t.Fatal("a refused request spent its bytes: 600+400 of 1000 refused")
	}
	if ok, _ := spend(1); ok {
		t.Fatal("1001 of 1000 allowed")
	}
	now = now.Add(time.Minute)
	if ok, _ := spend(1000); !ok {
		t.Fatal("the next day starts empty")
	}
}

// Two leasing limiters on one counter stand for two processes sharing
// PostgreSQL: together they never allow more than the limit, however the
// requests interleave, and they allow nearly all of it.
func TestSpendShared(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	c := &countingCounter{Counter: NewMemory()}
	a, b := NewLeasing(c, func() time.Time { return now }), NewLeasing(c, func() time.Time { return now })
	const limit, size = 1 << 30, 1 << 20
	var mu sync.Mutex
	var allowed int64
	var wg sync.WaitGroup
	for _, l := range []*Limiter{a, b, a, b} {
		wg.Go(func() {
			for range 600 {
				ok, _, err := l.Spend(context.Background(), "day:bytes:7", size, limit, 24*time.Hour)
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					mu.Lock()
					allowed += size
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if allowed > limit || allowed < limit-2*volumeLeaseMax {
		t.Errorf("allowed %d bytes of %d", allowed, limit)
	}
	if calls := c.calls.Load(); calls > 200 {
		t.Errorf("%d round trips to the counter for 2,400 requests, want runs", calls)
	}
}
