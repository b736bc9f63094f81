package ratelimit

import (
	"context"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"
)

// counters returns the Counter implementations to test: memory always,
// Redis when POSTLINE_TEST_REDIS_URL is set (CI sets it).
func counters(t *testing.T) map[string]Counter {
	out := map[string]Counter{"memory": NewMemory()}
	if url := os.Getenv("POSTLINE_TEST_REDIS_URL"); url != "" {
		r, err := NewRedis(context.Background(), url, "postline-test:"+strconv.FormatInt(time.Now().UnixNano(), 36)+":")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		out["redis"] = r
	}
	return out
}

func TestFixedWindow(t *testing.T) {
	t.Parallel()
	for name, c := range counters(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			now := time.Date(2026, 11, 21, 10, 0, 30, 0, time.UTC)
			l := New(c, func() time.Time { return now })
			ctx := context.Background()
			for i := 1; i <= 4; i++ {
				r, err := l.Allow(ctx, "acct:1", 3, time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				if want := i <= 3; r.Allowed != want || r.Limit != 3 || r.Remaining != max(3-i, 0) {
					t.Fatalf("request %d: %+v, want allowed=%v remaining=%d", i, r, want, max(3-i, 0))
				}
				if got := r.RetryAfter(now); got != 30 {
					t.Fatalf("RetryAfter = %d, want 30 (window ends at :01:00)", got)
				}
			}
			if r, _ := l.Allow(ctx, "acct:2", 3, time.Minute); !r.Allowed || r.Remaining != 2 {
				t.Fatalf("another key shares the budget: %+v", r)
			}
			now = now.Add(30 * time.Second) // next window
			if r, _ := l.Allow(ctx, "acct:1", 3, time.Minute); !r.Allowed || r.Remaining != 2 {
				t.Fatalf("new window: %+v, want a fresh budget", r)
			}
		})
	}
}

func TestConcurrentCountsAreExact(t *testing.T) {
	t.Parallel()
	for name, c := range counters(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			l := New(c, nil)
			var wg sync.WaitGroup
			var mu sync.Mutex
			allowed := 0
			for i := 0; i < 50; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r, err := l.Allow(context.Background(), "burst", 20, time.Hour)
					if err != nil {
						t.Error(err)
						return
					}
					if r.Allowed {
						mu.Lock()
						allowed++
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			if allowed != 20 {
				t.Fatalf("%d of 50 concurrent requests allowed, want exactly 20", allowed)
			}
		})
	}
}
