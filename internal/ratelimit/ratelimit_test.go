package ratelimit

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
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
			if name == "redis" { // a shared counter: the leasing limiter app.go gives it
				l = NewLeasing(c, func() time.Time { return now })
			}
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
			if name == "redis" {
				l = NewLeasing(c, nil)
			}
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

func TestAttemptsCountOnlyFailures(t *testing.T) {
	t.Parallel()
	for name, c := range counters(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			now := time.Date(2026, 11, 21, 10, 3, 0, 0, time.UTC)
			a := &Attempts{Limiter: New(c, func() time.Time { return now }), PerLogin: 3, PerAddress: 5}
			ctx := context.Background()
			begin := func(login, addr string) Attempt {
				t.Helper()
				at, err := a.Begin(ctx, login, addr)
				if err != nil {
					t.Fatal(err)
				}
				if at.Blocked && !at.Until.Equal(now.Truncate(15*time.Minute).Add(15*time.Minute)) {
					t.Fatalf("blocked until %v, want the end of the 15-minute window", at.Until)
				}
				return at
			}
			for i := 0; i < 3; i++ { // three failures: counted by Begin alone
				if begin("Alice", "192.0.2.1").Blocked {
					t.Fatalf("blocked after %d failures, limit 3", i)
				}
			}
			if !begin("ALICE", "192.0.2.9").Blocked {
				t.Fatal("a login with 3 failures is not blocked from another address")
			}
			if at := begin("bob", "192.0.2.1"); at.Blocked {
				t.Fatal("3 failures from an address with a limit of 5 block another login")
			} else if err := at.Uncounted(ctx); err != nil { // not checked after all
				t.Fatal(err)
			}
			begin("carol", "192.0.2.1")
			begin("dave", "192.0.2.1")
			if !begin("erin", "192.0.2.1").Blocked {
				t.Fatal("5 failures from one address do not block it")
			}
			now = now.Add(15 * time.Minute)
			if begin("alice", "192.0.2.1").Blocked {
				t.Fatal("still blocked in the next window")
			}
			// An IPv6 client is its /64: guesses from each of its addresses count together.
			for i := range 5 {
				begin(fmt.Sprintf("user%d", i), fmt.Sprintf("2001:db8:0:7::%x", i+1))
			}
			if !begin("frank", "2001:db8:0:7:ffff::1").Blocked {
				t.Fatal("5 failures from 5 addresses of one /64 do not block it")
			}
			if begin("frank", "2001:db8:0:8::1").Blocked {
				t.Fatal("failures from one /64 block the next one")
			}
		})
	}
}

// TestAttemptsParallelGuesses: 150 guesses at one login at once are
// checked at most the limit's number of times (each was let through by a
// read made before the others failed, when the count came after).
func TestAttemptsParallelGuesses(t *testing.T) {
	t.Parallel()
	for name, c := range counters(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a := &Attempts{Limiter: New(c, nil), PerLogin: 10, PerAddress: 1000, Prefix: t.Name()}
			var wg sync.WaitGroup
			var mu sync.Mutex
			checked := 0
			for i := range 150 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					at, err := a.Begin(context.Background(), "victim", "192.0.2."+strconv.Itoa(i%200))
					if err != nil {
						t.Error(err)
						return
					}
					if !at.Blocked {
						mu.Lock()
						checked++
						mu.Unlock()
						time.Sleep(time.Millisecond) // the check
						at.Failed()
					}
				}()
			}
			wg.Wait()
			if checked != 10 {
				t.Fatalf("%d of 150 parallel guesses were let through to be checked, want exactly 10", checked)
			}
		})
	}
}

// TestAttemptsParallelSuccesses: a client opening 40 sessions at once with
// the right key, four times the login's limit, is never refused: the
// attempts past the limit wait for those in flight, whose successes give
// their slots back.
func TestAttemptsParallelSuccesses(t *testing.T) {
	t.Parallel()
	for name, c := range counters(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a := &Attempts{Limiter: New(c, nil), PerLogin: 10, PerAddress: 10, Prefix: t.Name()}
			var wg sync.WaitGroup
			var blocked atomic.Int64
			for range 40 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					at, err := a.Begin(context.Background(), "app", "192.0.2.1")
					if err != nil {
						t.Error(err)
						return
					}
					if at.Blocked {
						blocked.Add(1)
						return
					}
					time.Sleep(5 * time.Millisecond) // the check
					if err := at.Succeeded(context.Background()); err != nil {
						t.Error(err)
					}
				}()
			}
			wg.Wait()
			if n := blocked.Load(); n > 0 {
				t.Fatalf("%d of 40 parallel sign-ins with the right key were refused, want none", n)
			}
		})
	}
}

// TestAttemptsSuccessGivesBack: a success clears the login's failures and
// gives the address its slot back, so a user who mistyped is not left one
// typo from a lock-out and a client that signs in on every connection is
// never blocked.
func TestAttemptsSuccessGivesBack(t *testing.T) {
	t.Parallel()
	for name, c := range counters(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a := &Attempts{Limiter: New(c, nil), PerLogin: 3, PerAddress: 100, Prefix: t.Name()}
			ctx := context.Background()
			for round := range 3 { // two failures then a success, three times
				for i := range 3 {
					at, err := a.Begin(ctx, "alice", "192.0.2.1")
					if err != nil || at.Blocked {
						t.Fatalf("round %d attempt %d: blocked=%v err=%v; want checked (limit 3, cleared by each success)", round, i, at.Blocked, err)
					}
					if i == 2 {
						if err := at.Succeeded(ctx); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			a.PerAddress = 5
			for i := range 20 { // every connection signs in: never blocked
				at, err := a.Begin(ctx, "bob", "192.0.2.2")
				if err != nil || at.Blocked {
					t.Fatalf("success %d from one address: blocked=%v err=%v", i, at.Blocked, err)
				}
				at.Succeeded(ctx)
			}
		})
	}
}
