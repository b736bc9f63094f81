package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// copyBatch is how many rows one COPY carries.
const copyBatch = 5000

// TableCount is one table's rows in the source and, after the copy, in
// the target.
type TableCount struct {
	Table          string
	Source, Target int64
}

// CopyProgress hears of every batch copied: the table, the rows copied of
// it so far and its total.
type CopyProgress func(table string, done, total int64)

// Tables lists the SQLite database's own tables (not SQLite's, not the
// migration tool's, not the full-text search tables that only SQLite has:
// PostgreSQL searches with trigram indexes, not delivery_members: the
// processes delivering from the source are not the destination's),
// parents before the tables that reference them.
func (db *DB) Tables(ctx context.Context) ([]string, error) {
	if db.Dialect != SQLite {
		return nil, errors.New("store: Tables reads a SQLite schema")
	}
	rows, err := db.r.QueryContext(ctx, `SELECT name FROM pragma_table_list WHERE schema = 'main' AND type = 'table'
		AND name NOT LIKE 'sqlite_%' AND name NOT IN ('goose_db_version', 'delivery_members') ORDER BY name`)
	if err != nil {
		return nil, err
	}
	var names []string
	for rows.Next() {
		var n string
		rows.Scan(&n)
		names = append(names, n)
	}
	rows.Close()
	parents := map[string][]string{}
	for _, n := range names {
		fk, err := db.r.QueryContext(ctx, `SELECT "table" FROM pragma_foreign_key_list($1)`, n)
		if err != nil {
			return nil, err
		}
		for fk.Next() {
			var p string
			fk.Scan(&p)
			if p != n {
				parents[n] = append(parents[n], p)
			}
		}
		fk.Close()
	}
	var order []string
	done := map[string]bool{}
	var visit func(string)
	visit = func(n string) {
		if done[n] {
			return
		}
		done[n] = true
		for _, p := range parents[n] {
			visit(p)
		}
		order = append(order, n)
	}
	for _, n := range names {
		visit(n)
	}
	return order, nil
}

// CopyTo copies every table of this SQLite database into dst, a migrated
// PostgreSQL database with no rows, keeping ids (the log's, the queue's)
// and sealed values as they are, then sets dst's id sequences past the
// copied ids and returns the row counts of both sides per table. Triggers
// of dst are off during each table's copy: the counts they keep are copied
// as the source has them.
func (db *DB) CopyTo(ctx context.Context, dst *DB, progress CopyProgress) ([]TableCount, error) {
	if db.Dialect != SQLite || dst.Dialect != Postgres {
		return nil, errors.New("store copy: copies a SQLite database into PostgreSQL")
	}
	tables, err := db.Tables(ctx)
	if err != nil {
		return nil, err
	}
	for _, t := range tables {
		var n int64
		if err := dst.w.QueryRowContext(ctx, `SELECT count(*) FROM `+pgIdent(t)).Scan(&n); err != nil {
			return nil, fmt.Errorf("store copy: target table %s: %w", t, err)
		}
		if n > 0 {
			return nil, fmt.Errorf("store copy: the target is not empty (%s has %d rows); copy into a new database", t, n)
		}
	}
	var counts []TableCount
	for _, t := range tables {
		c, err := db.copyTable(ctx, dst, t, progress)
		if err != nil {
			return counts, fmt.Errorf("store copy: %s: %w", t, err)
		}
		counts = append(counts, c)
	}
	return counts, nil
}

func pgIdent(name string) string { return pgx.Identifier{name}.Sanitize() }

func (db *DB) copyTable(ctx context.Context, dst *DB, table string, progress CopyProgress) (TableCount, error) {
	c := TableCount{Table: table}
	if err := db.r.QueryRowContext(ctx, `SELECT count(*) FROM "`+table+`"`).Scan(&c.Source); err != nil {
		return c, err
	}
	cols, empties, err := db.columns(ctx, table)
	if err != nil {
		return c, err
	}
	conn, err := dst.w.Conn(ctx)
	if err != nil {
		return c, err
	}
	defer conn.Close()
	err = conn.Raw(func(dc any) error {
		pc := dc.(*stdlib.Conn).Conn()
		tx, err := pc.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx) //nolint:errcheck // after Commit, a no-op
		if _, err := tx.Exec(ctx, `ALTER TABLE `+pgIdent(table)+` DISABLE TRIGGER USER`); err != nil {
			return err
		}
		// One read of the whole table (a consistent snapshot of it),
		// copied in batches as it streams.
		quoted := make([]string, len(cols))
		for i, c := range cols {
			quoted[i] = `"` + c + `"`
		}
		rows, err := db.r.QueryContext(ctx, `SELECT `+strings.Join(quoted, ", ")+` FROM "`+table+`"`)
		if err != nil {
			return err
		}
		defer rows.Close()
		var done int64
		batch := make([][]any, 0, copyBatch)
		flush := func() error {
			if len(batch) == 0 {
				return nil
			}
			if _, err := tx.CopyFrom(ctx, pgx.Identifier{table}, cols, pgx.CopyFromRows(batch)); err != nil {
				return err
			}
			done += int64(len(batch))
			batch = batch[:0]
			if progress != nil {
				progress(table, done, c.Source)
			}
			return nil
		}
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(vals))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				return err
			}
			for i, v := range vals {
				// SQLite's driver reads an empty BLOB as nil; a NOT NULL
				// column must get the empty value, not NULL.
				if b, isBytes := v.([]byte); (v == nil || (isBytes && b == nil)) && empties[i] != nil {
					vals[i] = empties[i]
				}
			}
			if batch = append(batch, vals); len(batch) == copyBatch {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if err := flush(); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `ALTER TABLE `+pgIdent(table)+` ENABLE TRIGGER USER`); err != nil {
			return err
		}
		if slices.Contains(cols, "id") {
			// Only serial ids have a sequence; others (inbound_routes'
			// text ids) are not numbers to take a maximum of.
			var seq *string
			if err := tx.QueryRow(ctx, `SELECT pg_get_serial_sequence($1, 'id')`, table).Scan(&seq); err != nil {
				return err
			}
			if seq != nil {
				if _, err := tx.Exec(ctx, `SELECT setval($1, COALESCE((SELECT max(id) FROM `+pgIdent(table)+`), 0) + 1, false)`,
					*seq); err != nil {
					return err
				}
			}
		}
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM `+pgIdent(table)).Scan(&c.Target); err != nil {
			return err
		}
		return tx.Commit(ctx)
	})
	return c, err
}

// columns returns a table's columns and, for NOT NULL ones, the empty
// value of their type (nil for the others).
func (db *DB) columns(ctx context.Context, table string) ([]string, []any, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT name, type, "notnull" FROM pragma_table_info($1) ORDER BY cid`, table)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var cols []string
	var empties []any
	for rows.Next() {
		var n, typ string
		var notNull bool
		if err := rows.Scan(&n, &typ, &notNull); err != nil {
			return nil, nil, err
		}
		var empty any
		if notNull {
			switch strings.ToUpper(typ) {
			case "BLOB":
				empty = []byte{}
			case "TEXT":
				empty = ""
			}
		}
		cols, empties = append(cols, n), append(empties, empty)
	}
	return cols, empties, rows.Err()
}
