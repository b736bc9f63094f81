package app

import (
	"context"
	"time"

	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/validation"
)

// metaValidationEpoch counts changes made to the validation cache from
// outside a server (purges, refreshes): servers that see it move drop
// their in-memory copies.
const metaValidationEpoch = "validation_cache_epoch"

// epochPoll is how often a server looks at the counter: a purge reaches
// every server within about this long.
const epochPoll = 2 * time.Second

// PurgeValidationCache deletes cached verdicts (all, a domain's, or one
// address's; see validation.PurgePatterns) and tells every server.
func (a *App) PurgeValidationCache(ctx context.Context, target string) (int64, error) {
	patterns, err := validation.PurgePatterns(target)
	if err != nil {
		return 0, err
	}
	n, err := store.NewValidationCache(a.DB).Purge(ctx, patterns)
	if err != nil {
		return 0, err
	}
	return n, a.ValidationCacheChanged(ctx)
}

// ValidationCacheChanged tells running servers that cached verdicts were
// replaced or removed, so they stop answering from memory.
func (a *App) ValidationCacheChanged(ctx context.Context) error {
	_, err := store.NewMeta(a.DB).Bump(ctx, metaValidationEpoch)
	return err
}

// watchValidationCache drops the validator's in-memory verdicts whenever
// the counter moves, until ctx ends.
func (a *App) watchValidationCache(ctx context.Context) {
	meta := store.NewMeta(a.DB)
	last, err := meta.Counter(ctx, metaValidationEpoch)
	if err != nil {
		a.Logger.Warn("validation cache counter unreadable", "error", err)
	}
	t := time.NewTicker(epochPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n, err := meta.Counter(ctx, metaValidationEpoch)
		if err != nil || n == last {
			continue
		}
		last = n
		a.Validator.ForgetCached()
		a.Logger.Info("validation cache changed by another process; in-memory copies dropped")
	}
}
