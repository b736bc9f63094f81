package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/templates"
)

// Templates implements templates.Store.
type Templates struct{ db *DB }

var _ templates.Store = Templates{}

// NewTemplates returns the template store.
func NewTemplates(db *DB) Templates { return Templates{db: db} }

const templateCols = `id, domain_id, name, version, subject, html, text, strict, created_at`

func scanTemplate(row interface{ Scan(...any) error }, extra ...any) (templates.Template, error) {
	var t templates.Template
	var strict int
	var created int64
	err := row.Scan(append([]any{&t.ID, &t.DomainID, &t.Name, &t.Version, &t.Subject, &t.HTML, &t.Text, &strict, &created}, extra...)...)
	t.Strict, t.CreatedAt = strict != 0, fromMS(created)
	return t, err
}

// lockDomain serialises template writes of one domain on PostgreSQL (SQLite
// has one writer), so counts and version numbers hold until the commit.
func (s Templates) lockDomain(ctx context.Context, q Querier, domainID int64) error {
	if s.db.Dialect != Postgres {
		return nil
	}
	_, err := q.ExecContext(ctx, `SELECT 1 FROM domains WHERE id = $1 FOR UPDATE`, domainID)
	return err
}

func (s Templates) insert(ctx context.Context, q Querier, t *templates.Template) error {
	return q.QueryRowContext(ctx, `INSERT INTO templates (domain_id, name, version, subject, html, text, strict, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id`, t.DomainID, t.Name, t.Version, t.Subject, t.HTML, t.Text,
		b2i(t.Strict), ms(t.CreatedAt)).Scan(&t.ID)
}

// CreateTemplate implements templates.Store.
func (s Templates) CreateTemplate(ctx context.Context, t templates.Template, max int) (templates.Template, error) {
	err := s.db.InTx(ctx, func(q Querier) error {
		if err := s.lockDomain(ctx, q, t.DomainID); err != nil {
			return err
		}
		var n, same int
		if err := q.QueryRowContext(ctx, `SELECT COUNT(DISTINCT name), COUNT(CASE WHEN name = $2 THEN 1 END)
			FROM templates WHERE domain_id = $1`, t.DomainID, t.Name).Scan(&n, &same); err != nil {
			return err
		}
		if same > 0 {
			return apperr.Errorf(apperr.Conflict, "template exists")
		}
		if n >= max {
			return apperr.Field("name", fmt.Sprintf("A domain may have at most %d templates.", max))
		}
		t.Version = 1
		return s.insert(ctx, q, &t)
	})
	if _, ok := apperr.As(err); ok {
		return t, err
	}
	if isUnique(err) {
		return t, apperr.Errorf(apperr.Conflict, "template exists")
	}
	return t, notFound(err, "template")
}

// AddVersion implements templates.Store.
func (s Templates) AddVersion(ctx context.Context, t templates.Template, max int) (templates.Template, error) {
	err := s.db.InTx(ctx, func(q Querier) error {
		if err := s.lockDomain(ctx, q, t.DomainID); err != nil {
			return err
		}
		var last sql.NullInt64
		if err := q.QueryRowContext(ctx, `SELECT MAX(version) FROM templates WHERE domain_id = $1 AND name = $2`,
			t.DomainID, t.Name).Scan(&last); err != nil {
			return err
		}
		if !last.Valid {
			return apperr.Errorf(apperr.NotFound, "template not found")
		}
		if int(last.Int64) >= max {
			return apperr.Field("version", fmt.Sprintf("A template may have at most %d versions; delete it and create it again.", max))
		}
		t.Version = int(last.Int64) + 1
		return s.insert(ctx, q, &t)
	})
	if _, ok := apperr.As(err); ok {
		return t, err
	}
	return t, notFound(err, "template")
}

// Template implements templates.Store.
func (s Templates) Template(ctx context.Context, domainID int64, name string, version int) (templates.Template, error) {
	q := `SELECT ` + templateCols + ` FROM templates WHERE domain_id = $1 AND name = $2 AND version = $3`
	args := []any{domainID, name, version}
	if version == 0 {
		q = `SELECT ` + templateCols + ` FROM templates WHERE domain_id = $1 AND name = $2 ORDER BY version DESC LIMIT 1`
		args = args[:2]
	}
	t, err := scanTemplate(s.db.rd.QueryRowContext(ctx, q, args...))
	return t, notFound(err, "template")
}

// ListTemplates implements templates.Store.
func (s Templates) ListTemplates(ctx context.Context, domainID int64) ([]templates.Template, error) {
	rows, err := s.db.rd.QueryContext(ctx, `SELECT `+templateCols+`, n FROM templates t
		JOIN (SELECT name AS vname, MAX(version) AS v, COUNT(*) AS n FROM templates WHERE domain_id = $1 GROUP BY name) m
		ON m.vname = t.name AND m.v = t.version WHERE t.domain_id = $1 ORDER BY t.name`, domainID)
	if err != nil {
		return nil, notFound(err, "templates")
	}
	defer rows.Close()
	var out []templates.Template
	for rows.Next() {
		var n int
		t, err := scanTemplate(rows, &n)
		if err != nil {
			return nil, notFound(err, "templates")
		}
		t.Versions = n
		out = append(out, t)
	}
	return out, notFound(rows.Err(), "templates")
}

// DeleteTemplate implements templates.Store.
func (s Templates) DeleteTemplate(ctx context.Context, domainID int64, name string) error {
	res, err := s.db.w.ExecContext(ctx, `DELETE FROM templates WHERE domain_id = $1 AND name = $2`, domainID, name)
	if err != nil {
		return notFound(err, "template")
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return apperr.Errorf(apperr.NotFound, "template not found")
	}
	return nil
}
