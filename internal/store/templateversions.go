package store

import (
	"context"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/templates"
)

// TemplateByTag implements templates.Store.
func (s Templates) TemplateByTag(ctx context.Context, domainID int64, name, tag string) (templates.Template, error) {
	t, err := scanTemplate(s.db.rd.QueryRowContext(ctx, `SELECT `+templateCols+` FROM templates
		WHERE domain_id = $1 AND name = $2 AND tag = $3`, domainID, name, tag))
	return t, notFound(err, "template version")
}

// Versions implements templates.Store.
func (s Templates) Versions(ctx context.Context, domainID int64, name string) ([]templates.Template, error) {
	rows, err := s.db.rd.QueryContext(ctx, `SELECT `+templateListCols+` FROM templates WHERE domain_id = $1 AND name = $2
		ORDER BY version`, domainID, name)
	if err != nil {
		return nil, notFound(err, "template")
	}
	defer rows.Close()
	var out []templates.Template
	for rows.Next() {
		t, err := scanTemplate(rows)
		if err != nil {
			return nil, notFound(err, "template")
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, notFound(err, "template")
	}
	if len(out) == 0 {
		return nil, apperr.Errorf(apperr.NotFound, "template not found")
	}
	return out, nil
}

// UpdateVersion implements templates.Store.
func (s Templates) UpdateVersion(ctx context.Context, t templates.Template) (templates.Template, error) {
	err := s.db.InTx(ctx, func(q Querier) error {
		if err := s.lockDomain(ctx, q, t.DomainID); err != nil {
			return err
		}
		if t.Active {
			if _, err := q.ExecContext(ctx, `UPDATE templates SET active = 0 WHERE domain_id = $1 AND name = $2`, t.DomainID, t.Name); err != nil {
				return err
			}
		}
		res, err := q.ExecContext(ctx, `UPDATE templates SET subject = $4, html = $5, text = $6, comment = $7,
			active = CASE WHEN $8 = 1 THEN 1 ELSE active END
			WHERE domain_id = $1 AND name = $2 AND tag = $3`, t.DomainID, t.Name, t.Tag, t.Subject, t.HTML, t.Text, t.Comment, b2i(t.Active))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return apperr.Errorf(apperr.NotFound, "template version not found")
		}
		return nil
	})
	if err != nil {
		return t, notFound(err, "template version")
	}
	return s.TemplateByTag(ctx, t.DomainID, t.Name, t.Tag)
}

// SetDescription implements templates.Store.
func (s Templates) SetDescription(ctx context.Context, domainID int64, name, description string) error {
	res, err := s.db.w.ExecContext(ctx, `UPDATE templates SET description = $3 WHERE domain_id = $1 AND name = $2`,
		domainID, name, description)
	if err != nil {
		return notFound(err, "template")
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return apperr.Errorf(apperr.NotFound, "template not found")
	}
	return nil
}

// DeleteVersion implements templates.Store.
func (s Templates) DeleteVersion(ctx context.Context, domainID int64, name, tag string) error {
	return s.db.InTx(ctx, func(q Querier) error {
		if err := s.lockDomain(ctx, q, domainID); err != nil {
			return err
		}
		var active, n int
		err := q.QueryRowContext(ctx, `SELECT active, (SELECT COUNT(*) FROM templates WHERE domain_id = $1 AND name = $2)
			FROM templates WHERE domain_id = $1 AND name = $2 AND tag = $3`, domainID, name, tag).Scan(&active, &n)
		if err != nil {
			return notFound(err, "template version")
		}
		if active != 0 || n == 1 {
			return apperr.Field("tag", "The active version (or a template's only one) cannot be deleted: make another version active first, or delete the template.")
		}
		_, err = q.ExecContext(ctx, `DELETE FROM templates WHERE domain_id = $1 AND name = $2 AND tag = $3`, domainID, name, tag)
		return err
	})
}

// DeleteAllTemplates implements templates.Store.
func (s Templates) DeleteAllTemplates(ctx context.Context, domainID int64) error {
	_, err := s.db.w.ExecContext(ctx, `DELETE FROM templates WHERE domain_id = $1`, domainID)
	return err
}
