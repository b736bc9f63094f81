package store

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/templates"
)

// Templates implements templates.Store.
type Templates struct{ db *DB }

var _ templates.Store = Templates{}

// NewTemplates returns the template store.
func NewTemplates(db *DB) Templates { return Templates{db: db} }

const templateCols = `id, domain_id, name, version, subject, html, text, strict, created_at, tag, comment, description, active`

// templateListCols are templateCols without the content (html and text
// come back empty): lists show names, tags and subjects, and reading the
// content of a domain's 500 templates, or of one's 100 versions, for a
// page of them took up to 1 GB a request (512 KiB of each part a version).
const templateListCols = `id, domain_id, name, version, subject, '', '', strict, created_at, tag, comment, description, active`

func scanTemplate(row interface{ Scan(...any) error }, extra ...any) (templates.Template, error) {
	var t templates.Template
	var strict, active int
	var created int64
	err := row.Scan(append([]any{&t.ID, &t.DomainID, &t.Name, &t.Version, &t.Subject, &t.HTML, &t.Text, &strict, &created,
		&t.Tag, &t.Comment, &t.Description, &active}, extra...)...)
	t.Strict, t.CreatedAt, t.Active = strict != 0, fromMS(created), active != 0
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

// insert stores a version. A version without a tag is tagged with its
// number (or the number and a suffix when a Mailgun tag took that); a
// tag the name has is a Conflict. An active version makes the others
// inactive.
func (s Templates) insert(ctx context.Context, q Querier, t *templates.Template) error {
	explicit := t.Tag != ""
	if !explicit {
		t.Tag = strconv.Itoa(t.Version)
	}
	for i := 1; ; i++ {
		var n int
		if err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM templates WHERE domain_id = $1 AND name = $2 AND tag = $3`,
			t.DomainID, t.Name, t.Tag).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			break
		}
		if explicit {
			return apperr.Errorf(apperr.Conflict, "Template %s has a version tagged %s.", t.Name, t.Tag)
		}
		t.Tag = fmt.Sprintf("%d-%d", t.Version, i)
	}
	if t.Active {
		if _, err := q.ExecContext(ctx, `UPDATE templates SET active = 0 WHERE domain_id = $1 AND name = $2`, t.DomainID, t.Name); err != nil {
			return err
		}
	}
	return q.QueryRowContext(ctx, `INSERT INTO templates (domain_id, name, version, subject, html, text, strict, created_at,
		tag, comment, description, active)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING id`, t.DomainID, t.Name, t.Version, t.Subject, t.HTML, t.Text,
		b2i(t.Strict), ms(t.CreatedAt), t.Tag, t.Comment, t.Description, b2i(t.Active)).Scan(&t.ID)
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
		t.Version, t.Active = 1, true
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
		var desc sql.NullString
		if err := q.QueryRowContext(ctx, `SELECT MAX(version), MAX(description) FROM templates WHERE domain_id = $1 AND name = $2`,
			t.DomainID, t.Name).Scan(&last, &desc); err != nil {
			return err
		}
		t.Description = desc.String
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
		q = `SELECT ` + templateCols + ` FROM templates WHERE domain_id = $1 AND name = $2 ORDER BY active DESC, version DESC LIMIT 1`
		args = args[:2]
	}
	t, err := scanTemplate(s.db.rd.QueryRowContext(ctx, q, args...))
	return t, notFound(err, "template")
}

// ListTemplates implements templates.Store.
func (s Templates) ListTemplates(ctx context.Context, domainID int64) ([]templates.Template, error) {
	rows, err := s.db.rd.QueryContext(ctx, `SELECT `+templateListCols+`, n FROM templates t
		JOIN (SELECT name AS vname, COALESCE(MAX(CASE WHEN active = 1 THEN version END), MAX(version)) AS v, COUNT(*) AS n
			FROM templates WHERE domain_id = $1 GROUP BY name) m
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
