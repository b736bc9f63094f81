package store

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
)

// Meta holds named facts about the installation (the meta table).
type Meta struct{ db *DB }

// NewMeta returns the meta store.
func NewMeta(db *DB) Meta { return Meta{db: db} }

// Get returns the value stored under name; ok is false when there is none.
func (m Meta) Get(ctx context.Context, name string) (value string, ok bool, err error) {
	err = m.db.rd.QueryRowContext(ctx, `SELECT value FROM meta WHERE name = $1`, name).Scan(&value)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	return value, err == nil, err
}

// SetIfAbsent stores value under name unless a value is there already,
// and returns the value that is stored afterwards: the first writer wins
// when processes race.
func (m Meta) SetIfAbsent(ctx context.Context, name, value string) (string, error) {
	if _, err := m.db.w.ExecContext(ctx, `INSERT INTO meta (name, value) VALUES ($1, $2)
		ON CONFLICT (name) DO NOTHING`, name, value); err != nil {
		return "", err
	}
	v, _, err := m.Get(ctx, name)
	return v, err
}

// Bump adds one to the counter stored under name (0 when absent) and
// returns the new value.
func (m Meta) Bump(ctx context.Context, name string) (int64, error) {
	return m.bump(ctx, m.db.w, name)
}

// MetaSuppressionsRemoved counts removals of suppressions (one by one or
// with their domain): processes reload their in-memory copies when it moves.
const MetaSuppressionsRemoved = "suppressions-removed"

func (m Meta) bump(ctx context.Context, q Querier, name string) (int64, error) {
	var v string
	err := q.QueryRowContext(ctx, `INSERT INTO meta (name, value) VALUES ($1, '1')
		ON CONFLICT (name) DO UPDATE SET value = CAST(CAST(meta.value AS BIGINT) + 1 AS TEXT)
		RETURNING value`, name).Scan(&v)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(v, 10, 64)
}

// Counter reads a counter that Bump maintains (0 when absent).
func (m Meta) Counter(ctx context.Context, name string) (int64, error) {
	var v string
	err := m.db.rd.QueryRowContext(ctx, `SELECT value FROM meta WHERE name = $1`, name).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(v, 10, 64)
}

// Set stores value under name, replacing any value.
func (m Meta) Set(ctx context.Context, name, value string) error {
	return m.set(ctx, m.db.w, name, value)
}

func (m Meta) set(ctx context.Context, q Querier, name, value string) error {
	_, err := q.ExecContext(ctx, `INSERT INTO meta (name, value) VALUES ($1, $2)
		ON CONFLICT (name) DO UPDATE SET value = excluded.value`, name, value)
	return err
}
