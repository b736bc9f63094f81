package store

import (
	"context"
	"database/sql"
	"errors"
	"sync/atomic"
	"time"

	"github.com/postline/postline/internal/ratelimit"
)

// RateCounter implements ratelimit.Counter in the database, so that every
// process sharing a PostgreSQL database shares one budget.
type RateCounter struct {
	db        *DB
	lastPrune atomic.Int64
}

var _ ratelimit.Counter = (*RateCounter)(nil)

// NewRateCounter returns the database counter.
func NewRateCounter(db *DB) *RateCounter { return &RateCounter{db: db} }

// Incr implements ratelimit.Counter with one upsert. On PostgreSQL it runs
// on the relaxed pool: a hot counter row stays locked until its commit,
// and waiting for the WAL flush there serialised every request of an
// account; a count lost in a crash only lets a few requests through.
func (c *RateCounter) Incr(ctx context.Context, key string, windowStart time.Time, by int64, expire time.Duration) (int64, error) {
	var n int64
	err := c.writer().QueryRowContext(ctx, `INSERT INTO rate_counters (key, window_start, count) VALUES ($1, $2, $3)
		ON CONFLICT (key, window_start) DO UPDATE SET count = rate_counters.count + excluded.count RETURNING count`,
		key, ms(windowStart), max(by, 1)).Scan(&n)
	if err != nil {
		return 0, notFound(err, "rate counter")
	}
	c.prune(ctx, windowStart.Add(-expire))
	return n, nil
}

// Get implements ratelimit.Counter.
func (c *RateCounter) Get(ctx context.Context, key string, windowStart time.Time) (int64, error) {
	var n int64
	err := c.db.rd.QueryRowContext(ctx, `SELECT count FROM rate_counters WHERE key = $1 AND window_start = $2`,
		key, ms(windowStart)).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, notFound(err, "rate counter")
	}
	return n, nil
}

// Decr implements ratelimit.Counter.
func (c *RateCounter) Decr(ctx context.Context, key string, windowStart time.Time) error {
	_, err := c.writer().ExecContext(ctx, `UPDATE rate_counters SET count = count - 1
		WHERE key = $1 AND window_start = $2 AND count > 0`, key, ms(windowStart))
	return notFound(err, "rate counter")
}

// Reset implements ratelimit.Counter.
func (c *RateCounter) Reset(ctx context.Context, key string, windowStart time.Time) error {
	_, err := c.writer().ExecContext(ctx, `DELETE FROM rate_counters WHERE key = $1 AND window_start = $2`, key, ms(windowStart))
	return notFound(err, "rate counter")
}

// writer is the pool counts are written on (see Incr).
func (c *RateCounter) writer() pool {
	if c.db.relaxed.DB != nil {
		return c.db.relaxed
	}
	return c.db.w
}

// prune drops finished windows, at most once a minute per process. Windows
// are at most an hour long, except those of keys starting "day:" (a day):
// an hour's window that ended before the caller's began is dead, and a
// day's that ended before yesterday began.
func (c *RateCounter) prune(ctx context.Context, before time.Time) {
	now := time.Now().UnixMilli()
	last := c.lastPrune.Load()
	if now-last < int64(time.Minute/time.Millisecond) || !c.lastPrune.CompareAndSwap(last, now) {
		return
	}
	hours := min(ms(before), now-int64(2*time.Hour/time.Millisecond))
	days := min(ms(before), now-int64(49*time.Hour/time.Millisecond))
	c.db.w.ExecContext(ctx, `DELETE FROM rate_counters WHERE window_start < $2 OR (window_start < $1 AND key NOT LIKE 'day:%')`, //nolint:errcheck // best effort
		hours, days)
}
