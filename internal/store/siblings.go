package store

import (
	"context"
	"database/sql"
	"strings"
	"time"

	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/sending"
)

// claimSiblings is claimDue for the due deliveries of one send and
// message id, at one recipient domain unless $6 is "", in id order.
const claimSiblings = `UPDATE deliveries SET state = 'sending', lease_owner = $1, lease_until = $2,
			attempts = attempts + 1, updated_at = $3, held_site = NULL
			WHERE id IN (SELECT id FROM deliveries WHERE send_id = $4 AND message_id = $5
				AND state IN ('pending', 'deferred') AND next_attempt_at <= $3
				AND (CAST($6 AS TEXT) = '' OR RCPT_DOMAIN = CAST($6 AS TEXT))
				AND domain_id NOT IN (` + heldDomains + `)
				ORDER BY id LIMIT $7 + 0) RETURNING id`

// ClaimSiblings implements sending.Store.
func (s Sending) ClaimSiblings(ctx context.Context, owner string, now, leaseUntil time.Time, f sending.Siblings, limit int) ([]sending.Delivery, error) {
	if limit <= 0 {
		return nil, nil
	}
	query := strings.Replace(claimSiblings, "RCPT_DOMAIN", s.db.rcptDomain("recipient"), 1)
	if s.db.Dialect == Postgres {
		query = strings.Replace(query, "LIMIT $7 + 0)", "LIMIT $7 + 0 FOR UPDATE SKIP LOCKED)", 1)
	}
	return s.transition(ctx, s.db.InTxUnsynced, func(q Querier) (*sql.Rows, error) {
		rows, err := s.stmts.query(ctx, q, query, owner, ms(leaseUntil), ms(now), f.SendID, f.MessageID,
			strings.ToLower(f.Domain), limit)
		return rows, notFound(err, "deliveries")
	}, func([]sending.Delivery) []event.Entry { return nil })
}
