package app

import (
	"context"

	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/validation"
)

// metaValidationEpoch counts changes made to the validation cache from
// outside a server (purges, refreshes): servers that see it move drop
// their in-memory copies.
const metaValidationEpoch = "validation_cache_epoch"

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

// validationEpoch reads the counter ValidationCacheChanged bumps, which
// servers watch (validation.CacheWatcher).
func (a *App) validationEpoch(ctx context.Context) (int64, error) {
	return store.NewMeta(a.DB).Counter(ctx, metaValidationEpoch)
}
