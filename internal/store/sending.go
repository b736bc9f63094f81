package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/sending"
	"github.com/postline/postline/internal/suppression"
)

// Sending implements sending.Store: the queue is the deliveries table.
type Sending struct {
	db    *DB
	stmts *stmtCache // nil: statements are prepared per use
}

var _ sending.Store = Sending{}

// NewSending returns the sending store.
func NewSending(db *DB) Sending { return Sending{db: db, stmts: db.stmts} }

// Enqueue implements sending.Store.
func (s Sending) Enqueue(ctx context.Context, snd *sending.Send, atts []sending.Attachment, ds []sending.Delivery,
	entries func([]sending.Delivery) []event.Entry) error {
	return s.EnqueueMany(ctx, []sending.EnqueueJob{{Send: snd, Attachments: atts, Deliveries: ds, Entries: entries}})
}

func insertAttachments(ctx context.Context, q Querier, sendID int64, atts []sending.Attachment) error {
	for i, a := range atts {
		if _, err := q.ExecContext(ctx, `INSERT INTO send_attachments (send_id, idx, filename, content_type, data, content_id)
			VALUES ($1, $2, $3, $4, $5, $6)`, sendID, i, a.Filename, a.ContentType, a.Data, a.ContentID); err != nil {
			return notFound(err, "attachment")
		}
	}
	return nil
}

const claimedCols = `d.id, d.send_id, d.domain_id, d.message_id, d.recipient, d.state, d.attempts, d.next_attempt_at,
	d.created_at, s.from_addr, s.subject, s.tags, s.deliver_at,
	EXISTS (SELECT 1 FROM deliveries o WHERE o.send_id = d.send_id AND o.id > d.id), `

// userVarsSQLite and userVarsPG read the user variables header out of a
// send's headers JSON (sends s), "" when absent.
const (
	userVarsSQLite = `COALESCE(json_extract(s.headers, '$."X-Mailgun-Variables"'), '')`
	userVarsPG     = `COALESCE(s.headers::jsonb ->> 'X-Mailgun-Variables', '')`
)

func (db *DB) userVarsCol() string {
	if db.Dialect == Postgres {
		return userVarsPG
	}
	return userVarsSQLite
}

// claimDue leaves the deliveries of suspended domains and accounts where
// they are (heldDomains, queuecontrol.go): they are not attempts.
const claimDue = `UPDATE deliveries SET state = 'sending', lease_owner = $1, lease_until = $2,
			attempts = attempts + 1, updated_at = $3, held_site = NULL
			WHERE id IN (SELECT id FROM deliveries WHERE state IN ('pending', 'deferred') AND next_attempt_at <= $3
				AND domain_id NOT IN (` + heldDomains + `)
				ORDER BY next_attempt_at LIMIT $4 + 0) RETURNING id`

// Claim implements sending.Store. On PostgreSQL, FOR UPDATE SKIP LOCKED
// lets concurrent claimers in several processes take disjoint rows without
// waiting; on SQLite the transaction runs on the single writer connection
// with BEGIN IMMEDIATE, which serialises claimers.
func (s Sending) Claim(ctx context.Context, owner string, now, leaseUntil time.Time, limit int,
	entries func([]sending.Delivery) []event.Entry) ([]sending.Delivery, error) {
	query := claimDue
	if s.db.Dialect == Postgres {
		query = strings.Replace(claimDue, "LIMIT $4 + 0)", "LIMIT $4 + 0 FOR UPDATE SKIP LOCKED)", 1)
	}
	s.stmts.warm(ctx)
	return s.transition(ctx, s.db.InTxUnsynced, func(q Querier) (*sql.Rows, error) {
		rows, err := s.stmts.query(ctx, q, query, owner, ms(leaseUntil), ms(now), limit)
		return rows, notFound(err, "deliveries")
	}, entries)
}

// transition runs an UPDATE ... RETURNING id, loads the rows it changed and
// records entries(them), in one transaction.
func (s Sending) transition(ctx context.Context, inTx func(context.Context, func(Querier) error) error,
	update func(q Querier) (*sql.Rows, error), entries func([]sending.Delivery) []event.Entry) ([]sending.Delivery, error) {
	var out []sending.Delivery
	err := inTx(ctx, func(q Querier) error {
		rows, err := update(q)
		if err != nil {
			return err
		}
		ids, err := scanIDs(rows)
		if err != nil || len(ids) == 0 {
			return err
		}
		if out, err = s.loadDeliveries(ctx, q, ids); err != nil {
			return err
		}
		return NewEvents(s.db).In(q).Insert(ctx, entries(out))
	})
	return out, err
}

func scanIDs(rows *sql.Rows) ([]int64, error) {
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// loadClaimedSQLite takes the ids as one JSON array, so that its text is
// the same for any count and stays prepared.
const loadClaimedSQLite = `SELECT ` + claimedCols + userVarsSQLite + ` FROM deliveries d JOIN sends s ON s.id = d.send_id
		WHERE d.id IN (SELECT value FROM json_each($1)) ORDER BY d.id`

func (s Sending) loadDeliveries(ctx context.Context, q Querier, ids []int64) ([]sending.Delivery, error) {
	var rows *sql.Rows
	var err error
	if s.db.Dialect == SQLite {
		list, _ := json.Marshal(ids)
		rows, err = s.stmts.query(ctx, q, loadClaimedSQLite, string(list))
	} else {
		in, args := inList(ids)
		rows, err = q.QueryContext(ctx, `SELECT `+claimedCols+userVarsPG+` FROM deliveries d JOIN sends s ON s.id = d.send_id
		WHERE d.id IN (`+in+`) ORDER BY d.id`, args...)
	}
	if err != nil {
		return nil, notFound(err, "deliveries")
	}
	defer rows.Close()
	var out []sending.Delivery
	for rows.Next() {
		var d sending.Delivery
		var next, created int64
		var deliverAt sql.NullInt64
		if err := rows.Scan(&d.ID, &d.SendID, &d.DomainID, &d.MessageID, &d.Recipient, &d.State, &d.Attempts, &next,
			&created, &d.Sender, &d.Subject, &d.Tags, &deliverAt, &d.Later, &d.UserVars); err != nil {
			return nil, err
		}
		d.NextAttemptAt, d.CreatedAt, d.DeliverAt = fromMS(next), fromMS(created), nullMS(deliverAt)
		out = append(out, d)
	}
	return out, rows.Err()
}

// Complete implements sending.Store.
func (s Sending) Complete(ctx context.Context, id int64, owner string, o sending.Outcome, entries []event.Entry,
	bounce *suppression.Entry) (bool, error) {
	held, err := s.CompleteMany(ctx, owner, []sending.Completion{{ID: id, Outcome: o, Entries: entries, Bounce: bounce}})
	if err != nil {
		return false, err
	}
	return held[0], nil
}

const (
	// A delivery never attempted goes back to pending: it waited for its
	// turn, nothing failed.
	releaseDelivery = `UPDATE deliveries SET state = CASE WHEN attempts <= 1 THEN 'pending' ELSE 'deferred' END,
		next_attempt_at = $3, attempts = attempts - 1,
		lease_owner = NULL, lease_until = NULL WHERE id = $1 AND lease_owner = $2 AND state = 'sending'`
	extendLease = `UPDATE deliveries SET lease_until = $3 WHERE id = $1 AND lease_owner = $2 AND state = 'sending'`
)

// Release implements sending.Store.
//
// On SQLite the commit does not wait for the disk (InTxUnsynced), as the
// claim's does not: a release lost in a power cut leaves the delivery
// leased to a process that is gone, and it is claimed again when the lease
// expires (its never-made attempt then counted). A worker whose sites are at their connection limits turns a
// claimed delivery away and releases it often (a third of the deliveries
// of one site's backlog, BENCHMARKS.md), and each release waited for an
// fsync while holding the one writer.
func (s Sending) Release(ctx context.Context, id int64, owner string, next time.Time) error {
	release := func(q Querier) error {
		_, err := s.stmts.exec(ctx, q, releaseDelivery, id, owner, ms(next))
		return err
	}
	var err error
	if s.db.Dialect == SQLite {
		err = s.db.InTxUnsynced(ctx, release)
	} else {
		err = release(s.db.w) // one statement: no BEGIN and COMMIT round trips
	}
	return notFound(err, "delivery")
}

// ExtendLease implements sending.Store.
func (s Sending) ExtendLease(ctx context.Context, id int64, owner string, until time.Time) error {
	_, err := s.stmts.exec(ctx, s.db.w, extendLease, id, owner, ms(until))
	return notFound(err, "delivery")
}

// Rescue implements sending.Store.
func (s Sending) Rescue(ctx context.Context, now time.Time) (int, error) {
	res, err := s.db.w.ExecContext(ctx, `UPDATE deliveries SET state = 'deferred', next_attempt_at = $1, lease_owner = NULL,
		lease_until = NULL, updated_at = $1 WHERE state = 'sending' AND lease_until < $1`, ms(now))
	if err != nil {
		return 0, notFound(err, "deliveries")
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// LoadSend implements sending.Store.
func (s Sending) LoadSend(ctx context.Context, id int64) (sending.Send, []sending.Attachment, error) {
	var snd sending.Send
	var headers, addressing string
	var processed int
	var created int64
	var pruned sql.NullInt64
	err := s.db.rd.QueryRowContext(ctx, `SELECT id, domain_id, account_id, from_addr, from_name, reply_to, subject, text_body,
		html_body, headers, options, tags, processed, created_at, raw, addressing, pruned_at FROM sends WHERE id = $1`, id).Scan(&snd.ID, &snd.DomainID,
		&snd.AccountID, &snd.From, &snd.FromName, &snd.ReplyTo, &snd.Subject, &snd.Text, &snd.HTML, &headers, &snd.Options,
		&snd.Tags, &processed, &created, &snd.Raw, &addressing, &pruned)
	if err != nil {
		return snd, nil, notFound(err, "send")
	}
	snd.Processed, snd.CreatedAt, snd.Pruned = processed != 0, fromMS(created), pruned.Valid
	if err := json.Unmarshal([]byte(headers), &snd.Headers); err != nil {
		return snd, nil, err
	}
	if err := parseAddressing(addressing, &snd); err != nil {
		return snd, nil, err
	}
	rows, err := s.db.rd.QueryContext(ctx, `SELECT filename, content_type, data, content_id FROM send_attachments WHERE send_id = $1 ORDER BY idx`, id)
	if err != nil {
		return snd, nil, notFound(err, "attachments")
	}
	defer rows.Close()
	var atts []sending.Attachment
	for rows.Next() {
		var a sending.Attachment
		if err := rows.Scan(&a.Filename, &a.ContentType, &a.Data, &a.ContentID); err != nil {
			return snd, nil, err
		}
		atts = append(atts, a)
	}
	return snd, atts, rows.Err()
}

// SaveProcessed implements sending.Store.
func (s Sending) SaveProcessed(ctx context.Context, sendID int64, atts []sending.Attachment) (bool, error) {
	won := false
	err := s.db.InTx(ctx, func(q Querier) error {
		// The options go with the originals: a password is kept only until
		// the job that needs it has run.
		res, err := q.ExecContext(ctx, `UPDATE sends SET processed = 1, options = '' WHERE id = $1 AND processed = 0`, sendID)
		if err != nil {
			return notFound(err, "send")
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil
		}
		won = true
		if _, err := q.ExecContext(ctx, `DELETE FROM send_attachments WHERE send_id = $1`, sendID); err != nil {
			return notFound(err, "attachments")
		}
		return insertAttachments(ctx, q, sendID, atts)
	})
	return won, err
}

// Reserve implements sending.Store: one upsert that claims a new, expired
// or stale pending key, and reports nothing when the key is taken. While
// pending, the response column holds the claim's token.
func (s Sending) Reserve(ctx context.Context, accountID int64, key, token string, now, since, pendingSince time.Time) (bool, int, []byte, error) {
	var status int
	err := s.db.w.QueryRowContext(ctx, `INSERT INTO idempotency_keys (account_id, key, status, response, created_at)
		VALUES ($1, $2, 0, $6, $3) ON CONFLICT (account_id, key) DO UPDATE SET status = 0, response = excluded.response,
		created_at = excluded.created_at
		WHERE idempotency_keys.created_at < $4 OR (idempotency_keys.status = 0 AND idempotency_keys.created_at < $5)
		RETURNING status`, accountID, key, ms(now), ms(since), ms(pendingSince), token).Scan(&status)
	if err == nil {
		return true, 0, nil, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return false, 0, nil, notFound(err, "idempotency key")
	}
	var body string
	err = s.db.w.QueryRowContext(ctx, `SELECT status, response FROM idempotency_keys WHERE account_id = $1 AND key = $2`,
		accountID, key).Scan(&status, &body)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && status == 0) {
		return false, 0, nil, nil // freed or claimed in between: in flight, as far as the caller knows
	}
	return false, status, []byte(body), notFound(err, "idempotency key")
}

// Remember implements sending.Store.
func (s Sending) Remember(ctx context.Context, accountID int64, key, token string, status int, body []byte) error {
	_, err := s.db.w.ExecContext(ctx, `UPDATE idempotency_keys SET status = $3, response = $4
		WHERE account_id = $1 AND key = $2 AND status = 0 AND response = $5`, accountID, key, status, string(body), token)
	return notFound(err, "idempotency key")
}

// Forget implements sending.Store.
func (s Sending) Forget(ctx context.Context, accountID int64, key, token string) error {
	_, err := s.db.w.ExecContext(ctx, `DELETE FROM idempotency_keys WHERE account_id = $1 AND key = $2 AND status = 0
		AND response = $3`, accountID, key, token)
	return notFound(err, "idempotency key")
}

// PruneIdempotencyKeys implements sending.Store.
func (s Sending) PruneIdempotencyKeys(ctx context.Context, before time.Time, batch int) (int64, error) {
	var total int64
	for {
		res, err := s.db.w.ExecContext(ctx, `DELETE FROM idempotency_keys WHERE (account_id, key) IN
			(SELECT account_id, key FROM idempotency_keys WHERE created_at < $1 LIMIT $2 + 0)`, ms(before), batch)
		if err != nil {
			return total, notFound(err, "idempotency keys")
		}
		n, _ := res.RowsAffected()
		total += n
		if n < int64(batch) || ctx.Err() != nil {
			return total, nil
		}
	}
}

const messageCols = `d.id, d.send_id, d.domain_id, d.message_id, d.recipient, d.state, d.attempts, d.next_attempt_at,
	d.created_at, s.from_addr, s.subject, s.tags, s.deliver_at, COALESCE(d.last_code, 0), COALESCE(d.last_message, ''), d.updated_at`

// MessageDeliveries implements sending.Store.
func (s Sending) MessageDeliveries(ctx context.Context, domainID int64, messageID string) ([]sending.MessageDelivery, error) {
	rows, err := s.db.rd.QueryContext(ctx, `SELECT `+messageCols+` FROM deliveries d JOIN sends s ON s.id = d.send_id
		WHERE d.domain_id = $1 AND d.message_id = $2 ORDER BY d.id LIMIT 1000`, domainID, messageID)
	if err != nil {
		return nil, notFound(err, "deliveries")
	}
	defer rows.Close()
	var out []sending.MessageDelivery
	for rows.Next() {
		var m sending.MessageDelivery
		var next, created, updated int64
		var deliverAt sql.NullInt64
		d := &m.Delivery
		if err := rows.Scan(&d.ID, &d.SendID, &d.DomainID, &d.MessageID, &d.Recipient, &d.State, &d.Attempts, &next,
			&created, &d.Sender, &d.Subject, &d.Tags, &deliverAt, &m.LastCode, &m.LastMessage, &updated); err != nil {
			return nil, notFound(err, "deliveries")
		}
		d.NextAttemptAt, d.CreatedAt, d.DeliverAt, m.UpdatedAt = fromMS(next), fromMS(created), nullMS(deliverAt), fromMS(updated)
		out = append(out, m)
	}
	return out, notFound(rows.Err(), "deliveries")
}

// CancelMessage implements sending.Store. The state condition makes it
// race-free against a worker's claim: a delivery is either claimed
// (sending) or cancelled, never both.
func (s Sending) CancelMessage(ctx context.Context, domainID int64, messageID string, now time.Time,
	entries func([]sending.Delivery) []event.Entry) ([]sending.Delivery, error) {
	out, err := s.transition(ctx, s.db.InTx, func(q Querier) (*sql.Rows, error) {
		return q.QueryContext(ctx, `UPDATE deliveries SET state = 'cancelled', updated_at = $3
			WHERE domain_id = $1 AND message_id = $2 AND state IN ('pending', 'deferred') RETURNING id`, domainID, messageID, ms(now))
	}, entries)
	return out, notFound(err, "deliveries")
}

// SendHeaders implements sending.Store.
func (s Sending) SendHeaders(ctx context.Context, domainID int64, messageIDs []string) (map[string]map[string]string, error) {
	args := []any{domainID}
	marks := make([]string, len(messageIDs))
	for i, id := range messageIDs {
		args = append(args, id)
		marks[i] = "$" + strconv.Itoa(i+2)
	}
	rows, err := s.db.rd.QueryContext(ctx, `SELECT DISTINCT d.message_id, s.headers FROM deliveries d JOIN sends s ON s.id = d.send_id
		WHERE d.domain_id = $1 AND d.message_id IN (`+strings.Join(marks, ",")+`)`, args...)
	if err != nil {
		return nil, notFound(err, "sends")
	}
	defer rows.Close()
	out := map[string]map[string]string{}
	for rows.Next() {
		var id, headers string
		if err := rows.Scan(&id, &headers); err != nil {
			return nil, notFound(err, "sends")
		}
		var h map[string]string
		if json.Unmarshal([]byte(headers), &h) == nil {
			out[id] = h
		}
	}
	return out, notFound(rows.Err(), "sends")
}
