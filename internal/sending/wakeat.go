package sending

import (
	"container/heap"
	"sync"
	"time"
)

// alarm wakes the claim loop when deliveries given back to the queue for
// a while (they waited for their turn at a rate or a site's limits) come
// due, rather than at the next poll: they come back at the pace their
// egress path takes them, and a poll's second would idle the path. It
// keeps the times asked (up to maxAlarms; past that the poll finds the
// rest) and one timer, for the earliest.
type alarm struct {
	mu    sync.Mutex
	times timeHeap
	tm    *time.Timer
	at    time.Time // when tm fires
	now   func() time.Time
	wake  func()
}

// maxAlarms bounds the times an alarm keeps.
const maxAlarms = 10_000

// set asks for a wake-up at at.
func (a *alarm) set(at time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.times) >= maxAlarms {
		return
	}
	heap.Push(&a.times, at)
	a.arm()
}

// arm sets the timer for the earliest time kept, unless it is set for it.
// a.mu is held.
func (a *alarm) arm() {
	if len(a.times) == 0 || a.tm != nil && !a.at.After(a.times[0]) {
		return
	}
	if a.tm != nil {
		a.tm.Stop()
	}
	a.at = a.times[0]
	a.tm = time.AfterFunc(max(a.at.Sub(a.now()), 0), a.fire)
}

// fire wakes the claim loop, forgets the times now past and arms the
// timer for the next.
func (a *alarm) fire() {
	a.mu.Lock()
	now := a.now()
	for len(a.times) > 0 && !a.times[0].After(now) {
		heap.Pop(&a.times)
	}
	a.tm = nil
	a.arm()
	a.mu.Unlock()
	a.wake()
}

// stop cancels the wake-ups.
func (a *alarm) stop() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.tm != nil {
		a.tm.Stop()
		a.tm = nil
	}
	a.times = nil
}

// timeHeap is a min-heap of times (container/heap).
type timeHeap []time.Time

func (h timeHeap) Len() int           { return len(h) }
func (h timeHeap) Less(i, j int) bool { return h[i].Before(h[j]) }
func (h timeHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *timeHeap) Push(x any)        { *h = append(*h, x.(time.Time)) }
func (h *timeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
