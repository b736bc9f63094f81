// Package store is Postline's storage adapter: one implementation of the
// capability Store interfaces over database/sql, for SQLite (modernc, the
// embedded default) and PostgreSQL (pgx). The dialects differ in a handful
// of statements (queue claiming, upserts' conflict targets, notifications);
// those branch on DB.Dialect, everything else is shared SQL with $N
// placeholders, which both drivers accept. Timestamps are BIGINT Unix
// milliseconds in both dialects so that queries and indexes are identical.
//
// Why one package rather than sqlite/ and postgres/ twins: the two would
// repeat the same queries line for line; the conformance suite in
// storetest still runs every capability against both databases.
package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	neturl "net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"
	_ "modernc.org/sqlite"             // registers "sqlite"

	"github.com/postline/postline/internal/apperr"
)

// Dialect names the database engine.
type Dialect string

// The supported dialects.
const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
)

// DB is an open database. On SQLite writes go through a single connection
// that starts transactions with BEGIN IMMEDIATE, so writers queue in Go
// instead of failing with SQLITE_BUSY, while reads use a pool.
type DB struct {
	Dialect Dialect
	URL     string
	w       pool
	r       pool
	// rd runs reads: on SQLite through prepared statements (preparedPool),
	// on PostgreSQL the pool itself.
	rd Querier
	// relaxed is a small PostgreSQL pool whose commits do not wait for the
	// WAL flush (synchronous_commit off), for writes that may be lost in a
	// crash without harm: the rate-limit counters. nil on SQLite.
	relaxed pool
	// ns tells this schema's event-ordering locks and notifications from
	// those of other schemas in the same PostgreSQL database (advisory locks
	// and NOTIFY channels are database-wide): the schema's oid mod 2^16.
	ns int64
	// stmts are the writer's statements prepared once (SQLite; nil on
	// PostgreSQL, whose driver caches statements per connection itself).
	stmts *stmtCache
	// ids are sends and deliveries ids taken ahead (PostgreSQL).
	ids idReserve
	// supWrites counts this process's suppression writes.
	supWrites suppressionWrites
	// tagRoom remembers which domains have no room for a new tag.
	tagRoom tagRoom
	// notifier sends the event inserts' notifications after their commits
	// (PostgreSQL).
	notifier eventNotifier
}

// Open opens the database named by url ("sqlite:PATH" or "postgres://...").
// It does not migrate; call Migrate.
func Open(ctx context.Context, url string) (*DB, error) {
	switch {
	case strings.HasPrefix(url, "sqlite:"):
		return openSQLite(ctx, strings.TrimPrefix(url, "sqlite:"), url)
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		db, err := sql.Open("pgx", url)
		if err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
		db.SetMaxOpenConns(20)
		db.SetMaxIdleConns(20) // as many idle as open: a steady load opens no new connections
		db.SetConnMaxIdleTime(5 * time.Minute)
		if err := db.PingContext(ctx); err != nil {
			db.Close()
			return nil, fmt.Errorf("store: connect to PostgreSQL: %w", err)
		}
		var ns int64
		if err := db.QueryRowContext(ctx, `SELECT COALESCE((SELECT oid::bigint FROM pg_namespace
			WHERE nspname = current_schema()), 0) % 65536`).Scan(&ns); err != nil {
			db.Close()
			return nil, fmt.Errorf("store: PostgreSQL schema: %w", err)
		}
		relaxed, err := openRelaxed(url)
		if err != nil {
			db.Close()
			return nil, err
		}
		return &DB{Dialect: Postgres, URL: url, w: pool{db}, r: pool{db}, rd: pool{db}, ns: ns, relaxed: pool{relaxed}}, nil
	default:
		return nil, fmt.Errorf("store: unsupported database URL (want sqlite:PATH or postgres://...)")
	}
}

func openSQLite(ctx context.Context, path, url string) (*DB, error) {
	if path == "" {
		return nil, errors.New("store: sqlite: empty path")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	// synchronous(FULL): in WAL mode NORMAL does not sync the log at each
	// commit, so a power cut could lose a message already answered 202;
	// FULL syncs every commit before it returns.
	dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)" +
		"&_pragma=synchronous(FULL)&_pragma=foreign_keys(ON)"
	w, err := sql.Open("sqlite", dsn+"&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	w.SetMaxOpenConns(1)
	r, err := sql.Open("sqlite", dsn+"&_pragma=query_only(ON)")
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("store: %w", err)
	}
	r.SetMaxOpenConns(8)
	// As many idle as open: under a steady load the pool must not close
	// and reopen connections (the default keeps 2 idle).
	r.SetMaxIdleConns(8)
	if err := w.PingContext(ctx); err != nil {
		w.Close()
		r.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	db := &DB{Dialect: SQLite, URL: url, w: pool{w}, r: pool{r}, rd: newPreparedPool(r)}
	db.stmts = newStmtCache(db)
	return db, nil
}

// Close closes the database.
func (db *DB) Close() error {
	db.notifier.wait()
	if p, ok := db.rd.(*preparedPool); ok {
		p.Close()
	}
	err := db.w.Close()
	if db.r.DB != db.w.DB {
		err = errors.Join(err, db.r.Close())
	}
	if db.relaxed.DB != nil {
		err = errors.Join(err, db.relaxed.Close())
	}
	return err
}

// openRelaxed opens the relaxed pool: the same database, with
// synchronous_commit off as a connection parameter.
func openRelaxed(rawURL string) (*sql.DB, error) {
	u, err := neturl.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("store: database URL: %w", err)
	}
	q := u.Query()
	q.Set("synchronous_commit", "off")
	u.RawQuery = q.Encode()
	db, err := sql.Open("pgx", u.String())
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	db.SetMaxOpenConns(4)
	db.SetMaxIdleConns(4)
	db.SetConnMaxIdleTime(5 * time.Minute)
	return db, nil
}

// Ping checks the database answers a query.
func (db *DB) Ping(ctx context.Context) error {
	var one int
	return db.r.QueryRowContext(ctx, "SELECT 1").Scan(&one)
}

// Querier is what both *sql.DB and *sql.Tx offer.
type Querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// InTx runs fn in one write transaction, committed when fn returns nil.
// Capabilities that must commit together (a message, its deliveries and
// their queued events) share one.
func (db *DB) InTx(ctx context.Context, fn func(q Querier) error) error {
	if db.Dialect != Postgres {
		return runTx(ctx, db.w.BeginTx, fn)
	}
	var after []func()
	err := runTx(ctx, db.w.BeginTx, func(q Querier) error { return fn(hookedTx{Querier: q, after: &after}) })
	if err == nil {
		for _, f := range after {
			f()
		}
	}
	return err
}

// InTxUnsynced runs fn as InTx does, but on SQLite its commit does not wait
// for the disk (synchronous=NORMAL for this commit alone): for writes that
// a power cut may take harmlessly because the next synced commit carries
// them to disk and nothing depends on them before it. The queue's claims
// are such writes: a lost claim is a lease that never was, and the
// delivery is claimed again as after an expired lease (its outcome commit
// is synced, and syncs the claim with it). The writer connection is held
// throughout so that no other commit runs while the setting is relaxed.
func (db *DB) InTxUnsynced(ctx context.Context, fn func(q Querier) error) error {
	if db.Dialect != SQLite {
		return db.InTx(ctx, fn)
	}
	conn, err := db.w.Conn(ctx)
	if err != nil {
		return fmt.Errorf("store: writer: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `PRAGMA synchronous = NORMAL`); err != nil {
		return fmt.Errorf("store: relax sync: %w", err)
	}
	defer func() {
		if _, err := conn.ExecContext(context.WithoutCancel(ctx), `PRAGMA synchronous = FULL`); err != nil {
			// Never hand a relaxed connection back: discard it; the pool
			// opens a new one with the DSN's FULL.
			conn.Raw(func(any) error { return driver.ErrBadConn }) //nolint:errcheck
		}
	}()
	return runTx(ctx, conn.BeginTx, fn)
}

func runTx(ctx context.Context, begin func(context.Context, *sql.TxOptions) (*sql.Tx, error), fn func(q Querier) error) (err error) {
	bctx, cancel := bound(ctx)
	defer cancel()
	defer func() { note(ctx, bctx, err) }()
	tx, err := begin(bctx, nil)
	if err != nil {
		return fmt.Errorf("store: begin: %w", err)
	}
	// Rolls back when fn panics (a no-op after Commit): a recovered panic
	// must not leave the transaction, and SQLite's one writer, held.
	defer tx.Rollback() //nolint:errcheck
	var q Querier = tx
	if deadline, ok := bctx.Deadline(); ok && bctx.Value(callTimeoutKey{}) != nil {
		q = boundTx{Tx: tx, deadline: deadline}
	}
	if err := fn(q); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: commit: %w", err)
	}
	return nil
}

// Pools names the connection pools, for their statistics (the writer, the
// readers where they are a pool of their own, PostgreSQL's relaxed pool).
func (db *DB) Pools() map[string]*sql.DB {
	p := map[string]*sql.DB{"writer": db.w.DB}
	if db.r.DB != db.w.DB {
		p["reader"] = db.r.DB
	}
	if db.relaxed.DB != nil {
		p["relaxed"] = db.relaxed.DB
	}
	return p
}

// Writer is the handle for writes outside explicit transactions.
func (db *DB) Writer() Querier { return db.w }

// Reader is the handle for reads.
func (db *DB) Reader() Querier { return db.rd }

// SQL exposes the write handle for migrations and tools.
func (db *DB) SQL() *sql.DB { return db.w.DB }

func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

func nullMS(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := fromMS(v.Int64)
	return &t
}

// isUnique reports a unique-constraint violation in either dialect.
func isUnique(err error) bool {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return pg.Code == "23505"
	}
	return err != nil && strings.Contains(err.Error(), "UNIQUE constraint failed")
}

// notFound maps sql.ErrNoRows to apperr.NotFound, and wraps other errors.
func notFound(err error, what string) error {
	if errors.Is(err, sql.ErrNoRows) {
		return apperr.Errorf(apperr.NotFound, "%s not found", what)
	}
	if err != nil {
		return fmt.Errorf("store: %s: %w", what, err)
	}
	return nil
}
