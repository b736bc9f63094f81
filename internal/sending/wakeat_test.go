package sending

import (
	"sync/atomic"
	"testing"
	"time"
)

// The alarm wakes once for each time asked, the earliest first, however
// they were asked: deliveries released for different times are each
// looked for when they come due.
func TestAlarmWakesAtEachTime(t *testing.T) {
	t.Parallel()
	var wakes atomic.Int64
	woke := make(chan time.Time, 10)
	a := &alarm{now: time.Now, wake: func() { wakes.Add(1); woke <- time.Now() }}
	defer a.stop()
	start := time.Now()
	for _, d := range []time.Duration{150, 50, 100} {
		a.set(start.Add(d * time.Millisecond))
	}
	for i, want := range []time.Duration{50, 100, 150} {
		select {
		case at := <-woke:
			if got := at.Sub(start); got < want*time.Millisecond {
				t.Errorf("wake %d after %v, want at %dms", i, got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("wake %d (at %dms) did not come", i, want)
		}
	}
	time.Sleep(50 * time.Millisecond)
	if n := wakes.Load(); n != 3 {
		t.Errorf("%d wakes, want 3", n)
	}
}
