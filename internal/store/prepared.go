package store

import (
	"context"
	"database/sql"
	"sync"
)

// maxPrepared bounds the statements a preparedPool keeps: query texts that
// vary with their arguments (IN lists of changing length) must not grow it
// without end; past the bound they run unprepared, as before.
const maxPrepared = 256

// Every LIMIT here is written "LIMIT $n + 0", never "LIMIT $n": SQLite
// (3.47 on) plans with a bare LIMIT parameter's value, so binding it
// expires the statement and the next step parses and plans it again. A
// claim of the queue took 41 µs that way against 6 µs, and log pages,
// webhook and inbound-post claims paid the same on every call
// (TestLimitDoesNotReprepare).

// preparedPool runs queries on a SQLite pool through statements prepared
// once per query text (database/sql then prepares each on a connection the
// first time it runs there and keeps it). Without it SQLite parses and
// plans the SQL text on every call: a third of the CPU of a cached
// validation request went there. PostgreSQL needs none of this: pgx keeps
// a prepared-statement cache per connection itself.
type preparedPool struct {
	db    *sql.DB
	mu    sync.RWMutex
	stmts map[string]*sql.Stmt
}

var _ Querier = (*preparedPool)(nil)

func newPreparedPool(db *sql.DB) *preparedPool {
	return &preparedPool{db: db, stmts: map[string]*sql.Stmt{}}
}

// stmt returns query's statement, preparing it on first use; nil when the
// pool is full or preparing failed (the caller then runs the text).
func (p *preparedPool) stmt(ctx context.Context, query string) *sql.Stmt {
	p.mu.RLock()
	st, ok := p.stmts[query]
	full := len(p.stmts) >= maxPrepared
	p.mu.RUnlock()
	if ok || full {
		return st
	}
	st, err := p.db.PrepareContext(ctx, query)
	if err != nil {
		return nil // the unprepared call reports the error
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if old, ok := p.stmts[query]; ok { // another goroutine was first
		st.Close()
		return old
	}
	p.stmts[query] = st
	return st
}

// ExecContext implements Querier.
func (p *preparedPool) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	bctx, cancel := bound(ctx)
	defer cancel()
	var res sql.Result
	var err error
	if st := p.stmt(bctx, query); st != nil {
		res, err = st.ExecContext(bctx, args...)
	} else {
		res, err = p.db.ExecContext(bctx, query, args...)
	}
	note(ctx, bctx, err)
	return res, err
}

// QueryContext implements Querier.
func (p *preparedPool) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	bctx := boundOpen(ctx)
	var rows *sql.Rows
	var err error
	if st := p.stmt(bctx, query); st != nil {
		rows, err = st.QueryContext(bctx, args...)
	} else {
		rows, err = p.db.QueryContext(bctx, query, args...)
	}
	note(ctx, bctx, err)
	return rows, err
}

// QueryRowContext implements Querier.
func (p *preparedPool) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	bctx := boundOpen(ctx)
	var row *sql.Row
	if st := p.stmt(bctx, query); st != nil {
		row = st.QueryRowContext(bctx, args...)
	} else {
		row = p.db.QueryRowContext(bctx, query, args...)
	}
	note(ctx, bctx, row.Err())
	return row
}

// Close closes the statements (not the pool).
func (p *preparedPool) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for q, st := range p.stmts {
		st.Close()
		delete(p.stmts, q)
	}
	return nil
}
