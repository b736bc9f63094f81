package store

import (
	"context"
	"time"

	"github.com/postline/postline/internal/members"
)

// Members implements members.Store: the delivery_members table.
type Members struct{ db *DB }

var _ members.Store = Members{}

// NewMembers returns the database's delivering processes.
func NewMembers(db *DB) Members { return Members{db: db} }

// Beat implements members.Store.
func (s Members) Beat(ctx context.Context, id string, started, now time.Time) error {
	_, err := s.db.w.ExecContext(ctx, `INSERT INTO delivery_members (id, started_at, seen_at) VALUES ($1, $2, $3)
		ON CONFLICT (id) DO UPDATE SET seen_at = excluded.seen_at`, id, ms(started), ms(now))
	return notFound(err, "delivery member")
}

// Live implements members.Store.
func (s Members) Live(ctx context.Context, since time.Time) ([]members.Member, error) {
	rows, err := s.db.rd.QueryContext(ctx, `SELECT id, started_at, seen_at FROM delivery_members
		WHERE seen_at >= $1 ORDER BY started_at, id`, ms(since))
	if err != nil {
		return nil, notFound(err, "delivery member")
	}
	defer rows.Close()
	var out []members.Member
	for rows.Next() {
		var m members.Member
		var started, seen int64
		if err := rows.Scan(&m.ID, &started, &seen); err != nil {
			return nil, err
		}
		m.StartedAt, m.SeenAt = fromMS(started), fromMS(seen)
		out = append(out, m)
	}
	return out, rows.Err()
}

// Leave implements members.Store.
func (s Members) Leave(ctx context.Context, id string, before time.Time) error {
	_, err := s.db.w.ExecContext(ctx, `DELETE FROM delivery_members WHERE id = $1 OR seen_at < $2`, id, ms(before))
	return notFound(err, "delivery member")
}
