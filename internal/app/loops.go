package app

import (
	"context"

	"github.com/postline/postline/internal/validation"
)

// loop is a background loop that lives as long as serve: each lives in the
// package whose data it tends, and app only starts and stops them.
type loop interface {
	Start(ctx context.Context) error
	Stop()
}

// startLoops starts serve's loops over the stores (the validation cache's
// watcher, the claim and idempotency-key sweepers, the DNS re-checks when
// on, the follower of the suppression lists) and returns what stops them.
// A loop that does not start stops those started before it.
func (a *App) startLoops(ctx context.Context) (stop func(), err error) {
	loops := []loop{
		validation.NewCacheWatcher(validation.CacheWatcherConfig{Epoch: a.validationEpoch, Cache: a.Validator, Logger: a.Logger}),
		a.Domains.NewClaimSweeper(),
		a.Sending.NewIdempotencySweeper(a.Logger),
	}
	if every := a.Config.DomainRecheckInterval; every > 0 {
		loops = append(loops, a.Domains.NewRechecker(every))
	}
	loops = append(loops, a.ListFollower)
	var started []loop
	stop = func() {
		for i := len(started) - 1; i >= 0; i-- {
			started[i].Stop()
		}
	}
	for _, l := range loops {
		if err := l.Start(ctx); err != nil {
			stop()
			return nil, err
		}
		started = append(started, l)
	}
	return stop, nil
}
