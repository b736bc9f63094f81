package members_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/postline/postline/internal/members"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/testutil"
)

// clock is a settable clock shared by the registries of one test.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Shares over one database: the limits of processes that count each
// other add up to the whole, a newcomer takes nothing until the others
// have counted it, and a leaver's share goes back to the others.
func TestSharesAddUp(t *testing.T) {
	for _, d := range testutil.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			db := testutil.OpenDB(t, d)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			c := &clock{t: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)}
			// A beat of an hour, so the test beats by hand (Start's first
			// beat, then beat), an hour at a time on its own clock; rows
			// expire after three beats.
			cfg := members.Config{Store: store.NewMembers(db), Beat: time.Hour, Now: c.Now}
			a := members.New(cfg)
			if got := a.Share(10); got != 10 {
				t.Fatalf("before Start: share %d of 10, want the whole (a command that does not deliver)", got)
			}
			a.Start(ctx)
			if got, div := a.Share(10), a.Divisor(); got != 10 || div != 1 {
				t.Fatalf("alone: share %d of 10, divisor %d; want 10, 1", got, div)
			}

			c.Add(time.Second)
			b := members.New(cfg)
			b.Start(ctx)
			if got, div := b.Share(10), b.Divisor(); got != 0 || div != 0 {
				t.Fatalf("newcomer before the others counted it: share %d, divisor %d; want none", got, div)
			}
			beat := func(rs ...*members.Registry) {
				t.Helper()
				c.Add(time.Hour)
				for _, r := range rs {
					members.BeatForTest(ctx, r)
				}
			}
			beat(a, b)
			if got := a.Share(10); got != 5 {
				t.Fatalf("a after counting b: share %d of 10, want 5", got)
			}
			if got := b.Share(10); got != 0 {
				t.Fatalf("b one beat after joining: share %d, want 0 until two beats", got)
			}
			beat(a, b)
			for _, lim := range []int{1, 2, 3, 7, 10} {
				if sa, sb := a.Share(lim), b.Share(lim); sa+sb != lim || sa < sb {
					t.Errorf("limit %d: shares %d + %d; want them to add up, the older process first", lim, sa, sb)
				}
			}
			if a.Divisor() != 2 || b.Divisor() != 2 {
				t.Errorf("divisors %d, %d; want 2 each", a.Divisor(), b.Divisor())
			}

			// b stops: its row goes, and a has the whole again at its next beat.
			b.Stop()
			beat(a)
			if got := a.Share(10); got != 10 {
				t.Errorf("after b stopped: a's share %d, want 10", got)
			}

			// A process that dies keeps its share until its row expires.
			dead := members.New(cfg)
			dead.Start(context.Background())
			beat(a)
			if got := a.Share(10); got != 5 {
				t.Fatalf("with a process that is to die: a's share %d, want 5", got)
			}
			c.Add(2 * time.Hour)
			beat(a)
			if got := a.Share(10); got != 10 {
				t.Errorf("after the dead process's row expired: a's share %d, want 10", got)
			}
			a.Stop()
		})
	}
}
