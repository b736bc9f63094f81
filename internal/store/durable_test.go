package store

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
)

// TestSQLiteCommitsAreSynced: an accepted message must survive a power
// cut, so every commit syncs the WAL (synchronous=FULL, 2), on the writer
// that commits it.
func TestSQLiteCommitsAreSynced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openTempSQLite(t)
	var mode int
	if err := db.w.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if mode != 2 {
		t.Fatalf("PRAGMA synchronous = %d on the writer, want 2 (FULL)", mode)
	}
}

// TestUnsyncedCommitLeavesTheWriterSynced: a claim commits without a sync
// (InTxUnsynced), and the next commit on the writer, an intake, must sync
// again, whether the unsynced transaction committed, failed or panicked.
func TestUnsyncedCommitLeavesTheWriterSynced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openTempSQLite(t)
	mode := func(q Querier) int {
		var m int
		if err := q.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	var inside int
	if err := db.InTxUnsynced(ctx, func(q Querier) error { inside = mode(q); return nil }); err != nil {
		t.Fatal(err)
	}
	if inside != 1 {
		t.Errorf("PRAGMA synchronous = %d inside the unsynced transaction, want 1 (NORMAL)", inside)
	}
	boom := errors.New("boom")
	if err := db.InTxUnsynced(ctx, func(Querier) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("a failing unsynced transaction returned %v", err)
	}
	func() {
		defer func() { recover() }()                                //nolint:errcheck // the panic is the test's own
		db.InTxUnsynced(ctx, func(Querier) error { panic("boom") }) //nolint:errcheck
	}()
	for i := 0; i < 3; i++ { // the writer is one connection: every commit after uses it
		if err := db.InTx(ctx, func(q Querier) error {
			if m := mode(q); m != 2 {
				t.Errorf("PRAGMA synchronous = %d in a transaction after unsynced ones, want 2 (FULL)", m)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// openTempSQLite opens a new SQLite database in the test's directory,
// closed at its end.
func openTempSQLite(t *testing.T) *DB {
	t.Helper()
	db, err := Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "p.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
