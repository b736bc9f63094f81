package store

import (
	"context"
	"path/filepath"
	"testing"
)

// TestSQLiteCommitsAreSynced: an accepted message must survive a power
// cut, so every commit syncs the WAL (synchronous=FULL, 2), on the writer
// that commits it.
func TestSQLiteCommitsAreSynced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "p.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var mode int
	if err := db.w.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if mode != 2 {
		t.Fatalf("PRAGMA synchronous = %d on the writer, want 2 (FULL)", mode)
	}
}
