package validation

import (
	"context"
	"log/slog"
	"time"

	"github.com/postline/postline/internal/background"
)

// epochPoll is how often a server looks at the cache's change counter: a
// purge reaches every server within about this long.
const epochPoll = 2 * time.Second

// CacheWatcherConfig says where a CacheWatcher looks and what it drops.
type CacheWatcherConfig struct {
	// Epoch reads the counter that other processes bump when they change
	// the shared cache (purges, refreshes): a server cannot see those
	// changes otherwise, and would answer from memory what is gone.
	Epoch func(ctx context.Context) (int64, error)
	// Cache is the in-memory copy to drop when the counter moves (the
	// Validator's).
	Cache  interface{ ForgetCached() }
	Logger *slog.Logger
}

// CacheWatcher drops the in-memory verdicts whenever the counter moves.
type CacheWatcher struct {
	cfg  CacheWatcherConfig
	last int64
	loop background.Loop
}

// NewCacheWatcher returns a watcher; it runs once started.
func NewCacheWatcher(cfg CacheWatcherConfig) *CacheWatcher { return &CacheWatcher{cfg: cfg} }

// Start reads the counter, then looks again every epochPoll until Stop or
// ctx ends. An unreadable counter is logged, not fatal: the watcher keeps
// looking.
func (w *CacheWatcher) Start(ctx context.Context) error {
	var err error
	if w.last, err = w.cfg.Epoch(ctx); err != nil {
		w.cfg.Logger.Warn("validation cache counter unreadable", "error", err)
	}
	w.loop = background.Loop{Every: epochPoll, Wait: true, Pass: w.runOnce}
	return w.loop.Start(ctx)
}

// Stop ends the watch and waits for a look in progress.
func (w *CacheWatcher) Stop() { w.loop.Stop() }

func (w *CacheWatcher) runOnce(ctx context.Context) {
	n, err := w.cfg.Epoch(ctx)
	if err != nil || n == w.last {
		return
	}
	w.last = n
	w.cfg.Cache.ForgetCached()
	w.cfg.Logger.Info("validation cache changed by another process; in-memory copies dropped")
}
