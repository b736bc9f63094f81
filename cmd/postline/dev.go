package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/postline/postline/internal/app"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/event"
)

// seedBatch entries per Record call: one transaction each, big enough that
// commits are a small share of the time, small enough that the SQLite
// writer is never held for long while `serve` runs on the same file.
const seedBatch = 5000

// devSeedLog records --count realistic entries for DOMAIN over the last 30
// days, in time order (so ids grow with created_at), through the same
// service and store code as the delivery path.
func setupSeedLog(fs *flag.FlagSet) runFunc {
	count := fs.Int("count", 0, "number of log entries to create (required)")
	seed := fs.Uint64("seed", 0, "random seed, for a reproducible set (default: from the clock)")
	return func(ctx context.Context, x *inv) error {
		if *count < 1 {
			return usagef("--count must be at least 1, got %d", *count)
		}
		return onDomain(func(ctx context.Context, x *inv, a *app.App, d domain.Domain) error {
			return seedLog(ctx, x, a, d, *count, *seed)
		})(ctx, x)
	}
}

func seedLog(ctx context.Context, x *inv, a *app.App, d domain.Domain, count int, seed uint64) error {
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	now := time.Now().UTC()
	start := time.Now()
	batch := make([]event.Entry, 0, seedBatch)
	flush := func() error {
		if err := a.Events.Record(ctx, batch...); err != nil {
			return err
		}
		batch = batch[:0]
		return nil
	}
	for en := range event.Synthetic(event.SyntheticParams{DomainID: d.ID, Domain: d.Name,
		From: now.Add(-30 * 24 * time.Hour), To: now, Count: count, Seed: seed}) {
		if batch = append(batch, en); len(batch) == seedBatch {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	took := time.Since(start)
	fmt.Fprintf(x.stdout, "recorded %d log entries for %s over the last 30 days in %s (%.0f/s)\n",
		count, d.Name, took.Round(time.Millisecond), float64(count)/took.Seconds())
	return nil
}
