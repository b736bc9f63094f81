package store

import (
	"context"
	"fmt"

	"github.com/postline/postline/internal/suppression"
	"github.com/postline/postline/internal/tracking"
)

// Tracking implements tracking.Store over the deliveries and sends tables.
type Tracking struct{ db *DB }

var _ tracking.Store = Tracking{}

// NewTracking returns the tracking store.
func NewTracking(db *DB) Tracking { return Tracking{db: db} }

// Target implements tracking.Store.
func (s Tracking) Target(ctx context.Context, id int64) (tracking.Target, error) {
	var t tracking.Target
	err := s.db.rd.QueryRowContext(ctx, `SELECT d.id, d.send_id, d.domain_id, d.message_id, d.recipient, d.state,
		s.from_addr, s.subject, s.tags, `+s.db.userVarsCol()+` FROM deliveries d JOIN sends s ON s.id = d.send_id WHERE d.id = $1`, id).
		Scan(&t.DeliveryID, &t.SendID, &t.DomainID, &t.MessageID, &t.Recipient, &t.State, &t.Sender, &t.Subject, &t.Tags, &t.UserVars)
	return t, notFound(err, "delivery")
}

// SendHTML implements tracking.Store.
func (s Tracking) SendHTML(ctx context.Context, sendID int64) (string, error) {
	var body string
	err := s.db.rd.QueryRowContext(ctx, `SELECT html_body FROM sends WHERE id = $1`, sendID).Scan(&body)
	return body, notFound(err, "send")
}

// markColumns are the only columns Record writes a marker to; the name
// goes into SQL text, so it must come from this set.
var markColumns = map[tracking.Column]bool{tracking.OpenedAt: true, tracking.ClickedAt: true, tracking.UnsubscribedAt: true,
	tracking.ComplainedAt: true}

// Record implements tracking.Store.
func (s Tracking) Record(ctx context.Context, m tracking.Mark) (bool, error) {
	defer s.db.suppressionWrite(m.Suppression)()
	first := false
	err := s.db.InTx(ctx, func(q Querier) error {
		var err error
		first, err = s.recordIn(ctx, q, m)
		return err
	})
	return first, err
}

// RecordAll implements tracking.Store.
func (s Tracking) RecordAll(ctx context.Context, marks []tracking.Mark) error {
	entries := make([]*suppression.Entry, len(marks))
	for i, m := range marks {
		entries[i] = m.Suppression
	}
	defer s.db.suppressionWrite(entries...)()
	return s.db.InTx(ctx, func(q Querier) error {
		for _, m := range marks {
			if _, err := s.recordIn(ctx, q, m); err != nil {
				return err
			}
		}
		return nil
	})
}

func (s Tracking) recordIn(ctx context.Context, q Querier, m tracking.Mark) (bool, error) {
	if m.Column != tracking.NoMark && !markColumns[m.Column] {
		return false, fmt.Errorf("store: unknown tracking column %q", m.Column)
	}
	first := false
	if m.Column != tracking.NoMark {
		res, err := q.ExecContext(ctx, `UPDATE deliveries SET `+string(m.Column)+` = $2 WHERE id = $1 AND `+
			string(m.Column)+` IS NULL`, m.DeliveryID, ms(m.At))
		if err != nil {
			return false, err
		}
		n, _ := res.RowsAffected()
		first = n == 1
	}
	if m.Bounced {
		if _, err := q.ExecContext(ctx, `UPDATE deliveries SET state = 'bounced', updated_at = $2
			WHERE id = $1 AND state = 'delivered'`, m.DeliveryID, ms(m.At)); err != nil {
			return false, err
		}
	}
	if e := m.Suppression; e != nil {
		if _, err := q.ExecContext(ctx, `INSERT INTO suppressions (domain_id, type, recipient_type, recipient, source, created_at, description)
			VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (domain_id, type, recipient) DO NOTHING`,
			e.DomainID, e.Type, e.RecipientType, e.Recipient, e.Source, ms(e.CreatedAt), e.Description); err != nil {
			return false, err
		}
	}
	return first, NewEvents(s.db).In(q).Insert(ctx, m.Entries(first))
}

// IsTrackingHost implements tracking.Store. Only verified domains count:
// routing a host to tracking paths alone is a claim on that host, and
// verification proves control of the domain it sits under.
func (s Tracking) IsTrackingHost(ctx context.Context, host string) (bool, error) {
	var n int
	err := s.db.rd.QueryRowContext(ctx, `SELECT COUNT(*) FROM domains
		WHERE tracking_domain = $1 AND tracking_domain <> '' AND verified_at IS NOT NULL`, host).Scan(&n)
	return n > 0, err
}
