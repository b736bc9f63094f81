package store

import (
	"context"
	"database/sql"
	"errors"
	"sync/atomic"
	"time"
)

// callTimeoutKey marks a context whose database calls are bounded.
type callTimeoutKey struct{}

// callBudget is a marked context's bound, and whether one of its calls
// ran out of it.
type callBudget struct {
	d       time.Duration
	expired atomic.Bool
}

// WithCallTimeout marks ctx so that every database call made with it gives
// up after d: the wait for a connection, a statement, a whole transaction
// with its statements. Once one call has run out of time, later calls with
// ctx give up at once: a request (a context marked per request) must answer
// 503 after one timeout, not after one per call it would go on to make. A
// request must not hang on a database that stopped answering; background
// loops, migrations and copies are not marked, as their calls may rightly
// take longer. d <= 0 leaves ctx unmarked.
func WithCallTimeout(ctx context.Context, d time.Duration) context.Context {
	if d <= 0 {
		return ctx
	}
	return context.WithValue(ctx, callTimeoutKey{}, &callBudget{d: d})
}

// bound returns ctx bounded by its mark (unchanged when unmarked), and the
// function that releases the bound once the call is over.
func bound(ctx context.Context) (context.Context, context.CancelFunc) {
	b, ok := ctx.Value(callTimeoutKey{}).(*callBudget)
	if !ok {
		return ctx, func() {}
	}
	if b.expired.Load() {
		return context.WithDeadline(ctx, time.Now())
	}
	return context.WithTimeout(ctx, b.d)
}

// boundOpen is bound for calls whose results outlive the call (rows, a
// row read later): nothing here sees them end, so the bound is released by
// its own timer, or sooner with the request's context it derives from.
func boundOpen(ctx context.Context) context.Context {
	ctx, cancel := bound(ctx)
	_ = cancel // released by its timer, at most the timeout later
	return ctx
}

// note records that a call made with bctx, derived by bound from ctx, ran
// out of its time: err is the call's error.
func note(ctx, bctx context.Context, err error) {
	if err == nil || ctx.Err() != nil {
		return // no error, or not the bound's: the caller's own deadline or cancellation
	}
	// A statement in a transaction runs under its own context with the
	// bound's deadline, which may fire a moment before bctx's timer does:
	// the deadline having passed is what counts.
	if dl, ok := bctx.Deadline(); !errors.Is(bctx.Err(), context.DeadlineExceeded) && (!ok || time.Now().Before(dl)) {
		return
	}
	if b, ok := ctx.Value(callTimeoutKey{}).(*callBudget); ok {
		b.expired.Store(true)
	}
}

// pool is a connection pool whose calls honour WithCallTimeout.
type pool struct{ *sql.DB }

var _ Querier = pool{}

// ExecContext implements Querier.
func (p pool) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	bctx, cancel := bound(ctx)
	defer cancel()
	res, err := p.DB.ExecContext(bctx, query, args...)
	note(ctx, bctx, err)
	return res, err
}

// QueryContext implements Querier.
func (p pool) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	bctx := boundOpen(ctx)
	rows, err := p.DB.QueryContext(bctx, query, args...)
	note(ctx, bctx, err)
	return rows, err
}

// QueryRowContext implements Querier.
func (p pool) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	bctx := boundOpen(ctx)
	row := p.DB.QueryRowContext(bctx, query, args...)
	note(ctx, bctx, row.Err()) // the statement has run; only scanning is left
	return row
}

// Conn bounds the wait for a connection; the caller bounds its use.
func (p pool) Conn(ctx context.Context) (*sql.Conn, error) {
	bctx, cancel := bound(ctx)
	defer cancel()
	c, err := p.DB.Conn(bctx)
	note(ctx, bctx, err)
	return c, err
}

// PrepareContext bounds preparing; the statement's calls bound themselves.
func (p pool) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	bctx, cancel := bound(ctx)
	defer cancel()
	st, err := p.DB.PrepareContext(bctx, query)
	note(ctx, bctx, err)
	return st, err
}

// boundTx is a transaction begun under a bound: its statements share the
// transaction's deadline. They must: when the deadline passes,
// database/sql's rollback waits for the statement in flight, which on a
// frozen connection would wait for ever under its own unbounded context.
type boundTx struct {
	*sql.Tx
	deadline time.Time
}

// ExecContext implements Querier.
func (t boundTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	ctx, cancel := context.WithDeadline(ctx, t.deadline)
	defer cancel()
	return t.Tx.ExecContext(ctx, query, args...)
}

// QueryContext implements Querier.
func (t boundTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return t.Tx.QueryContext(t.within(ctx), query, args...)
}

// QueryRowContext implements Querier.
func (t boundTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return t.Tx.QueryRowContext(t.within(ctx), query, args...)
}

// within is ctx ending at the transaction's deadline; released by its
// timer, like boundOpen.
func (t boundTx) within(ctx context.Context) context.Context {
	ctx, cancel := context.WithDeadline(ctx, t.deadline)
	_ = cancel // released by its timer, at most the deadline later
	return ctx
}

// boundFor bounds a call on q's prepared statement as a call on q would
// be: statements run outside q's own methods.
func boundFor(ctx context.Context, q Querier) context.Context {
	switch q := q.(type) {
	case boundTx:
		return q.within(ctx)
	case pool:
		return boundOpen(ctx)
	}
	return ctx
}
