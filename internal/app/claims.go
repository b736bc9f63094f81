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

// recheckPass is how often serve looks for verified domains due for a
// re-check of their DNS records (each pass takes domain.RecheckBatch at
// most): a day's re-checks of 14,400 domains.
const recheckPass = time.Minute

// recheckDomains looks up the records of verified domains once every
// interval each, a few at a time, until ctx ends. A failed check leaves
// the domain verified; the console shows "records changed since
// verification".
func (a *App) recheckDomains(ctx context.Context, every time.Duration) {
	t := time.NewTicker(min(recheckPass, every))
	defer t.Stop()
	for {
		if n, err := a.Domains.RecheckDue(ctx, every); err != nil {
			if ctx.Err() == nil {
				a.Logger.Warn("re-checking domains' DNS records failed", "error", err)
			}
		} else if n > 0 {
			a.Logger.Debug("re-checked domains' DNS records", "count", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
