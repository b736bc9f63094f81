package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/postline/postline/internal/validation"
)

// ValidationCache implements validation.Cache in the database, so cached
// answers survive restarts and are shared by processes.
type ValidationCache struct {
	db        *DB
	lastPrune atomic.Int64
}

var _ validation.Cache = (*ValidationCache)(nil)

// NewValidationCache returns the database validation cache.
func NewValidationCache(db *DB) *ValidationCache { return &ValidationCache{db: db} }

// Get implements validation.Cache: only unexpired entries are returned.
func (c *ValidationCache) Get(ctx context.Context, key string, now time.Time) (validation.Result, bool, error) {
	var raw string
	var validated int64
	err := c.db.rd.QueryRowContext(ctx, `SELECT result, validated_at FROM validation_cache
		WHERE key = $1 AND expires_at > $2`, key, ms(now)).Scan(&raw, &validated)
	if errors.Is(err, sql.ErrNoRows) {
		return validation.Result{}, false, nil
	}
	if err != nil {
		return validation.Result{}, false, notFound(err, "validation result")
	}
	var r validation.Result
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		return validation.Result{}, false, nil // an unreadable row is a miss, not an outage
	}
	r.ValidatedAt = fromMS(validated)
	return r, true, nil
}

// Put implements validation.Cache.
func (c *ValidationCache) Put(ctx context.Context, key string, r validation.Result, expires time.Time) error {
	raw, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = c.db.w.ExecContext(ctx, `INSERT INTO validation_cache (key, result, validated_at, expires_at)
		VALUES ($1, $2, $3, $4) ON CONFLICT (key) DO UPDATE SET result = excluded.result,
		validated_at = excluded.validated_at, expires_at = excluded.expires_at`,
		key, string(raw), ms(r.ValidatedAt), ms(expires))
	if err != nil {
		return notFound(err, "validation result")
	}
	c.prune(ctx, r.ValidatedAt)
	return nil
}

// prune deletes expired rows, at most once a minute per process.
func (c *ValidationCache) prune(ctx context.Context, now time.Time) {
	last := c.lastPrune.Load()
	if ms(now)-last < int64(time.Minute/time.Millisecond) || !c.lastPrune.CompareAndSwap(last, ms(now)) {
		return
	}
	c.db.w.ExecContext(ctx, `DELETE FROM validation_cache WHERE expires_at <= $1`, ms(now)) //nolint:errcheck // best effort
}

// Purge deletes the entries whose keys match any of the LIKE patterns
// (validation.PurgePatterns; no patterns: every entry) and returns how
// many went.
func (c *ValidationCache) Purge(ctx context.Context, patterns []string) (int64, error) {
	q, args := `DELETE FROM validation_cache`, []any{}
	for i, p := range patterns {
		if i == 0 {
			q += ` WHERE`
		} else {
			q += ` OR`
		}
		args = append(args, p)
		q += fmt.Sprintf(` key LIKE $%d ESCAPE '\'`, len(args))
	}
	res, err := c.db.w.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, notFound(err, "validation results")
	}
	return res.RowsAffected()
}
