package sending

import (
	"math/rand/v2"
	"time"
)

// Policy decides when a temporarily failed delivery is tried again.
type Policy struct {
	Schedule []time.Duration // delay after attempt 1, 2, ...; the last repeats
	MaxAge   time.Duration   // give up once a message would be older than this
	// Jitter spreads each delay by up to this fraction either way (0.1:
	// ±10%), so that a batch a receiver refused at once does not come
	// back to it as one wave.
	Jitter float64
}

// Next returns when attempt number attempts+1 is due after a temporary
// failure at now, honouring a longer hint from the receiving server, and
// false when the message is too old to try again.
func (p Policy) Next(created, now time.Time, attempts int, hint time.Duration) (time.Time, bool) {
	delay := time.Minute
	if len(p.Schedule) > 0 {
		delay = p.Schedule[min(max(attempts, 1), len(p.Schedule))-1]
	}
	if hint > delay && hint <= 24*time.Hour {
		delay = hint
	}
	if p.Jitter > 0 {
		delay = time.Duration(float64(delay) * (1 + p.Jitter*(2*rand.Float64()-1)))
	}
	next := now.Add(delay)
	if p.MaxAge > 0 && next.Sub(created) > p.MaxAge {
		return time.Time{}, false
	}
	return next, true
}
