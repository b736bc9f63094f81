package store

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"time"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/suspend"
)

// Suspensions implements suspend.Store over the suspensions table, which
// the queue's claim reads too (heldDomains).
type Suspensions struct{ db *DB }

var _ suspend.Store = Suspensions{}

// NewSuspensions returns the suspensions store.
func NewSuspensions(db *DB) Suspensions { return Suspensions{db: db} }

const suspensionCols = `id, kind, value, reason, created_at, until, created_by, action, rule, reply`

// PutSuspension implements suspend.Store.
func (s Suspensions) PutSuspension(ctx context.Context, sp suspend.Suspension) (suspend.Suspension, error) {
	err := s.db.w.QueryRowContext(ctx, `INSERT INTO suspensions (kind, value, reason, created_at, until, created_by, action, rule, reply)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (kind, value) DO UPDATE SET reason = excluded.reason,
		created_at = excluded.created_at, until = excluded.until, created_by = excluded.created_by,
		action = excluded.action, rule = excluded.rule, reply = excluded.reply RETURNING id`,
		string(sp.Kind), sp.Value, sp.Reason, ms(sp.CreatedAt), msPtr(sp.Until), sp.CreatedBy, sp.Action, sp.Rule, sp.Reply).Scan(&sp.ID)
	return sp, notFound(err, "suspension")
}

// Suspensions implements suspend.Store.
func (s Suspensions) Suspensions(ctx context.Context, now time.Time) ([]suspend.Suspension, error) {
	rows, err := s.db.rd.QueryContext(ctx, `SELECT x.id, x.kind, x.value, x.reason, x.created_at, x.until, x.created_by,
		x.action, x.rule, x.reply, COALESCE(a.id, 0) FROM suspensions x LEFT JOIN accounts a ON x.kind = 'account' AND a.login = x.value
		WHERE x.until IS NULL OR x.until > $1 ORDER BY x.created_at, x.id`, ms(now))
	if err != nil {
		return nil, notFound(err, "suspensions")
	}
	defer rows.Close()
	var out []suspend.Suspension
	for rows.Next() {
		var accountID int64
		sp, err := scanSuspension(rows, &accountID)
		if err != nil {
			return nil, notFound(err, "suspensions")
		}
		sp.AccountID = accountID
		out = append(out, sp)
	}
	return out, notFound(rows.Err(), "suspensions")
}

// DeleteSuspension implements suspend.Store.
func (s Suspensions) DeleteSuspension(ctx context.Context, id int64, now time.Time) (suspend.Suspension, error) {
	return s.delete(ctx, `id = $1`, ms(now), id)
}

// DeleteSuspensionOf implements suspend.Store.
func (s Suspensions) DeleteSuspensionOf(ctx context.Context, kind suspend.Kind, value string, now time.Time) (suspend.Suspension, error) {
	return s.delete(ctx, `kind = $1 AND value = $2`, ms(now), string(kind), value)
}

// delete removes the suspension where matches (its arguments from $1, now
// after them) if it is in force, and returns it.
func (s Suspensions) delete(ctx context.Context, where string, now int64, args ...any) (suspend.Suspension, error) {
	nowArg := "$" + strconv.Itoa(len(args)+1)
	row := s.db.w.QueryRowContext(ctx, `DELETE FROM suspensions WHERE `+where+` AND (until IS NULL OR until > `+nowArg+`)
		RETURNING `+suspensionCols, append(args, now)...)
	sp, err := scanSuspension(row)
	if errors.Is(err, sql.ErrNoRows) {
		return sp, apperr.Errorf(apperr.NotFound, "Suspension not found (it ended or was resumed).")
	}
	return sp, notFound(err, "suspension")
}

// PruneSuspensions implements suspend.Store.
func (s Suspensions) PruneSuspensions(ctx context.Context, now time.Time) (int64, error) {
	res, err := s.db.w.ExecContext(ctx, `DELETE FROM suspensions WHERE until <= $1`, ms(now))
	if err != nil {
		return 0, notFound(err, "suspensions")
	}
	return res.RowsAffected()
}

// scanSuspension reads the suspensionCols, and into more the columns
// after them.
func scanSuspension(r interface{ Scan(...any) error }, more ...any) (suspend.Suspension, error) {
	var sp suspend.Suspension
	var kind string
	var created int64
	var until sql.NullInt64
	if err := r.Scan(append([]any{&sp.ID, &kind, &sp.Value, &sp.Reason, &created, &until, &sp.CreatedBy, &sp.Action, &sp.Rule, &sp.Reply}, more...)...); err != nil {
		return sp, err
	}
	sp.Kind, sp.CreatedAt, sp.Until = suspend.Kind(kind), fromMS(created), nullMS(until)
	return sp, nil
}
