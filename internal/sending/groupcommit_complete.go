package sending

import (
	"context"
	"errors"
	"time"
)

// completeGroupMax is the most outcomes one transaction records. With
// Concurrency outcome slots a group is never larger than that anyway.
const completeGroupMax = 64

// completeLinger is how long a group of outcomes waits for more before it
// commits, unless every outcome slot is already in it. The attempts have
// handed their slots on (slots.go), so the wait holds up no sending (only
// an attempt waiting for an outcome slot, which keeps its attempt slot, at
// most this long); it makes groups larger, and each commit (WAL frames and an fsync on SQLite)
// costs the processor as much as several outcomes' rows. Measured: a
// third of the commits and ~10% less CPU per message (BENCHMARKS.md).
const completeLinger = time.Millisecond

// completion is one outcome on its way to the store, and what came back.
type completion struct {
	c    Completion
	held bool
}

func (w *Worker) newCompleter() *groupCommit[*completion] {
	return &groupCommit[*completion]{max: completeGroupMax, linger: completeLinger, full: w.cfg.Concurrency, commit: func(ctx context.Context, cs []*completion) error {
		args := make([]Completion, len(cs))
		for i, c := range cs {
			args[i] = c.c
		}
		held, err := w.store.CompleteMany(ctx, w.owner, args)
		if err != nil {
			return err
		}
		for i, c := range cs {
			c.held = held[i]
		}
		return nil
	}}
}

// complete records an outcome if the lease is still held, in one
// transaction with the outcomes of the other attempts finishing at the
// same time (group commit). It returns only once this outcome committed:
// the attempt keeps its outcome slot (slots.go) and its lease renewal
// until then, so no more than twice Concurrency deliveries are ever sent
// and not yet recorded, which bounds what a crash can make us send twice.
// A group that fails is retried outcome by outcome, so one bad outcome
// cannot sink others.
func (w *Worker) complete(ctx context.Context, c Completion) (bool, error) {
	p := &completion{c: c}
	err := w.completes.do(ctx, p)
	if errors.Is(err, errRetryAlone) {
		return w.store.Complete(ctx, c.ID, w.owner, c.Outcome, c.Entries, c.Bounce)
	}
	return p.held, err
}
