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

const suspensionCols = `id, kind, value, reason, created_at, until, created_by, action, rule, reply, ended_at, ended`

// PutSuspension implements suspend.Store: the suspension of the same kind
// and value not ended yet ends, then the new one is added. Two processes
// suspending the same thing at once meet the partial unique index; the
// later one then overwrites the earlier (its history row is lost, not the
// hold).
func (s Suspensions) PutSuspension(ctx context.Context, sp suspend.Suspension) (suspend.Suspension, error) {
	now := ms(sp.CreatedAt)
	err := s.db.InTx(ctx, func(q Querier) error {
		if _, err := q.ExecContext(ctx, `UPDATE suspensions
			SET ended_at = CASE WHEN until IS NOT NULL AND until <= $3 THEN until ELSE $3 END,
				ended = CASE WHEN until IS NOT NULL AND until <= $3 THEN 'expired' ELSE 'replaced' END
			WHERE kind = $1 AND value = $2 AND ended_at IS NULL`, string(sp.Kind), sp.Value, now); err != nil {
			return err
		}
		return q.QueryRowContext(ctx, `INSERT INTO suspensions (kind, value, reason, created_at, until, created_by, action, rule, reply)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (kind, value) WHERE ended_at IS NULL DO UPDATE
			SET reason = excluded.reason, created_at = excluded.created_at, until = excluded.until, created_by = excluded.created_by,
			action = excluded.action, rule = excluded.rule, reply = excluded.reply RETURNING id`,
			string(sp.Kind), sp.Value, sp.Reason, now, msPtr(sp.Until), sp.CreatedBy, sp.Action, sp.Rule, sp.Reply).Scan(&sp.ID)
	})
	return sp, notFound(err, "suspension")
}

// Suspensions implements suspend.Store.
func (s Suspensions) Suspensions(ctx context.Context, now time.Time) ([]suspend.Suspension, error) {
	return s.list(ctx, `x.ended_at IS NULL AND (x.until IS NULL OR x.until > $1) ORDER BY x.created_at, x.id`, ms(now))
}

// SuspensionHistory implements suspend.Store.
func (s Suspensions) SuspensionHistory(ctx context.Context, since time.Time, limit int) ([]suspend.Suspension, error) {
	return s.list(ctx, `x.created_at >= $1 OR COALESCE(x.ended_at, x.until) IS NULL OR COALESCE(x.ended_at, x.until) >= $1
		ORDER BY x.created_at DESC, x.id DESC LIMIT $2 + 0`, ms(since), limit)
}

// list reads the suspensions where cond holds (its arguments from $1),
// with the id of the account an account suspension names.
func (s Suspensions) list(ctx context.Context, cond string, args ...any) ([]suspend.Suspension, error) {
	rows, err := s.db.rd.QueryContext(ctx, `SELECT x.id, x.kind, x.value, x.reason, x.created_at, x.until, x.created_by,
		x.action, x.rule, x.reply, x.ended_at, x.ended, COALESCE(a.id, 0)
		FROM suspensions x LEFT JOIN accounts a ON x.kind = 'account' AND a.login = x.value WHERE `+cond, args...)
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
	return s.end(ctx, `id = $1`, ms(now), id)
}

// DeleteSuspensionOf implements suspend.Store.
func (s Suspensions) DeleteSuspensionOf(ctx context.Context, kind suspend.Kind, value string, now time.Time) (suspend.Suspension, error) {
	return s.end(ctx, `kind = $1 AND value = $2`, ms(now), string(kind), value)
}

// end marks the suspension where matches (its arguments from $1, now
// after them) resumed at now if it is in force, and returns it.
func (s Suspensions) end(ctx context.Context, where string, now int64, args ...any) (suspend.Suspension, error) {
	nowArg := "$" + strconv.Itoa(len(args)+1)
	row := s.db.w.QueryRowContext(ctx, `UPDATE suspensions SET ended_at = `+nowArg+`, ended = 'resumed'
		WHERE `+where+` AND ended_at IS NULL AND (until IS NULL OR until > `+nowArg+`)
		RETURNING `+suspensionCols, append(args, now)...)
	sp, err := scanSuspension(row)
	if errors.Is(err, sql.ErrNoRows) {
		return sp, apperr.Errorf(apperr.NotFound, "Suspension not found (it ended or was resumed).")
	}
	return sp, notFound(err, "suspension")
}

// PruneSuspensions implements suspend.Store.
func (s Suspensions) PruneSuspensions(ctx context.Context, before time.Time) (int64, error) {
	res, err := s.db.w.ExecContext(ctx, `DELETE FROM suspensions WHERE COALESCE(ended_at, until) <= $1`, ms(before))
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
	var until, ended sql.NullInt64
	if err := r.Scan(append([]any{&sp.ID, &kind, &sp.Value, &sp.Reason, &created, &until, &sp.CreatedBy, &sp.Action, &sp.Rule,
		&sp.Reply, &ended, &sp.Ended}, more...)...); err != nil {
		return sp, err
	}
	sp.Kind, sp.CreatedAt, sp.Until, sp.EndedAt = suspend.Kind(kind), fromMS(created), nullMS(until), nullMS(ended)
	return sp, nil
}
