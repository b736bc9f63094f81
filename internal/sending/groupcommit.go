package sending

import (
	"context"
	"errors"
	"sync"
	"time"
)

// errRetryAlone is what a grouped call gets when its group's transaction
// failed: the caller repeats its own work alone, so one bad job (or one
// caller's cancelled context) cannot fail the others.
var errRetryAlone = errors.New("sending: group commit failed; retry alone")

// groupCommit commits work submitted concurrently in groups: one transaction
// for the calls that arrive together, instead of one each.
// A caller that finds no group in progress leads: it commits every call
// queued so far, its own first, in one go. Calls that arrive meanwhile
// queue behind it, and the oldest of them leads the next group. Unless the
// group commit lingers, a lone caller commits at once: nobody waits for
// company, so the group size follows the load. Each caller returns only
// after its own work was committed (or failed).
type groupCommit[J any] struct {
	max    int                                       // calls per group at most
	commit func(ctx context.Context, jobs []J) error // one transaction for all jobs
	// linger, when set, lets a leader whose group has fewer than full calls
	// wait up to linger for more before committing: fewer, larger
	// transactions. full 0 adapts to the load: twice the last group, and
	// no waiting at all after a group of one, so a client sending alone
	// (one request after another) never waits. Groups stop at max either
	// way.
	linger time.Duration
	full   int

	mu     sync.Mutex
	queue  []*groupCall[J] // queue[0] leads the next group when busy
	busy   bool            // a leader is active or chosen
	last   int             // the size of the last group
	want   int             // while a leader lingers: the group size that ends the wait
	filled chan struct{}   // closed when the queue reaches want while a leader lingers
}

type groupCall[J any] struct {
	job  J
	done chan struct{} // closed when committed, or when chosen to lead
	lead bool
	err  error
}

// do commits job in a group. It returns commit's error when job was
// committed alone, and errRetryAlone when its group failed.
func (b *groupCommit[J]) do(ctx context.Context, job J) error {
	c := &groupCall[J]{job: job, done: make(chan struct{})}
	b.mu.Lock()
	b.queue = append(b.queue, c)
	if b.filled != nil && len(b.queue) >= b.want {
		close(b.filled)
		b.filled = nil
	}
	if b.busy {
		b.mu.Unlock()
		<-c.done
		if !c.lead {
			return c.err
		}
		b.mu.Lock()
	}
	// c leads and is queue[0]: the queue is empty whenever nobody leads,
	// and a hand-over always picks the oldest call.
	b.busy = true
	b.lingerLocked()
	n := min(len(b.queue), max(b.max, 1))
	b.last = n
	calls := make([]*groupCall[J], n)
	copy(calls, b.queue)
	b.queue = append(b.queue[:0], b.queue[n:]...)
	b.mu.Unlock()

	jobs := make([]J, n)
	for i, o := range calls {
		jobs[i] = o.job
	}
	// Deferred so that even a panicking lone commit hands over instead of
	// wedging every later call.
	err := errRetryAlone
	defer func() {
		b.mu.Lock()
		if len(b.queue) > 0 { // hand over: the next group starts while this one's callers return
			next := b.queue[0]
			next.lead = true
			close(next.done)
		} else {
			b.busy = false
		}
		b.mu.Unlock()
		for _, o := range calls[1:] {
			o.err = err
			close(o.done)
		}
	}()
	// The group's transaction is everyone's: the leader's request going
	// away must not cancel it (the others would all retry alone).
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), groupTimeout)
	defer cancel()
	err = b.commitRecovered(cctx, jobs)
	if err != nil && n > 1 {
		err = errRetryAlone
	}
	return err
}

// lingerLocked waits, with b.mu held on entry and exit, until full calls
// are queued or linger passes, when the group commit lingers at all.
func (b *groupCommit[J]) lingerLocked() {
	want := b.full
	if want == 0 {
		if b.last < 2 {
			return
		}
		want = 2 * b.last
	}
	want = min(want, max(b.max, 1)) // a full group commits at once
	if b.linger <= 0 || len(b.queue) >= want {
		return
	}
	filled := make(chan struct{})
	b.filled, b.want = filled, want
	b.mu.Unlock()
	t := time.NewTimer(b.linger)
	select {
	case <-filled:
	case <-t.C:
	}
	t.Stop()
	b.mu.Lock()
	b.filled = nil
}

// commitRecovered turns a panic in a group's commit into errRetryAlone for
// every member, the leader included: the panic may come from anyone's job,
// and only the culprit's own retry should meet it again.
func (b *groupCommit[J]) commitRecovered(ctx context.Context, jobs []J) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if len(jobs) == 1 {
				panic(r) // alone, the job is the culprit
			}
			err = errRetryAlone
		}
	}()
	return b.commit(ctx, jobs)
}

// groupTimeout bounds one group's transaction.
const groupTimeout = 30 * time.Second
