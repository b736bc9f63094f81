package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/secret"
	"github.com/postline/postline/internal/webhook"
)

// Webhooks implements webhook.Store; secrets are sealed with box.
type Webhooks struct {
	db  *DB
	box *secret.Box
}

var _ webhook.Store = Webhooks{}

// NewWebhooks returns the webhook store.
func NewWebhooks(db *DB, box *secret.Box) Webhooks { return Webhooks{db: db, box: box} }

const webhookCols = `id, domain_id, url, secret, event_types, last_event_id, attempts, next_attempt_at, last_error,
	last_success_at, created_at, format, mailgun_event`

func (s Webhooks) scan(row interface{ Scan(...any) error }) (webhook.Webhook, error) {
	var w webhook.Webhook
	var sealed, types string
	var next, created int64
	var success sql.NullInt64
	if err := row.Scan(&w.ID, &w.DomainID, &w.URL, &sealed, &types, &w.Cursor, &w.Attempts, &next, &w.LastError,
		&success, &created, &w.Format, &w.MailgunEvent); err != nil {
		return w, err
	}
	// A secret that does not open marks the webhook instead of failing the
	// read: one such row must not stop the list or every other webhook.
	// Mailgun-format webhooks have none (the account's key signs them).
	switch plain, err := s.box.Open(sealed); {
	case w.Format == webhook.FormatMailgun:
	case err != nil:
		w.Unreadable = "the signing secret cannot be decrypted with this server's secret key"
	default:
		w.Secret = string(plain)
	}
	for _, t := range strings.Split(types, ",") {
		if t != "" {
			w.EventTypes = append(w.EventTypes, event.Type(t))
		}
	}
	w.NextAttemptAt, w.CreatedAt, w.LastSuccessAt = fromMS(next), fromMS(created), nullMS(success)
	return w, nil
}

func (s Webhooks) collect(rows *sql.Rows, err error) ([]webhook.Webhook, error) {
	if err != nil {
		return nil, notFound(err, "webhooks")
	}
	defer rows.Close()
	var out []webhook.Webhook
	for rows.Next() {
		w, err := s.scan(rows)
		if err != nil {
			return nil, notFound(err, "webhooks")
		}
		out = append(out, w)
	}
	return out, notFound(rows.Err(), "webhooks")
}

// Create implements webhook.Store.
func (s Webhooks) Create(ctx context.Context, w webhook.Webhook, max int) (webhook.Webhook, error) {
	types := make([]string, len(w.EventTypes))
	for i, t := range w.EventTypes {
		types[i] = string(t)
	}
	// From the horizon, not the newest id: on PostgreSQL an entry below the
	// newest may still commit, and it belongs to "from now on".
	_, hi, err := NewEvents(s.db).Bounds(ctx, event.Filter{DomainID: w.DomainID})
	if err != nil {
		return w, err
	}
	w.Cursor = hi
	err = s.db.InTx(ctx, func(q Querier) error {
		// The domain row's lock serialises creates for one domain on
		// PostgreSQL (SQLite has one writer), so the count stays true
		// until the insert commits.
		if s.db.Dialect == Postgres {
			if _, err := q.ExecContext(ctx, `SELECT 1 FROM domains WHERE id = $1 FOR UPDATE`, w.DomainID); err != nil {
				return err
			}
		}
		var n int
		if err := q.QueryRowContext(ctx, `SELECT count(*) FROM webhooks WHERE domain_id = $1 AND format = 'postline'`, w.DomainID).Scan(&n); err != nil {
			return err
		}
		if n >= max {
			return apperr.Field("url", fmt.Sprintf("a domain may have at most %d webhooks", max))
		}
		return q.QueryRowContext(ctx, `INSERT INTO webhooks (domain_id, url, secret, event_types, last_event_id,
			next_attempt_at, created_at, format) VALUES ($1, $2, $3, $4, $5, $6, $7, 'postline') RETURNING id`,
			w.DomainID, w.URL, s.box.Seal([]byte(w.Secret)), strings.Join(types, ","), hi, ms(w.NextAttemptAt), ms(w.CreatedAt)).
			Scan(&w.ID)
	})
	if _, ok := apperr.As(err); ok {
		return w, err
	}
	return w, notFound(err, "webhook")
}

// List implements webhook.Store.
func (s Webhooks) List(ctx context.Context, domainID int64) ([]webhook.Webhook, error) {
	return s.collect(s.db.rd.QueryContext(ctx, `SELECT `+webhookCols+` FROM webhooks WHERE domain_id = $1 ORDER BY id`, domainID))
}

// Delete implements webhook.Store.
func (s Webhooks) Delete(ctx context.Context, domainID, id int64) error {
	return exec1(ctx, s.db.w, "webhook", `DELETE FROM webhooks WHERE id = $1 AND domain_id = $2`, id, domainID)
}

// Due implements webhook.Store.
func (s Webhooks) Due(ctx context.Context, now time.Time, after webhook.Position, limit int) ([]webhook.Webhook, error) {
	return s.collect(s.db.rd.QueryContext(ctx, `SELECT `+webhookCols+` FROM webhooks
		WHERE next_attempt_at <= $1 AND (lease_until IS NULL OR lease_until < $1)
		AND (next_attempt_at > $2 OR (next_attempt_at = $2 AND id > $3))
		ORDER BY next_attempt_at, id LIMIT $4 + 0`,
		ms(now), ms(after.NextAttemptAt), after.ID, limit))
}

// Release implements webhook.Store.
func (s Webhooks) Release(ctx context.Context, id int64, owner string) error {
	_, err := s.db.w.ExecContext(ctx, `UPDATE webhooks SET lease_owner = NULL, lease_until = NULL
		WHERE id = $1 AND lease_owner = $2`, id, owner)
	return notFound(err, "webhook")
}

// Lease implements webhook.Store.
func (s Webhooks) Lease(ctx context.Context, id int64, owner string, cursor int64, now, leaseUntil time.Time) (bool, error) {
	res, err := s.db.w.ExecContext(ctx, `UPDATE webhooks SET lease_owner = $2, lease_until = $3
		WHERE id = $1 AND last_event_id = $4 AND (lease_until IS NULL OR lease_until < $5)`,
		id, owner, ms(leaseUntil), cursor, ms(now))
	if err != nil {
		return false, notFound(err, "webhook")
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// Advance implements webhook.Store.
func (s Webhooks) Advance(ctx context.Context, id int64, owner string, cursor int64, posted bool, now time.Time) error {
	_, err := s.db.w.ExecContext(ctx, `UPDATE webhooks SET last_event_id = $3, attempts = 0, last_error = '',
		last_success_at = CASE WHEN $5 = 1 THEN $4 ELSE last_success_at END, next_attempt_at = $4,
		lease_owner = NULL, lease_until = NULL
		WHERE id = $1 AND lease_owner = $2`, id, owner, cursor, ms(now), b2i(posted))
	return notFound(err, "webhook")
}

// Fail implements webhook.Store.
func (s Webhooks) Fail(ctx context.Context, id int64, owner string, cursor int64, next time.Time, msg string) error {
	_, err := s.db.w.ExecContext(ctx, `UPDATE webhooks SET
		attempts = CASE WHEN last_event_id = $5 THEN attempts + 1 ELSE 1 END, last_event_id = $5, last_error = $3,
		next_attempt_at = $4, lease_owner = NULL, lease_until = NULL WHERE id = $1 AND lease_owner = $2`,
		id, owner, msg, ms(next), cursor)
	return notFound(err, "webhook")
}

// RecordPost implements webhook.Store.
func (s Webhooks) RecordPost(ctx context.Context, p webhook.Post) error {
	return s.db.InTx(ctx, func(q Querier) error {
		if _, err := q.ExecContext(ctx, `INSERT INTO webhook_posts (webhook_id, created_at, status, error, entries, duration_ms)
			VALUES ($1, $2, $3, $4, $5, $6)`, p.WebhookID, ms(p.At), p.Status, p.Error, p.Entries, p.Duration.Milliseconds()); err != nil {
			return err
		}
		_, err := q.ExecContext(ctx, `DELETE FROM webhook_posts WHERE webhook_id = $1 AND id <= (
			SELECT id FROM webhook_posts WHERE webhook_id = $1 ORDER BY id DESC LIMIT 1 OFFSET $2)`, p.WebhookID, webhook.KeptPosts)
		return err
	})
}

// Posts implements webhook.Store.
func (s Webhooks) Posts(ctx context.Context, webhookID int64, limit int) ([]webhook.Post, error) {
	rows, err := s.db.rd.QueryContext(ctx, `SELECT created_at, status, error, entries, duration_ms FROM webhook_posts
		WHERE webhook_id = $1 ORDER BY id DESC LIMIT $2 + 0`, webhookID, limit)
	if err != nil {
		return nil, notFound(err, "webhook posts")
	}
	defer rows.Close()
	var out []webhook.Post
	for rows.Next() {
		p := webhook.Post{WebhookID: webhookID}
		var at, dur int64
		if err := rows.Scan(&at, &p.Status, &p.Error, &p.Entries, &dur); err != nil {
			return nil, notFound(err, "webhook posts")
		}
		p.At, p.Duration = fromMS(at), time.Duration(dur)*time.Millisecond
		out = append(out, p)
	}
	return out, notFound(rows.Err(), "webhook posts")
}
