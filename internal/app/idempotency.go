package app

import (
	"context"
	"time"
)

// idempotencySweep is how often serve deletes idempotency keys past
// sending.IdempotencyKept: the API's, and one per message an inbound
// route forwarded to an address.
const idempotencySweep = 10 * time.Minute

// sweepIdempotencyKeys deletes old idempotency keys until ctx ends.
func (a *App) sweepIdempotencyKeys(ctx context.Context) {
	t := time.NewTicker(idempotencySweep)
	defer t.Stop()
	for {
		if n, err := a.Sending.PruneIdempotencyKeys(ctx); err != nil {
			if ctx.Err() == nil {
				a.Logger.Warn("deleting old idempotency keys failed", "error", err)
			}
		} else if n > 0 {
			a.Logger.Debug("deleted old idempotency keys", "count", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
