// Package clock is a clock for tests: it stands still until the test
// moves it, and is safe for concurrent use.
package clock

import (
	"sync"
	"time"
)

// Fake is a clock the test moves by hand.
type Fake struct {
	mu sync.Mutex
	t  time.Time
}

// New returns a clock showing t.
func New(t time.Time) *Fake { return &Fake{t: t} }

// Now returns the clock's time; use it as a NowFunc.
func (c *Fake) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *Fake) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
