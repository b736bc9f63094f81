package store

import (
	"context"
	"errors"
	"fmt"
	"os"
)

// BackupTo writes a consistent copy of a SQLite database to path with
// VACUUM INTO: one read transaction, so `serve` processes keep reading and
// writing meanwhile (WAL mode), and the copy is compact and complete
// without its WAL. path must not exist. PostgreSQL has pg_dump for this.
func (db *DB) BackupTo(ctx context.Context, path string) error {
	if db.Dialect != SQLite {
		return errors.New("backup copies a SQLite database; for PostgreSQL use pg_dump")
	}
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("backup: %s exists; choose a new file", path)
	}
	if _, err := db.w.ExecContext(ctx, `VACUUM INTO $1`, path); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	return nil
}
