package event

import (
	"cmp"
	"context"
	"log/slog"
	"sync"
	"time"
)

// PrunerConfig configures retention.
type PrunerConfig struct {
	// Retention is how long entries are kept; 0 keeps them forever (the
	// passes still compact the hourly counts).
	Retention time.Duration
	// Interval between passes (default 10 minutes): a pass after a long
	// pause deletes more, but in the same short batches.
	Interval time.Duration
	// Batch is the most rows deleted per transaction (default 5000), so
	// that pruning never holds the SQLite writer or a domain's insert lock
	// for long.
	Batch int
	// Also are other records kept as long as the log (the content of sent
	// messages: sending.Service.PruneContent; the audit log): each pass
	// prunes them with the same cutoff, after the entries, each called
	// again while it deletes a whole batch.
	Also   []PruneFunc
	Now    func() time.Time
	Logger *slog.Logger
}

// PruneFunc deletes at most batch rows older than before.
type PruneFunc func(ctx context.Context, before time.Time, batch int) (int64, error)

// Pruner deletes entries older than the retention in the background, and
// compacts the hourly counts of past hours.
type Pruner struct {
	store Store
	cfg   PrunerConfig
	stop  context.CancelFunc
	wg    sync.WaitGroup
}

// NewPruner returns a pruner over st.
func NewPruner(st Store, cfg PrunerConfig) *Pruner {
	cfg.Interval = cmp.Or(cfg.Interval, 10*time.Minute)
	cfg.Batch = cmp.Or(cfg.Batch, 5000)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Pruner{store: st, cfg: cfg}
}

// Start runs a pass now and then every Interval until Stop or ctx ends.
func (p *Pruner) Start(ctx context.Context) error {
	ctx, p.stop = context.WithCancel(ctx)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(p.cfg.Interval)
		defer t.Stop()
		for {
			if _, err := p.runOnce(ctx); err != nil && ctx.Err() == nil {
				p.cfg.Logger.Warn("event log retention pass failed", "error", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return nil
}

// Stop ends the background loop and waits for it.
func (p *Pruner) Stop() {
	if p.stop != nil {
		p.stop()
	}
	p.wg.Wait()
}

// RunOnce runs one pass now (a pass is also run by Start, then every
// Interval): see runOnce.
func (p *Pruner) RunOnce(ctx context.Context) (int64, error) { return p.runOnce(ctx) }

// runOnce deletes everything older than the retention, reports how many
// entries went, and compacts the counts of hours that ended over an hour
// ago (later ones may still be written).
func (p *Pruner) runOnce(ctx context.Context) (int64, error) {
	now := p.cfg.Now()
	var n int64
	if p.cfg.Retention > 0 {
		cutoff := now.Add(-p.cfg.Retention)
		var err error
		n, err = p.store.Prune(ctx, cutoff, p.cfg.Batch)
		if n > 0 {
			p.cfg.Logger.Info("event log retention", "deleted", n, "before", cutoff.UTC().Format(time.RFC3339))
		}
		if err != nil {
			return n, err
		}
		for _, also := range p.cfg.Also {
			if err := p.pruneAlso(ctx, also, cutoff); err != nil {
				return n, err
			}
		}
	}
	return n, p.store.CompactCounts(ctx, now.Add(-2*time.Hour))
}

// pruneAlso runs one of cfg.Also to the end, a batch at a time.
func (p *Pruner) pruneAlso(ctx context.Context, fn PruneFunc, cutoff time.Time) error {
	for {
		n, err := fn(ctx, cutoff, p.cfg.Batch)
		if err != nil || n < int64(p.cfg.Batch) {
			return err
		}
	}
}
