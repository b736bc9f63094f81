package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/inboundpost"
	"github.com/postline/postline/internal/receiving"
)

// InboundPosts implements inboundpost.Store: the outbox of routes' posts.
type InboundPosts struct{ db *DB }

var _ inboundpost.Store = InboundPosts{}

// NewInboundPosts returns the outbox of inbound posts.
func NewInboundPosts(db *DB) InboundPosts { return InboundPosts{db: db} }

const inboundPostCols = `id, token, account_id, domain_id, route_id, kind, url, format, recipient, sender, message_id, stored_id,
	state, attempts, last_status, last_error, next_attempt_at, created_at`

// Enqueue implements inboundpost.Store. The bound is checked after the
// inserts, in their transaction: a token that joins an earlier post adds
// nothing, and the sum holds until the commit (PostgreSQL serialises an
// account's enqueues on its row, SQLite has one writer).
func (s InboundPosts) Enqueue(ctx context.Context, posts []inboundpost.Post, maxPendingBytes int64) error {
	if len(posts) == 0 {
		return nil
	}
	return s.db.InTx(ctx, func(q Querier) error {
		acc := posts[0].AccountID
		if s.db.Dialect == Postgres {
			if _, err := q.ExecContext(ctx, `SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE`, acc); err != nil {
				return err
			}
		}
		for _, p := range posts {
			if p.AccountID != acc {
				return fmt.Errorf("store: enqueueing posts of accounts %d and %d at once", acc, p.AccountID)
			}
			if _, err := q.ExecContext(ctx, `INSERT INTO inbound_posts (token, account_id, domain_id, route_id, kind, url, format,
				recipient, sender, message_id, stored_id, raw, state, next_attempt_at, created_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 'pending', $13, $14) ON CONFLICT (token) DO NOTHING`,
				p.Token, p.AccountID, p.DomainID, p.RouteID, p.Kind, p.URL, p.Format, p.Recipient, p.Sender, p.MessageID, p.StoredID,
				nonNil(p.Raw), ms(p.NextAttemptAt), ms(p.CreatedAt)); err != nil {
				return err
			}
		}
		var held int64
		if err := q.QueryRowContext(ctx, `SELECT COALESCE(SUM(LENGTH(raw)), 0) FROM inbound_posts
			WHERE state = 'pending' AND account_id = $1`, acc).Scan(&held); err != nil {
			return err
		}
		if held > maxPendingBytes {
			return receiving.ErrPostsFull
		}
		return nil
	})
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// DuePosts implements inboundpost.Store.
func (s InboundPosts) DuePosts(ctx context.Context, now time.Time, limit int) ([]inboundpost.Post, error) {
	rows, err := s.db.rd.QueryContext(ctx, `SELECT `+inboundPostCols+` FROM inbound_posts
		WHERE state = 'pending' AND next_attempt_at <= $1 AND (lease_until IS NULL OR lease_until < $1)
		ORDER BY next_attempt_at, id LIMIT $2 + 0`, ms(now), limit)
	if err != nil {
		return nil, notFound(err, "posts")
	}
	defer rows.Close()
	var out []inboundpost.Post
	for rows.Next() {
		var p inboundpost.Post
		var next, created int64
		if err := rows.Scan(&p.ID, &p.Token, &p.AccountID, &p.DomainID, &p.RouteID, &p.Kind, &p.URL, &p.Format, &p.Recipient,
			&p.Sender, &p.MessageID, &p.StoredID, &p.State, &p.Attempts, &p.LastStatus, &p.LastError, &next, &created); err != nil {
			return nil, err
		}
		p.NextAttemptAt, p.CreatedAt = fromMS(next), fromMS(created)
		out = append(out, p)
	}
	return out, notFound(rows.Err(), "posts")
}

// LeasePost implements inboundpost.Store.
func (s InboundPosts) LeasePost(ctx context.Context, id int64, owner string, now, until time.Time) (bool, error) {
	res, err := s.db.w.ExecContext(ctx, `UPDATE inbound_posts SET lease_owner = $2, lease_until = $3
		WHERE id = $1 AND state = 'pending' AND (lease_until IS NULL OR lease_until < $4)`, id, owner, ms(until), ms(now))
	if err != nil {
		return false, notFound(err, "post")
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// PostRaw implements inboundpost.Store.
func (s InboundPosts) PostRaw(ctx context.Context, id int64) ([]byte, error) {
	var raw []byte
	err := s.db.rd.QueryRowContext(ctx, `SELECT raw FROM inbound_posts WHERE id = $1`, id).Scan(&raw)
	return raw, notFound(err, "post")
}

// RetryPost implements inboundpost.Store.
func (s InboundPosts) RetryPost(ctx context.Context, id int64, owner string, r inboundpost.Result) error {
	_, err := s.db.w.ExecContext(ctx, `UPDATE inbound_posts SET attempts = $3, last_status = $4, last_error = $5, next_attempt_at = $6,
		lease_owner = NULL, lease_until = NULL WHERE id = $1 AND lease_owner = $2 AND state = 'pending'`,
		id, owner, r.Attempts, r.Status, r.Error, ms(r.Next))
	return notFound(err, "post")
}

// FinishPost implements inboundpost.Store.
func (s InboundPosts) FinishPost(ctx context.Context, id int64, owner string, r inboundpost.Result, entry *event.Entry) error {
	return notFound(s.db.InTx(ctx, func(q Querier) error {
		res, err := q.ExecContext(ctx, `UPDATE inbound_posts SET state = $3, attempts = $4, last_status = $5, last_error = $6,
			raw = $7, done_at = $8, lease_owner = NULL, lease_until = NULL
			WHERE id = $1 AND lease_owner = $2 AND state = 'pending'`, id, owner, r.State, r.Attempts, r.Status, r.Error, []byte{}, ms(r.At))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return sql.ErrNoRows // the lease was lost: another process tries it
		}
		if entry == nil {
			return nil
		}
		return NewEvents(s.db).In(q).Insert(ctx, []event.Entry{*entry})
	}), "post")
}

// PrunePosts implements inboundpost.Store.
func (s InboundPosts) PrunePosts(ctx context.Context, before time.Time, batch int) (int64, error) {
	var total int64
	for {
		res, err := s.db.w.ExecContext(ctx, `DELETE FROM inbound_posts WHERE id IN
			(SELECT id FROM inbound_posts WHERE created_at < $1 LIMIT $2 + 0)`, ms(before), batch)
		if err != nil {
			return total, notFound(err, "posts")
		}
		n, _ := res.RowsAffected()
		total += n
		if n < int64(batch) || ctx.Err() != nil {
			return total, nil
		}
	}
}
