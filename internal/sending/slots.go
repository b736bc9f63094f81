package sending

import "context"

// slots bounds a worker's attempts: at most n building, signing and
// sending at once, and at most n more whose outcome waits for its group
// commit. An attempt hands its slot over once its outcome is known, so the
// next attempt builds and signs while the commit's fsync runs; when the
// slot was held until the commit, all of them often waited for the same
// fsync and the processor idled. The outcome slots keep what a crash can
// make us send twice (sent, outcome not yet committed) at 2n. An attempt
// that waits for its turn under its egress path's limits (a start booked
// under max_message_rate, a place in the queue for a connection) hands its
// slot over too (wait) and takes one again when its turn comes (resume),
// so at most n attempts build or send at once whatever waits: with the
// slots held by deliveries sleeping until their booked starts, every other
// site waited behind them (the simnet benchmark with recipients sorted by
// domain: 0.125 of the rate bound, 0.44 once they hand over). Admission
// bounds how many wait so: connection_limit places per path (a
// connection's worth while its provider is full), starts booked at most a
// second ahead.
type slots struct {
	attempts  chan struct{}
	recording chan struct{}
	freed     chan struct{} // a token when an attempt slot frees (never blocks)
}

func newSlots(n int) *slots {
	return &slots{attempts: make(chan struct{}, n), recording: make(chan struct{}, n), freed: make(chan struct{}, n)}
}

// free is how many attempts could start now.
func (s *slots) free() int { return cap(s.attempts) - len(s.attempts) }

// take holds an attempt slot for a new attempt, waiting for one to free;
// false when ctx ends first.
func (s *slots) take(ctx context.Context) (*slot, bool) {
	select {
	case s.attempts <- struct{}{}:
	case <-ctx.Done():
		return nil, false
	}
	if ctx.Err() != nil { // both were ready: stopping wins
		<-s.attempts
		return nil, false
	}
	return &slot{s: s, attempt: true}, true
}

// slot is one attempt's hold on slots. It is used by the attempt's own
// goroutine only.
type slot struct {
	s         *slots
	attempt   bool // holds an attempt slot
	waited    bool // gave its attempt slot back to wait for its turn (wait)
	recording bool // holds an outcome slot
}

// wait gives the attempt slot back while the attempt waits for its turn:
// the next attempt may build meanwhile. Its outcome still takes an outcome
// slot (record). A second call does nothing.
func (h *slot) wait() {
	if h == nil || !h.attempt {
		return
	}
	h.waited = true
	h.freeAttempt()
}

// resume takes an attempt slot again for an attempt whose turn came after
// wait, before it sends: what is sent and not yet recorded stays at most
// 2n. It waits for a slot while n attempts build or send, which delays the
// message past its booked start, never before it; an error when ctx ends
// first. It does nothing for an attempt that holds its slot.
func (h *slot) resume(ctx context.Context) error {
	if h == nil || !h.waited {
		return nil
	}
	select {
	case h.s.attempts <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	h.attempt, h.waited = true, false
	return nil
}

// record moves the hold from the attempt slot (or from none, after wait)
// to an outcome slot, waiting while n outcomes already wait for their
// commit. A second call does nothing.
func (h *slot) record() {
	if h == nil || !(h.attempt || h.waited) {
		return
	}
	h.s.recording <- struct{}{}
	h.recording, h.waited = true, false
	if h.attempt {
		h.freeAttempt()
	}
}

// release gives back whatever the attempt still holds.
func (h *slot) release() {
	if h.recording {
		<-h.s.recording
		h.recording = false
	}
	if h.attempt {
		h.freeAttempt()
	}
}

func (h *slot) freeAttempt() {
	<-h.s.attempts
	h.attempt = false
	select {
	case h.s.freed <- struct{}{}:
	default:
	}
}

type slotKey struct{}

// withSlot gives an attempt's context its slot, which finish hands over
// when the outcome is known (record), however deep in the attempt that is.
func withSlot(ctx context.Context, h *slot) context.Context {
	return context.WithValue(ctx, slotKey{}, h)
}

// slotOf is the attempt's slot, nil outside an attempt (tests calling
// finish directly).
func slotOf(ctx context.Context) *slot {
	h, _ := ctx.Value(slotKey{}).(*slot)
	return h
}
