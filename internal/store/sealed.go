package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/postline/postline/internal/secret"
)

// SealedColumn is a column whose non-empty values are sealed with the
// secret key (secret.Box), in a table whose primary key is id.
type SealedColumn struct {
	Table, Column string
	// Mixed is set for a column that may still hold values written in
	// clear before it was sealed: only values in the sealed format count.
	Mixed bool
}

// where selects the column's sealed values.
func (c SealedColumn) where() string {
	if c.Mixed {
		return c.Column + " LIKE 'v1:%'"
	}
	return c.Column + " <> ''"
}

// SealedColumns lists every sealed column. Rotation re-seals exactly
// these, and the fingerprint check of an old database opens one value of
// each; a test finds every sealed value in a populated database and fails
// on a column missing here, so a new secret cannot be forgotten.
var SealedColumns = []SealedColumn{
	{"domains", "dkim_key", false},
	{"domains", "dkim_ed25519_key", false},
	{"domains", "smtp_password", false},
	{"webhooks", "secret", false},
	{"accounts", "webhook_signing_key", false},
	// Attachment options carry the ZIP password until the job that needs
	// it has run; earlier versions stored them in clear.
	{"sends", "options", true},
}

// FirstUnreadable looks at one sealed value of each column and returns the
// "table.column" of the first that box cannot open ("" when all open or
// there are none); with a nil box, the first column that has a value. It
// tells a database sealed under another key before any fingerprint was
// recorded.
func FirstUnreadable(ctx context.Context, db *DB, box *secret.Box) (string, error) {
	for _, c := range SealedColumns {
		var v string
		err := db.r.QueryRowContext(ctx, fmt.Sprintf(`SELECT %s FROM %s WHERE %s ORDER BY id LIMIT 1`,
			c.Column, c.Table, c.where())).Scan(&v)
		if err == sql.ErrNoRows {
			continue
		}
		if err != nil {
			return "", err
		}
		if box == nil {
			return c.Table + "." + c.Column, nil
		}
		if _, err := box.Open(v); err != nil {
			return c.Table + "." + c.Column, nil
		}
	}
	return "", nil
}

// Reseal opens every sealed value with from and seals it again with to,
// and sets the fingerprint to fingerprint, all in one transaction: either
// everything is under the new key or nothing changed. It returns how many
// values were re-sealed. A value that from cannot open stops it.
func Reseal(ctx context.Context, db *DB, from, to *secret.Box, fingerprintName, fingerprint string) (int, error) {
	n := 0
	err := db.InTx(ctx, func(q Querier) error {
		for _, c := range SealedColumns {
			k, err := resealColumn(ctx, q, c, from, to)
			if err != nil {
				return err
			}
			n += k
		}
		return Meta{db: db}.set(ctx, q, fingerprintName, fingerprint)
	})
	return n, err
}

func resealColumn(ctx context.Context, q Querier, c SealedColumn, from, to *secret.Box) (int, error) {
	type row struct {
		id    int64
		value string
	}
	rows, err := q.QueryContext(ctx, fmt.Sprintf(`SELECT id, %s FROM %s WHERE %s`, c.Column, c.Table, c.where()))
	if err != nil {
		return 0, err
	}
	var all []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.id, &r.value); err != nil {
			rows.Close()
			return 0, err
		}
		all = append(all, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	for _, r := range all {
		plain, err := from.Open(r.value)
		if err != nil {
			return 0, fmt.Errorf("%s.%s of row %d: %w", c.Table, c.Column, r.id, err)
		}
		if _, err := q.ExecContext(ctx, fmt.Sprintf(`UPDATE %s SET %s = $1 WHERE id = $2`, c.Table, c.Column),
			to.Seal(plain), r.id); err != nil {
			return 0, err
		}
	}
	return len(all), nil
}
