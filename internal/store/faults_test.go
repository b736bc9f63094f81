package store_test

import (
	"context"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/testutil"
)

// openThroughProxy opens a fresh PostgreSQL schema through a proxy the
// test can pause and cut.
func openThroughProxy(t *testing.T) (*store.DB, *testutil.TCPProxy) {
	t.Helper()
	u, err := url.Parse(testutil.DatabaseURL(t, store.Postgres))
	if err != nil {
		t.Fatal(err)
	}
	p := testutil.NewTCPProxy(t, u.Host)
	u.Host = p.Addr()
	db, err := store.Open(context.Background(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return db, p
}

// storeCalls are one call of each kind a request makes.
func storeCalls(db *store.DB) map[string]func(ctx context.Context) error {
	m := store.NewMeta(db)
	return map[string]func(ctx context.Context) error{
		"write": func(ctx context.Context) error { return m.Set(ctx, "k", "v") },
		"read":  func(ctx context.Context) error { _, _, err := m.Get(ctx, "k"); return err },
		"transaction": func(ctx context.Context) error {
			return db.InTx(ctx, func(q store.Querier) error {
				_, err := q.ExecContext(ctx, `UPDATE meta SET value = 'w' WHERE name = 'k'`)
				return err
			})
		},
		"pipeline": func(ctx context.Context) error {
			return db.InPipeline(ctx, func(q store.Querier) error {
				_, err := q.ExecContext(ctx, `UPDATE meta SET value = 'p' WHERE name = 'k'`)
				return err
			})
		},
		"probe": db.ProbeWrite,
	}
}

// PostgreSQL frozen (no byte moves) or down (connections cut and refused):
// every kind of call from a request gives up within its bound with an
// error that answers 503, and works again once the database is back,
// without reopening anything.
func TestPostgresFrozenAndDown(t *testing.T) {
	t.Parallel()
	if testutil.PostgresURL() == "" {
		t.Skip("POSTLINE_TEST_DATABASE_URL not set")
	}
	db, proxy := openThroughProxy(t)
	const limit = 300 * time.Millisecond
	// Each call is a request of its own: a request's calls after one
	// timed out give up at once.
	request := func() context.Context { return store.WithCallTimeout(context.Background(), limit) }
	calls := storeCalls(db)
	for name, call := range calls {
		if err := call(request()); err != nil {
			t.Fatalf("%s before any fault: %v", name, err)
		}
	}
	for _, fault := range []struct {
		name   string
		inject func()
	}{{"frozen", proxy.Pause}, {"down", proxy.Cut}} {
		fault.inject()
		for name, call := range calls {
			start := time.Now()
			err := call(request())
			took := time.Since(start)
			e, ok := apperr.As(apperr.Classify(err))
			if !ok || e.Code != apperr.Unavailable || took > limit+time.Second {
				t.Errorf("%s: %s: %v after %s; want unavailable within %s", fault.name, name, err, took, limit)
			}
		}
		proxy.Resume()
		for name, call := range calls {
			if err := call(request()); err != nil {
				t.Errorf("%s, then back: %s: %v", fault.name, name, err)
			}
		}
	}
}

// SQLite on a disk that fills up: writes and the readiness probe fail with
// an error that answers 507 and names the cause; reads go on; freeing the
// space heals it without reopening.
func TestSQLiteDiskFull(t *testing.T) {
	t.Parallel()
	dir := testutil.SmallDisk(t, 16<<20)
	ctx := context.Background()
	db, err := store.Open(ctx, "sqlite:"+filepath.Join(dir, "postline.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	m := store.NewMeta(db)
	if err := db.ProbeWrite(ctx); err != nil {
		t.Fatal(err)
	}
	free := testutil.FillDisk(t, dir)
	// The log may still have room for a few writes; a large one cannot fit.
	big := strings.Repeat("x", 2<<20)
	err = m.Set(ctx, "big", big)
	if e, ok := apperr.As(apperr.Classify(err)); !ok || e.Code != apperr.InsufficientStorage || !strings.Contains(e.Message, "database or disk is full") {
		t.Fatalf("a write on a full disk: %v; want insufficient storage naming the cause", err)
	}
	if e, ok := apperr.As(apperr.Classify(db.ProbeWrite(ctx))); !ok || e.Code != apperr.InsufficientStorage {
		t.Fatalf("the readiness probe on a full disk: %v; want insufficient storage", e)
	}
	if _, _, err := m.Get(ctx, "ready-probe"); err != nil {
		t.Errorf("a read on a full disk: %v", err)
	}
	free()
	if err := m.Set(ctx, "big", big); err != nil {
		t.Fatalf("a write once space is freed: %v", err)
	}
	if err := db.ProbeWrite(ctx); err != nil {
		t.Fatalf("the probe once space is freed: %v", err)
	}
}
