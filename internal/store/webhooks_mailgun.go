package store

import (
	"context"
	"slices"
	"time"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/webhook"
)

// SetMailgun implements webhook.Store.
func (s Webhooks) SetMailgun(ctx context.Context, domainID int64, id string, urls []string, now time.Time,
	cond webhook.SetCondition) ([]string, error) {
	_, hi, err := NewEvents(s.db).Bounds(ctx, event.Filter{DomainID: domainID})
	if err != nil {
		return nil, err
	}
	var had []string
	err = s.db.InTx(ctx, func(q Querier) error {
		had = nil                     // a retried transaction starts again
		if s.db.Dialect == Postgres { // serialises changes of one domain's webhooks, as Create does
			if _, err := q.ExecContext(ctx, `SELECT 1 FROM domains WHERE id = $1 FOR UPDATE`, domainID); err != nil {
				return err
			}
		}
		rows, err := q.QueryContext(ctx, `SELECT url FROM webhooks WHERE domain_id = $1 AND format = 'mailgun'
			AND mailgun_event = $2 ORDER BY id`, domainID, id)
		if err != nil {
			return err
		}
		for rows.Next() {
			var u string
			if err := rows.Scan(&u); err != nil {
				rows.Close()
				return err
			}
			had = append(had, u)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		switch {
		case cond == webhook.MustBeNew && len(had) > 0:
			return webhook.ErrMailgunExists
		case cond == webhook.MustExist && len(had) == 0:
			return webhook.ErrMailgunNotFound
		}
		for _, u := range had {
			if !slices.Contains(urls, u) {
				if _, err := q.ExecContext(ctx, `DELETE FROM webhooks WHERE domain_id = $1 AND format = 'mailgun'
					AND mailgun_event = $2 AND url = $3`, domainID, id, u); err != nil {
					return err
				}
			}
		}
		for _, u := range urls {
			if slices.Contains(had, u) {
				continue // keeps its cursor
			}
			if _, err := q.ExecContext(ctx, `INSERT INTO webhooks (domain_id, url, secret, event_types, last_event_id,
				next_attempt_at, created_at, format, mailgun_event) VALUES ($1, $2, '', '', $3, $4, $4, 'mailgun', $5)`,
				domainID, u, hi, ms(now), id); err != nil {
				return err
			}
		}
		return nil
	})
	if _, ok := apperr.As(err); ok {
		return nil, err
	}
	return had, notFound(err, "webhook")
}

// SigningKey implements webhook.Store.
func (s Webhooks) SigningKey(ctx context.Context, accountID int64) (string, error) {
	var sealed string
	if err := s.db.rd.QueryRowContext(ctx, `SELECT webhook_signing_key FROM accounts WHERE id = $1`, accountID).
		Scan(&sealed); err != nil {
		return "", notFound(err, "account")
	}
	if sealed == "" {
		return "", nil
	}
	plain, err := s.box.Open(sealed)
	if err != nil {
		return "", apperr.Errorf(apperr.Unavailable, "the webhook signing key cannot be decrypted with this server's secret key")
	}
	return string(plain), nil
}

// SetSigningKey implements webhook.Store.
func (s Webhooks) SetSigningKey(ctx context.Context, accountID int64, key string, replace bool) error {
	q := `UPDATE accounts SET webhook_signing_key = $1 WHERE id = $2`
	if !replace {
		q += ` AND webhook_signing_key = ''`
	}
	_, err := s.db.w.ExecContext(ctx, q, s.box.Seal([]byte(key)), accountID)
	return notFound(err, "account")
}

// DomainAccount implements webhook.Store.
func (s Webhooks) DomainAccount(ctx context.Context, domainID int64) (int64, error) {
	var id int64
	err := s.db.rd.QueryRowContext(ctx, `SELECT account_id FROM domains WHERE id = $1`, domainID).Scan(&id)
	return id, notFound(err, "domain")
}
