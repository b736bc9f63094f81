package app

import (
	"context"
	"time"

	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/validation"
)

// Two things live in memory from the suppression lists, and serve follows
// the lists to keep them current (followLists):
//   - the validation's bounce history (validation.History), so that a
//     cached verdict costs no database read;
//   - the intake's key index (suppression.KeyIndex), so that a send to
//     recipients with no entry costs no suppression read.
//
// Following: new entries every historyPoll, by id (with an overlap, since
// on PostgreSQL ids may commit out of order); a full reload when any entry
// was removed (a counter in meta), and every historyReload in any case.
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
	return readAfter(ctx, after, store.NewSuppressions(a.DB).Bounces,
		func(r store.BounceRow) int64 { yield(r.AccountID, r.Recipient); return r.ID })
}

// readAfter pages through the rows with id > after, handing each to each
// (which returns its id), and returns the highest id seen.
func readAfter[T any](ctx context.Context, after int64, page func(context.Context, int64, int) ([]T, error), each func(T) int64) (int64, error) {
	for {
		rows, err := page(ctx, after, historyPage)
		if err != nil {
			return after, err
		}
		for _, r := range rows {
			after = each(r)
		}
		if len(rows) < historyPage {
			return after, nil
		}
	}
}

// reloadKeyIndex replaces the intake's key index and returns the highest
// id read.
func (a *App) reloadKeyIndex(ctx context.Context) (int64, error) {
	return a.syncKeyIndex(ctx, 0, a.keyIndex.Replace)
}

// addKeys follows the key index from after (with the overlap).
func (a *App) addKeys(ctx context.Context, after int64) (int64, error) {
	return a.syncKeyIndex(ctx, after, a.keyIndex.Add)
}

// syncKeyIndex reads the keys with id > after into the index through apply
// (Replace or Add), with the write mark taken before the read.
func (a *App) syncKeyIndex(ctx context.Context, after int64,
	apply func(mark uint64, each func(yield func(int64, string)) error) error) (int64, error) {
	last := after
	mark := a.keyIndex.Mark()
	err := apply(mark, func(yield func(int64, string)) error {
		var err error
		last, err = a.readKeys(ctx, after, yield)
		return err
	})
	return last, err
}

// readKeys feeds every entry's key with id > after to yield and returns
// the highest id seen (after when none).
func (a *App) readKeys(ctx context.Context, after int64, yield func(int64, string)) (int64, error) {
	return readAfter(ctx, after, store.NewSuppressions(a.DB).SuppressionKeys,
		func(r store.SuppressionKey) int64 { yield(r.DomainID, r.Recipient); return r.ID })
}

// listFollower keeps one in-memory copy of the lists current: reload
// replaces it whole, since adds what came after an id.
type listFollower struct {
	name   string
	last   int64
	reload func(context.Context) (int64, error)
	since  func(context.Context, int64) (int64, error)
}

// followLists keeps the followers current until ctx ends.
func (a *App) followLists(ctx context.Context, fs ...*listFollower) {
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
		reload := err == nil && (n != removed || time.Since(reloaded) > historyReload)
		ok := true
		for _, f := range fs {
			if reload {
				if l, err := f.reload(ctx); err == nil {
					f.last = l
					continue
				}
				ok = false
			}
			if l, err := f.since(ctx, max(f.last-historyOverlap, 0)); err == nil {
				f.last = max(l, f.last)
			} else if ctx.Err() == nil {
				a.Logger.Warn(f.name+" not updated", "error", err)
			}
		}
		if reload && ok {
			removed, reloaded = n, time.Now()
		}
	}
}

// FollowLists loads the bounce history and the key index and follows the
// lists until ctx ends (serve does it; so do benchmarks that serve the API
// without Serve).
func (a *App) FollowLists(loadCtx, ctx context.Context) error {
	lastBounce, err := a.reloadHistory(loadCtx)
	if err != nil {
		return err
	}
	lastKey, err := a.reloadKeyIndex(loadCtx)
	if err != nil {
		return err
	}
	go a.followLists(ctx,
		&listFollower{name: "bounce history", last: lastBounce, reload: a.reloadHistory,
			since: func(ctx context.Context, after int64) (int64, error) {
				return a.readBounces(ctx, after, a.bounceHistory.Add)
			}},
		&listFollower{name: "suppression key index", last: lastKey, reload: a.reloadKeyIndex, since: a.addKeys})
	return nil
}

var _ validation.BounceHistory = (*validation.History)(nil)
