package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/receiving"
)

// InboundMessages implements receiving.Store.
type InboundMessages struct{ db *DB }

var _ receiving.Store = InboundMessages{}

// NewInboundMessages returns the store of received mail.
func NewInboundMessages(db *DB) InboundMessages { return InboundMessages{db: db} }

const inboundMessageCols = `id, account_id, domain_id, recipient, sender, from_header, subject, message_id, routes, auth, size, received_at`

func scanInboundMessage(row interface{ Scan(...any) error }, raw *[]byte) (receiving.Message, error) {
	var m receiving.Message
	var routes, auth string
	var at int64
	dst := []any{&m.ID, &m.AccountID, &m.DomainID, &m.Recipient, &m.Sender, &m.From, &m.Subject, &m.MessageID, &routes, &auth, &m.Size, &at}
	if raw != nil {
		dst = append(dst, raw)
	}
	if err := row.Scan(dst...); err != nil {
		return m, err
	}
	m.ReceivedAt = fromMS(at)
	if err := json.Unmarshal([]byte(routes), &m.Routes); err != nil {
		return m, fmt.Errorf("stored message %s: routes: %w", m.ID, err)
	}
	if err := json.Unmarshal([]byte(auth), &m.Auth); err != nil {
		return m, fmt.Errorf("stored message %s: auth: %w", m.ID, err)
	}
	return m, nil
}

// Record implements receiving.Store.
func (s InboundMessages) Record(ctx context.Context, msgs []receiving.Message, entries []event.Entry, maxBytesPerAccount int64) error {
	adding := map[int64]int64{}
	for _, m := range msgs {
		adding[m.AccountID] += m.Size
	}
	accounts := make([]int64, 0, len(adding))
	for a := range adding {
		accounts = append(accounts, a)
	}
	slices.Sort(accounts) // locks in one order: two messages never wait on each other's
	return s.db.InTx(ctx, func(q Querier) error {
		for _, acc := range accounts {
			// The sum holds until the commit: PostgreSQL serialises an
			// account's stores on its row, SQLite has one writer.
			if s.db.Dialect == Postgres {
				if _, err := q.ExecContext(ctx, `SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE`, acc); err != nil {
					return err
				}
			}
			var held int64
			if err := q.QueryRowContext(ctx, `SELECT COALESCE(SUM(size), 0) FROM inbound_messages WHERE account_id = $1`, acc).Scan(&held); err != nil {
				return err
			}
			if held+adding[acc] > maxBytesPerAccount {
				return receiving.ErrStoreFull
			}
		}
		for _, m := range msgs {
			routes, _ := json.Marshal(m.Routes)
			auth, _ := json.Marshal(m.Auth)
			if _, err := q.ExecContext(ctx, `INSERT INTO inbound_messages (id, account_id, domain_id, recipient, recipient_lc,
				sender, sender_lc, from_header, subject, subject_lc, message_id, routes, auth, size, raw, received_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`,
				m.ID, m.AccountID, m.DomainID, m.Recipient, event.Fold(m.Recipient), m.Sender, event.Fold(m.Sender), m.From,
				m.Subject, event.Fold(m.Subject), m.MessageID, string(routes), string(auth), m.Size, m.Raw, ms(m.ReceivedAt)); err != nil {
				return err
			}
		}
		return NewEvents(s.db).In(q).Insert(ctx, entries)
	})
}

func (s InboundMessages) where(f receiving.Filter) (string, []any) {
	var b strings.Builder
	b.WriteString("domain_id = $1")
	args := []any{f.DomainID}
	add := func(cond string, v any) {
		args = append(args, v)
		b.WriteString(" AND " + strings.Replace(cond, "?", "$"+strconv.Itoa(len(args)), 1))
	}
	since := f.Since
	if f.Start.After(since) {
		since = f.Start
	}
	if !since.IsZero() {
		add("received_at >= ?", ms(since))
	}
	if !f.End.IsZero() {
		add("received_at <= ?", ms(f.End))
	}
	if f.Recipient != "" {
		add("recipient_lc = ?", event.Fold(f.Recipient))
	}
	if f.Sender != "" {
		add("sender_lc = ?", event.Fold(f.Sender))
	}
	if f.Subject != "" {
		add(`subject_lc LIKE ? ESCAPE '\'`, likePattern(event.Fold(f.Subject)))
	}
	return b.String(), args
}

// ListMessages implements receiving.Store.
func (s InboundMessages) ListMessages(ctx context.Context, f receiving.Filter) ([]receiving.Message, int, error) {
	where, args := s.where(f)
	var total int
	if err := s.db.rd.QueryRowContext(ctx, `SELECT COUNT(*) FROM inbound_messages WHERE `+where, args...).Scan(&total); err != nil {
		return nil, 0, notFound(err, "messages")
	}
	n := len(args)
	rows, err := s.db.rd.QueryContext(ctx, `SELECT `+inboundMessageCols+` FROM inbound_messages WHERE `+where+
		` ORDER BY received_at DESC, id DESC LIMIT $`+strconv.Itoa(n+1)+` + 0 OFFSET $`+strconv.Itoa(n+2), append(args, f.Limit, f.Offset)...)
	if err != nil {
		return nil, 0, notFound(err, "messages")
	}
	defer rows.Close()
	out := []receiving.Message{}
	for rows.Next() {
		m, err := scanInboundMessage(rows, nil)
		if err != nil {
			return nil, 0, notFound(err, "messages")
		}
		out = append(out, m)
	}
	return out, total, notFound(rows.Err(), "messages")
}

// Message implements receiving.Store.
func (s InboundMessages) Message(ctx context.Context, domainID int64, id string) (receiving.Message, error) {
	var raw []byte
	m, err := scanInboundMessage(s.db.rd.QueryRowContext(ctx, `SELECT `+inboundMessageCols+`, raw FROM inbound_messages
		WHERE id = $1 AND domain_id = $2`, id, domainID), &raw)
	m.Raw = raw
	return m, notFound(err, "message")
}

// PruneMessages implements receiving.Store.
func (s InboundMessages) PruneMessages(ctx context.Context, before time.Time, batch int) (int64, error) {
	var total int64
	for {
		res, err := s.db.w.ExecContext(ctx, `DELETE FROM inbound_messages WHERE id IN
			(SELECT id FROM inbound_messages WHERE received_at < $1 LIMIT $2 + 0)`, ms(before), batch)
		if err != nil {
			return total, notFound(err, "messages")
		}
		n, _ := res.RowsAffected()
		total += n
		if n < int64(batch) || ctx.Err() != nil {
			return total, nil
		}
	}
}
