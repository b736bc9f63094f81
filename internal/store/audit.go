package store

import (
	"context"
	"time"

	"github.com/postline/postline/internal/audit"
)

// Audit implements audit.Store: the audit_log table.
type Audit struct{ db *DB }

var _ audit.Store = Audit{}

// NewAudit returns the accounts' audit log.
func NewAudit(db *DB) Audit { return Audit{db: db} }

// AddAudit implements audit.Store.
func (s Audit) AddAudit(ctx context.Context, e audit.Entry) (int64, error) {
	var id int64
	err := s.db.w.QueryRowContext(ctx, `INSERT INTO audit_log (account_id, at, actor, action, target, client)
		VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`, e.AccountID, ms(e.At), e.Actor, e.Action, e.Target, e.Client).Scan(&id)
	return id, notFound(err, "audit entry")
}

// ListAudit implements audit.Store.
func (s Audit) ListAudit(ctx context.Context, f audit.Filter) ([]audit.Entry, error) {
	before := f.Before
	if before <= 0 {
		before = 1<<63 - 1
	}
	rows, err := s.db.rd.QueryContext(ctx, `SELECT id, account_id, at, actor, action, target, client FROM audit_log
		WHERE account_id = $1 AND id < $2 ORDER BY id DESC LIMIT $3 + 0`, f.AccountID, before, f.Limit)
	if err != nil {
		return nil, notFound(err, "audit entries")
	}
	defer rows.Close()
	var out []audit.Entry
	for rows.Next() {
		var e audit.Entry
		var at int64
		if err := rows.Scan(&e.ID, &e.AccountID, &at, &e.Actor, &e.Action, &e.Target, &e.Client); err != nil {
			return nil, err
		}
		e.At = fromMS(at)
		out = append(out, e)
	}
	return out, rows.Err()
}

// PruneAudit implements audit.Store.
func (s Audit) PruneAudit(ctx context.Context, before time.Time, batch int) (int64, error) {
	res, err := s.db.w.ExecContext(ctx, `DELETE FROM audit_log WHERE id IN
		(SELECT id FROM audit_log WHERE at < $1 ORDER BY at LIMIT $2 + 0)`, ms(before), batch)
	if err != nil {
		return 0, notFound(err, "audit entries")
	}
	return res.RowsAffected()
}
