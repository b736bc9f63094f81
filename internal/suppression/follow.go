package suppression

import (
	"context"
	"log/slog"
	"time"

	"github.com/postline/postline/internal/background"
)

// Two things live in memory from the lists, and serve follows the lists
// to keep them current (ListFollower):
//   - the validation's bounce history (validation.History), so that a
//     cached verdict costs no database read;
//   - the intake's key index (KeyIndex), so that a send to recipients
//     with no entry costs no suppression read.
//
// Following: new entries every followPoll, by id (with an overlap, since
// on PostgreSQL ids may commit out of order); a full reload when any entry
// was removed (a counter the store keeps), and every followReload in any
// case.
const (
	followPoll    = 2 * time.Second
	followReload  = 10 * time.Minute
	followOverlap = 1000
)

// ListFollowerConfig says what a ListFollower keeps current.
type ListFollowerConfig struct {
	// Removals reads the count of entries ever removed: a removal cannot
	// be followed by id, so when the count moves the copies reload.
	Removals func(ctx context.Context) (int64, error)
	Copies   []*ListCopy
	Logger   *slog.Logger
}

// ListFollower keeps in-memory copies of the lists current.
type ListFollower struct {
	cfg      ListFollowerConfig
	removed  int64     // the count of removals at the last reload
	reloaded time.Time // when the copies last reloaded
	loop     background.Loop
}

// NewListFollower returns a follower; it loads and follows once started.
func NewListFollower(cfg ListFollowerConfig) *ListFollower { return &ListFollower{cfg: cfg} }

// Start loads every copy, then follows the lists until Stop or ctx ends.
// A copy that does not load is an error, and nothing is followed.
func (f *ListFollower) Start(ctx context.Context) error {
	// The count before the load: a removal while the copies load makes the
	// first pass reload them, instead of going unseen until followReload.
	f.removed, _ = f.cfg.Removals(ctx)
	f.reloaded = time.Now()
	for _, c := range f.cfg.Copies {
		if err := c.Load(ctx); err != nil {
			return err
		}
	}
	f.loop = background.Loop{Every: followPoll, Wait: true, Pass: f.runOnce}
	return f.loop.Start(ctx)
}

// Stop ends the following and waits for a pass in progress.
func (f *ListFollower) Stop() { f.loop.Stop() }

// runOnce reloads the copies when the lists lost entries (or the reload
// is due), and otherwise adds what came since each copy's last id. A copy
// that fails to reload is followed by id meanwhile, and the reload is
// tried again at the next pass.
func (f *ListFollower) runOnce(ctx context.Context) {
	n, err := f.cfg.Removals(ctx)
	reload := err == nil && (n != f.removed || time.Since(f.reloaded) > followReload)
	ok := true
	for _, c := range f.cfg.Copies {
		if reload {
			if err := c.Load(ctx); err == nil {
				continue
			}
			ok = false
		}
		if l, err := c.since(ctx, max(c.last-followOverlap, 0)); err == nil {
			c.last = max(l, c.last)
		} else if ctx.Err() == nil {
			f.cfg.Logger.Warn(c.name+" not updated", "error", err)
		}
	}
	if reload && ok {
		f.removed, f.reloaded = n, time.Now()
	}
}
