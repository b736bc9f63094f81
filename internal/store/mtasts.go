package store

import (
	"context"
	"database/sql"
	"errors"
	"sync/atomic"
	"time"

	"github.com/postline/postline/internal/mtasts"
)

// MTASTSPolicies implements mtasts.Store: fetched MTA-STS policies, kept
// across restarts and shared by processes.
type MTASTSPolicies struct {
	db        *DB
	lastPrune atomic.Int64
}

var _ mtasts.Store = (*MTASTSPolicies)(nil)

// NewMTASTSPolicies returns the database's MTA-STS policy cache.
func NewMTASTSPolicies(db *DB) *MTASTSPolicies { return &MTASTSPolicies{db: db} }

// LoadPolicy implements mtasts.Store.
func (s *MTASTSPolicies) LoadPolicy(ctx context.Context, domain string) (mtasts.Cached, bool, error) {
	c := mtasts.Cached{Domain: domain}
	var fetched, expires, refresh int64
	err := s.db.rd.QueryRowContext(ctx, `SELECT policy_id, body, fetched_at, expires_at, refresh_at
		FROM mta_sts_policies WHERE domain = $1`, domain).Scan(&c.ID, &c.Body, &fetched, &expires, &refresh)
	if errors.Is(err, sql.ErrNoRows) {
		return mtasts.Cached{}, false, nil
	}
	if err != nil {
		return mtasts.Cached{}, false, notFound(err, "MTA-STS policy")
	}
	c.FetchedAt, c.ExpiresAt, c.RefreshAt = fromMS(fetched), fromMS(expires), fromMS(refresh)
	return c, true, nil
}

// SavePolicy implements mtasts.Store.
func (s *MTASTSPolicies) SavePolicy(ctx context.Context, c mtasts.Cached) error {
	_, err := s.db.w.ExecContext(ctx, `INSERT INTO mta_sts_policies (domain, policy_id, body, fetched_at, expires_at, refresh_at)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (domain) DO UPDATE SET policy_id = excluded.policy_id,
		body = excluded.body, fetched_at = excluded.fetched_at, expires_at = excluded.expires_at,
		refresh_at = excluded.refresh_at`,
		c.Domain, c.ID, c.Body, ms(c.FetchedAt), ms(c.ExpiresAt), ms(c.RefreshAt))
	if err != nil {
		return notFound(err, "MTA-STS policy")
	}
	s.prune(ctx, c.FetchedAt)
	return nil
}

// prune deletes expired policies (a domain that dropped MTA-STS leaves
// one behind), at most once an hour per process.
func (s *MTASTSPolicies) prune(ctx context.Context, now time.Time) {
	last := s.lastPrune.Load()
	if ms(now)-last < int64(time.Hour/time.Millisecond) || !s.lastPrune.CompareAndSwap(last, ms(now)) {
		return
	}
	s.db.w.ExecContext(ctx, `DELETE FROM mta_sts_policies WHERE expires_at <= $1`, ms(now)) //nolint:errcheck // best effort
}
