// Package testutil has helpers shared by tests: databases in both dialects.
package testutil

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/postline/postline/internal/store"
)

// PostgresURL is the PostgreSQL server for tests, from
// POSTLINE_TEST_DATABASE_URL; empty means PostgreSQL tests are skipped.
func PostgresURL() string { return os.Getenv("POSTLINE_TEST_DATABASE_URL") }

// Dialects lists the dialects to test: SQLite always, PostgreSQL when
// configured.
func Dialects() []store.Dialect {
	if PostgresURL() != "" {
		return []store.Dialect{store.SQLite, store.Postgres}
	}
	return []store.Dialect{store.SQLite}
}

// DatabaseURL returns a fresh, empty database URL of the dialect: a SQLite
// file in t.TempDir(), or a new PostgreSQL schema dropped at cleanup.
func DatabaseURL(t testing.TB, d store.Dialect) string {
	t.Helper()
	if d == store.SQLite {
		return "sqlite:" + filepath.Join(t.TempDir(), "postline.db")
	}
	base := PostgresURL()
	if base == "" {
		t.Skip("POSTLINE_TEST_DATABASE_URL not set")
	}
	b := make([]byte, 6)
	rand.Read(b)
	schema := "t_" + hex.EncodeToString(b)
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(`CREATE SCHEMA ` + schema); err != nil {
		admin.Close()
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		admin.Exec(`DROP SCHEMA ` + schema + ` CASCADE`)
		admin.Close()
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// OpenDB opens and migrates a fresh database of the dialect.
func OpenDB(t testing.TB, d store.Dialect) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), DatabaseURL(t, d))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return db
}
