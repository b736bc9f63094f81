package app

import (
	"context"
	"time"

	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/validation"
)

// The validation's bounce history lives in memory (validation.History), so
// that a cached verdict costs no database read; serve follows the
// suppression lists to keep it current:
//   - new bounce suppressions every historyPoll, by id (with an overlap,
//     since on PostgreSQL ids may commit out of order),
//   - a full reload when any suppression was removed (a counter in meta),
//     and every historyReload in any case.
const (
	historyPoll    = 2 * time.Second
	historyReload  = 10 * time.Minute
	historyOverlap = 1000
	historyPage    = 10000
)

// LoadBounceHistory fills the validator's bounce history from the database.
// serve does it at start; a CLI validation does it before validating.
func (a *App) LoadBounceHistory(ctx context.Context) error {
	_, err := a.reloadHistory(ctx)
	return err
}

// reloadHistory replaces the history and returns the highest id read.
func (a *App) reloadHistory(ctx context.Context) (int64, error) {
	var last int64
	err := a.bounceHistory.Replace(func(yield func(int64, string)) error {
		var err error
		last, err = a.readBounces(ctx, 0, yield)
		return err
	})
	return last, err
}

// readBounces feeds every bounce with id > after to yield and returns the
// highest id seen (after when none).
func (a *App) readBounces(ctx context.Context, after int64, yield func(int64, string)) (int64, error) {
	s := store.NewSuppressions(a.DB)
	for {
		rows, err := s.Bounces(ctx, after, historyPage)
		if err != nil {
			return after, err
		}
		for _, r := range rows {
			yield(r.AccountID, r.Recipient)
			after = r.ID
		}
		if len(rows) < historyPage {
			return after, nil
		}
	}
}

// followBounceHistory keeps the history current until ctx ends.
func (a *App) followBounceHistory(ctx context.Context, last int64) {
	meta := store.NewMeta(a.DB)
	removed, _ := meta.Counter(ctx, store.MetaSuppressionsRemoved)
	reloaded := time.Now()
	t := time.NewTicker(historyPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n, err := meta.Counter(ctx, store.MetaSuppressionsRemoved)
		if err == nil && (n != removed || time.Since(reloaded) > historyReload) {
			if l, err := a.reloadHistory(ctx); err == nil {
				removed, last, reloaded = n, l, time.Now()
				continue
			}
		}
		if l, err := a.readBounces(ctx, max(last-historyOverlap, 0), a.bounceHistory.Add); err == nil {
			last = max(l, last)
		} else if ctx.Err() == nil {
			a.Logger.Warn("bounce history not updated", "error", err)
		}
	}
}

var _ validation.BounceHistory = (*validation.History)(nil)
