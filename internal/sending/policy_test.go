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
