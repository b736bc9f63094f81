package store

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/postline/postline/internal/suppression"
)

// Suppressions implements suppression.Store.
type Suppressions struct{ db *DB }

var _ suppression.Store = Suppressions{}

// NewSuppressions returns the suppression store.
func NewSuppressions(db *DB) Suppressions { return Suppressions{db: db} }

const suppressionCols = `id, domain_id, type, recipient_type, recipient, tags, description, source, created_at`

func scanSuppression(row interface{ Scan(...any) error }) (suppression.Entry, error) {
	var e suppression.Entry
	var tags, desc, src sql.NullString
	var created int64
	err := row.Scan(&e.ID, &e.DomainID, &e.Type, &e.RecipientType, &e.Recipient, &tags, &desc, &src, &created)
	e.Tags, e.Description, e.Source, e.CreatedAt = nullStr(tags), nullStr(desc), nullStr(src), fromMS(created)
	return e, err
}

func nullStr(s sql.NullString) *string {
	if !s.Valid {
		return nil
	}
	return &s.String
}

// Add implements suppression.Store. The insert and the lookup of an
// existing entry are one statement each; a lost race on the unique key is
// answered with the winner's entry.
func (s Suppressions) Add(ctx context.Context, e suppression.Entry) (suppression.Entry, bool, error) {
	defer s.db.suppressionWrite(&e)()
	created, err := scanSuppression(s.db.w.QueryRowContext(ctx, `INSERT INTO suppressions
		(domain_id, type, recipient_type, recipient, tags, description, source, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
		ON CONFLICT (domain_id, type, recipient) DO NOTHING RETURNING `+suppressionCols,
		e.DomainID, e.Type, e.RecipientType, e.Recipient, e.Tags, e.Description, e.Source, ms(e.CreatedAt)))
	if err == nil {
		return created, true, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return e, false, notFound(err, "suppression")
	}
	existing, err := scanSuppression(s.db.w.QueryRowContext(ctx, `SELECT `+suppressionCols+` FROM suppressions
		WHERE domain_id = $1 AND type = $2 AND recipient = $3`, e.DomainID, e.Type, e.Recipient))
	return existing, false, notFound(err, "suppression")
}

// likePattern escapes s for a LIKE substring match with ESCAPE '\'.
func likePattern(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(s) + "%"
}

// List implements suppression.Store.
func (s Suppressions) List(ctx context.Context, p suppression.ListParams) ([]suppression.Entry, int, error) {
	from, where := "suppressions", `domain_id = $1 AND type = $2`
	args := []any{p.DomainID, p.Type}
	if p.Search != "" {
		search := strings.ToLower(p.Search)
		if s.db.Dialect == SQLite && utf8.RuneCountInString(search) >= 3 {
			// The trigram index (a quoted phrase matches as a substring)
			// drives: CROSS JOIN keeps SQLite from walking the domain's whole
			// list and probing the matches instead.
			from = `(SELECT s.* FROM suppressions_fts CROSS JOIN suppressions s ON s.id = suppressions_fts.rowid
				WHERE suppressions_fts MATCH $3) AS suppressions`
			args = append(args, `"`+strings.ReplaceAll(search, `"`, `""`)+`"`)
		} else { // PostgreSQL's trigram index serves LIKE; shorter searches scan
			where += ` AND recipient LIKE $3 ESCAPE '\'`
			args = append(args, likePattern(search))
		}
	}
	if p.Source != "" {
		args = append(args, p.Source)
		where += ` AND source = $` + strconv.Itoa(len(args))
	}
	// Without a search the trigger-kept total answers; with one, counting
	// the matches is the price (trigram-indexed on PostgreSQL).
	countQ := `SELECT COALESCE((SELECT n FROM suppression_counts WHERE domain_id = $1 AND type = $2), 0)`
	if p.Search != "" || p.Source != "" {
		countQ = `SELECT COUNT(*) FROM ` + from + ` WHERE ` + where
	}
	var total int
	if err := s.db.rd.QueryRowContext(ctx, countQ, args...).Scan(&total); err != nil {
		return nil, 0, notFound(err, "suppressions")
	}
	n := len(args)
	rows, err := s.db.rd.QueryContext(ctx, `SELECT `+suppressionCols+` FROM `+from+` WHERE `+where+
		` ORDER BY created_at DESC, id DESC LIMIT $`+strconv.Itoa(n+1)+` + 0 OFFSET $`+strconv.Itoa(n+2),
		append(args, p.Limit, p.Offset)...)
	if err != nil {
		return nil, 0, notFound(err, "suppressions")
	}
	out, err := collectSuppressions(rows)
	return out, total, err
}

func collectSuppressions(rows *sql.Rows) ([]suppression.Entry, error) {
	defer rows.Close()
	out := []suppression.Entry{}
	for rows.Next() {
		e, err := scanSuppression(rows)
		if err != nil {
			return nil, notFound(err, "suppressions")
		}
		out = append(out, e)
	}
	return out, notFound(rows.Err(), "suppressions")
}

// Delete implements suppression.Store.
// Removing one bumps the "suppressions-removed" counter, so that every
// process reloads what it keeps in memory of the lists (the validation's
// bounce history).
func (s Suppressions) Delete(ctx context.Context, domainID, id int64) error {
	return s.db.InTx(ctx, func(q Querier) error {
		if err := exec1(ctx, q, "suppression", `DELETE FROM suppressions WHERE id = $1 AND domain_id = $2`, id, domainID); err != nil {
			return err
		}
		_, err := Meta{db: s.db}.bump(ctx, q, MetaSuppressionsRemoved)
		return err
	})
}

// DeleteAll implements suppression.Store.
func (s Suppressions) DeleteAll(ctx context.Context, domainID int64, t suppression.Type, source string) (int, error) {
	var n int64
	err := s.db.InTx(ctx, func(q Querier) error {
		query, args := `DELETE FROM suppressions WHERE domain_id = $1 AND type = $2`, []any{domainID, t}
		if source != "" {
			query, args = query+` AND source = $3`, append(args, source)
		}
		res, err := q.ExecContext(ctx, query, args...)
		if err != nil {
			return err
		}
		if n, _ = res.RowsAffected(); n > 0 {
			_, err = Meta{db: s.db}.bump(ctx, q, MetaSuppressionsRemoved)
		}
		return err
	})
	return int(n), notFound(err, "suppressions")
}

// matchChunk bounds the IN list of one query, well under both engines'
// parameter limits.
const matchChunk = 1000

// Matching implements suppression.Store.
func (s Suppressions) Matching(ctx context.Context, domainID int64, keys []string) ([]suppression.Entry, error) {
	if s.db.Dialect == Postgres { // one array parameter, one plan
		rows, err := s.db.rd.QueryContext(ctx, `SELECT `+suppressionCols+` FROM suppressions
			WHERE domain_id = $1 AND recipient = ANY($2)`, domainID, keys)
		if err != nil {
			return nil, notFound(err, "suppressions")
		}
		return collectSuppressions(rows)
	}
	var out []suppression.Entry
	for start := 0; start < len(keys); start += matchChunk {
		part := keys[start:min(start+matchChunk, len(keys))]
		var b strings.Builder
		args := make([]any, 0, len(part)+1)
		args = append(args, domainID)
		for i, k := range part {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString("$" + strconv.Itoa(i+2))
			args = append(args, k)
		}
		rows, err := s.db.rd.QueryContext(ctx, `SELECT `+suppressionCols+` FROM suppressions
			WHERE domain_id = $1 AND recipient IN (`+b.String()+`)`, args...)
		if err != nil {
			return nil, notFound(err, "suppressions")
		}
		got, err := collectSuppressions(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
	}
	return out, nil
}

// BounceRow is one address that bounced permanently for an account.
type BounceRow struct {
	ID        int64
	AccountID int64
	Recipient string
}

// Bounces returns up to limit bounce suppressions of email addresses with
// id > afterID, in id order, with the account of their domain: what the
// validation's in-memory bounce history is built and followed from.
func (s Suppressions) Bounces(ctx context.Context, afterID int64, limit int) ([]BounceRow, error) {
	rows, err := s.db.rd.QueryContext(ctx, `SELECT s.id, d.account_id, s.recipient FROM suppressions s
		JOIN domains d ON d.id = s.domain_id
		WHERE s.type = 'bounce' AND s.recipient_type = 'email' AND s.id > $1 ORDER BY s.id LIMIT $2 + 0`, afterID, limit)
	if err != nil {
		return nil, notFound(err, "suppressions")
	}
	defer rows.Close()
	var out []BounceRow
	for rows.Next() {
		var b BounceRow
		if err := rows.Scan(&b.ID, &b.AccountID, &b.Recipient); err != nil {
			return nil, notFound(err, "suppressions")
		}
		out = append(out, b)
	}
	return out, notFound(rows.Err(), "suppressions")
}
