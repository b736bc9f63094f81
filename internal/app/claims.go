package app

import (
	"context"
	"time"
)

// claimSweep is how often serve deletes unverified domain claims past
// their time. Reads already treat an expired claim as gone, so the sweep
// only frees the rows; a few minutes late costs nothing.
const claimSweep = 5 * time.Minute

// sweepClaims deletes expired domain claims until ctx ends.
func (a *App) sweepClaims(ctx context.Context) {
	t := time.NewTicker(claimSweep)
	defer t.Stop()
	for {
		if n, err := a.Domains.DeleteExpiredClaims(ctx); err != nil {
			if ctx.Err() == nil {
				a.Logger.Warn("deleting expired domain claims failed", "error", err)
			}
		} else if n > 0 {
			a.Logger.Info("deleted expired domain claims", "count", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
