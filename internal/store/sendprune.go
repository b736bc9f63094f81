package store

import (
	"context"
	"time"
)

// sendPruneBatch bounds the sends emptied per transaction whatever batch
// the caller gives: each one's HTML is read to keep its links.
const sendPruneBatch = 100

// PruneSends implements sending.Store: it empties, oldest first and in
// short transactions, the sends created before before whose deliveries
// are all final (delivered, failed, bounced, cancelled) since before:
// bodies, raw message, attachment options and attachments go, the HTML
// becomes keep(html), and pruned_at is set to now.
func (s Sending) PruneSends(ctx context.Context, before, now time.Time, batch int, keep func(html string) string) (int64, error) {
	batch = min(max(batch, 1), sendPruneBatch)
	var total int64
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		var n int
		err := s.db.InTx(ctx, func(q Querier) (err error) {
			n, err = pruneSendBatch(ctx, q, ms(before), ms(now), batch, keep)
			return err
		})
		total += int64(n)
		if err != nil || n < batch {
			return total, err
		}
	}
}

func pruneSendBatch(ctx context.Context, q Querier, cut, now int64, batch int, keep func(string) string) (int, error) {
	rows, err := q.QueryContext(ctx, `SELECT s.id, s.html_body FROM sends s WHERE s.pruned_at IS NULL AND s.created_at < $1
		AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.send_id = s.id
			AND (d.state NOT IN ('delivered', 'failed', 'bounced', 'cancelled') OR d.updated_at >= $1))
		ORDER BY s.created_at LIMIT $2 + 0`, cut, batch)
	if err != nil {
		return 0, notFound(err, "sends")
	}
	type victim struct {
		id   int64
		html string
	}
	var vs []victim
	for rows.Next() {
		var v victim
		if err := rows.Scan(&v.id, &v.html); err != nil {
			rows.Close()
			return 0, notFound(err, "sends")
		}
		vs = append(vs, v)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, notFound(err, "sends")
	}
	for _, v := range vs {
		if _, err := q.ExecContext(ctx, `UPDATE sends SET text_body = '', html_body = $2, raw = $3, options = '', pruned_at = $4
			WHERE id = $1`, v.id, keep(v.html), []byte{}, now); err != nil {
			return 0, notFound(err, "sends")
		}
		if _, err := q.ExecContext(ctx, `DELETE FROM send_attachments WHERE send_id = $1`, v.id); err != nil {
			return 0, notFound(err, "attachments")
		}
	}
	return len(vs), nil
}
