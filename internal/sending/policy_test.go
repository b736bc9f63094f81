package sending

import (
	"testing"
	"time"
)

func TestPolicyNext(t *testing.T) {
	t.Parallel()
	p := Policy{Schedule: []time.Duration{time.Minute, 5 * time.Minute, time.Hour}, MaxAge: 3 * time.Hour}
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		now      time.Duration // since created
		attempts int
		hint     time.Duration
		wantIn   time.Duration // next - now
		ok       bool
	}{
		{0, 1, 0, time.Minute, true},
		{time.Minute, 2, 0, 5 * time.Minute, true},
		{10 * time.Minute, 3, 0, time.Hour, true},
		{70 * time.Minute, 9, 0, time.Hour, true}, // the last delay repeats
		{time.Minute, 1, 10 * time.Minute, 10 * time.Minute, true},
		{time.Minute, 2, time.Second, 5 * time.Minute, true}, // a shorter hint does not hurry us
		{150 * time.Minute, 4, 0, 0, false},                  // next would pass max age
	}
	for _, c := range cases {
		now := created.Add(c.now)
		next, ok := p.Next(created, now, c.attempts, c.hint)
		if ok != c.ok || (ok && next.Sub(now) != c.wantIn) {
			t.Errorf("Next(now=+%s, attempts=%d, hint=%s) = +%s, %v; want +%s, %v", c.now, c.attempts, c.hint, next.Sub(now), ok, c.wantIn, c.ok)
		}
	}
}

// TestPolicyJitter: with Jitter 0.1 each delay lies within ±10% of the
// schedule's, and a batch deferred at once is spread over that range
// instead of coming back as one wave.
func TestPolicyJitter(t *testing.T) {
	t.Parallel()
	p := Policy{Schedule: []time.Duration{10 * time.Minute}, Jitter: 0.1}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	lo, hi := time.Duration(1<<62), time.Duration(0)
	for range 1000 {
		next, ok := p.Next(now, now, 1, 0)
		d := next.Sub(now)
		if !ok || d < 9*time.Minute || d > 11*time.Minute {
			t.Fatalf("delay %s (ok %v), want within 10 min ± 10%%", d, ok)
		}
		lo, hi = min(lo, d), max(hi, d)
	}
	if hi-lo < 90*time.Second {
		t.Errorf("1,000 delays span only %s..%s; want them spread over most of 9..11 min", lo, hi)
	}
}
