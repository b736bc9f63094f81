package store

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"time"

	"github.com/postline/postline/internal/sending"
)

// Queue implements sending.QueueStore over the deliveries table.
type Queue struct{ db *DB }

var _ sending.QueueStore = Queue{}

// NewQueue returns the queue store.
func NewQueue(db *DB) Queue { return Queue{db: db} }

// QueueCounts implements sending.QueueStore. Only waiting rows are read,
// through the partial indexes that hold them (deliveries_due,
// deliveries_leased), so the cost follows the queue, not the history.
func (s Queue) QueueCounts(ctx context.Context, domainIDs []int64) ([]sending.QueueCount, error) {
	q := `SELECT domain_id, state, COUNT(*), MIN(CASE WHEN state = 'deferred' THEN created_at END)
		FROM deliveries WHERE state IN ('pending', 'deferred', 'sending')`
	var args []any
	if len(domainIDs) > 0 {
		marks := make([]string, len(domainIDs))
		for i, id := range domainIDs {
			args = append(args, id)
			marks[i] = "$" + strconv.Itoa(i+1)
		}
		q += ` AND domain_id IN (` + strings.Join(marks, ", ") + `)`
	}
	rows, err := s.db.rd.QueryContext(ctx, q+` GROUP BY domain_id, state ORDER BY domain_id`, args...)
	if err != nil {
		return nil, notFound(err, "queue")
	}
	defer rows.Close()
	var out []sending.QueueCount
	for rows.Next() {
		var id int64
		var state string
		var n int
		var oldest sql.NullInt64
		if err := rows.Scan(&id, &state, &n, &oldest); err != nil {
			return nil, notFound(err, "queue")
		}
		if len(out) == 0 || out[len(out)-1].DomainID != id {
			out = append(out, sending.QueueCount{DomainID: id})
		}
		c := &out[len(out)-1]
		switch state {
		case sending.StatePending:
			c.Queued = n
		case sending.StateDeferred:
			c.Deferred, c.OldestDeferred = n, nullMS(oldest)
		case sending.StateSending:
			c.InFlight = n
		}
	}
	return out, notFound(rows.Err(), "queue")
}

// RetryDeferred implements sending.QueueStore.
func (s Queue) RetryDeferred(ctx context.Context, domainID int64, now time.Time) (int64, error) {
	q, args := `UPDATE deliveries SET next_attempt_at = $1 WHERE state = 'deferred' AND next_attempt_at > $1`, []any{ms(now)}
	if domainID > 0 {
		q += ` AND domain_id = $2`
		args = append(args, domainID)
	}
	res, err := s.db.w.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, notFound(err, "queue")
	}
	return res.RowsAffected()
}
