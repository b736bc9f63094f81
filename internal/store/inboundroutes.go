package store

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/inboundroute"
)

// InboundRoutes implements inboundroute.Store.
type InboundRoutes struct{ db *DB }

var _ inboundroute.Store = InboundRoutes{}

// NewInboundRoutes returns the inbound route store.
func NewInboundRoutes(db *DB) InboundRoutes { return InboundRoutes{db: db} }

const inboundRouteCols = `id, account_id, priority, description, expression, actions, created_at, format`

func scanInboundRoute(row interface{ Scan(...any) error }) (inboundroute.Definition, error) {
	var d inboundroute.Definition
	var actions string
	var created int64
	if err := row.Scan(&d.ID, &d.AccountID, &d.Priority, &d.Description, &d.Expression, &actions, &created, &d.Format); err != nil {
		return d, err
	}
	d.CreatedAt = fromMS(created)
	if err := json.Unmarshal([]byte(actions), &d.Actions); err != nil {
		return d, fmt.Errorf("route %s: actions: %w", d.ID, err)
	}
	return d, nil
}

func actionsJSON(actions []string) string {
	if actions == nil {
		actions = []string{}
	}
	b, _ := json.Marshal(actions)
	return string(b)
}

// routeFormat is the format stored: the default when none is given.
func routeFormat(f string) string { return cmp.Or(f, inboundroute.FormatMailgun) }

// CreateRoute implements inboundroute.Store.
func (s InboundRoutes) CreateRoute(ctx context.Context, d inboundroute.Definition, max int) (inboundroute.Definition, error) {
	err := s.db.InTx(ctx, func(q Querier) error {
		// The count holds until the commit: PostgreSQL serialises an
		// account's creations on its row, SQLite has one writer.
		if s.db.Dialect == Postgres {
			if _, err := q.ExecContext(ctx, `SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE`, d.AccountID); err != nil {
				return err
			}
		}
		var n int
		if err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM inbound_routes WHERE account_id = $1`, d.AccountID).Scan(&n); err != nil {
			return err
		}
		if n >= max {
			return apperr.Errorf(apperr.Unprocessable, "An account may have at most %d routes; delete one first.", max)
		}
		_, err := q.ExecContext(ctx, `INSERT INTO inbound_routes (`+inboundRouteCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			d.ID, d.AccountID, d.Priority, d.Description, d.Expression, actionsJSON(d.Actions), ms(d.CreatedAt), routeFormat(d.Format))
		return err
	})
	if _, ok := apperr.As(err); ok {
		return d, err
	}
	return d, notFound(err, "route")
}

// Route implements inboundroute.Store.
func (s InboundRoutes) Route(ctx context.Context, id string) (inboundroute.Definition, error) {
	d, err := scanInboundRoute(s.db.rd.QueryRowContext(ctx, `SELECT `+inboundRouteCols+` FROM inbound_routes WHERE id = $1`, id))
	return d, notFound(err, "route")
}

// ListRoutes implements inboundroute.Store.
func (s InboundRoutes) ListRoutes(ctx context.Context, accountID int64, offset, limit int) ([]inboundroute.Definition, int, error) {
	var total int
	if err := s.db.rd.QueryRowContext(ctx, `SELECT COUNT(*) FROM inbound_routes WHERE account_id = $1`, accountID).Scan(&total); err != nil {
		return nil, 0, notFound(err, "routes")
	}
	rows, err := s.db.rd.QueryContext(ctx, `SELECT `+inboundRouteCols+` FROM inbound_routes WHERE account_id = $1
		ORDER BY priority, created_at, id LIMIT $2 + 0 OFFSET $3`, accountID, limit, offset)
	if err != nil {
		return nil, 0, notFound(err, "routes")
	}
	defer rows.Close()
	out := []inboundroute.Definition{}
	for rows.Next() {
		d, err := scanInboundRoute(rows)
		if err != nil {
			return nil, 0, notFound(err, "routes")
		}
		out = append(out, d)
	}
	return out, total, notFound(rows.Err(), "routes")
}

// UpdateRoute implements inboundroute.Store.
func (s InboundRoutes) UpdateRoute(ctx context.Context, d inboundroute.Definition) error {
	return exec1(ctx, s.db.w, "route", `UPDATE inbound_routes SET priority = $3, description = $4, expression = $5, actions = $6,
		format = $7 WHERE id = $1 AND account_id = $2`, d.ID, d.AccountID, d.Priority, d.Description, d.Expression, actionsJSON(d.Actions),
		routeFormat(d.Format))
}

// DeleteRoute implements inboundroute.Store.
func (s InboundRoutes) DeleteRoute(ctx context.Context, accountID int64, id string) error {
	return exec1(ctx, s.db.w, "route", `DELETE FROM inbound_routes WHERE id = $1 AND account_id = $2`, id, accountID)
}
