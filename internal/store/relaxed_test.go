package store

import (
	"context"
	"testing"

	"os"
)

// The rate counters' pool commits without waiting for the WAL flush, and
// reaches the same schema as the main pool.
func TestRelaxedPool(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openTestPostgres(t)
	var sync, relaxed, main, schema string
	if err := db.relaxed.QueryRowContext(ctx, `SELECT current_setting('synchronous_commit'), current_schema()`).Scan(&relaxed, &schema); err != nil {
		t.Fatal(err)
	}
	if err := db.w.QueryRowContext(ctx, `SELECT current_setting('synchronous_commit'), current_schema()`).Scan(&sync, &main); err != nil {
		t.Fatal(err)
	}
	if relaxed != "off" || sync != "on" || schema != main {
		t.Errorf("relaxed pool: synchronous_commit %q in %q; main pool %q in %q", relaxed, schema, sync, main)
	}
}

// openTestPostgres opens the PostgreSQL test server's default schema, or
// skips the test without one.
func openTestPostgres(t *testing.T) *DB {
	t.Helper()
	url := os.Getenv("POSTLINE_TEST_DATABASE_URL") // testutil imports store: read it here
	if url == "" {
		t.Skip("POSTLINE_TEST_DATABASE_URL not set")
	}
	db, err := Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
