package egress

import "time"

// Warmup is a source's warm-up schedule: Steps[n] messages on the n-th
// UTC day from Start, no limit after the last.
type Warmup struct {
	Start time.Time // a UTC midnight; zero: no schedule
	Steps []int
}

// Cap is how many messages the source may send on the UTC day holding
// now, and whether there is a cap at all.
func (w Warmup) Cap(now time.Time) (int, bool) {
	if len(w.Steps) == 0 {
		return 0, false
	}
	day := Day(now)
	if day.Before(w.Start) {
		return 0, true // not started: the source is not to be used yet
	}
	n := int(day.Sub(w.Start) / (24 * time.Hour))
	if n >= len(w.Steps) {
		return 0, false
	}
	return w.Steps[n], true
}

// Day is the start of the UTC day holding t.
func Day(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}
