package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// InPipeline runs fn's writes as one transaction, like InTx, but on
// PostgreSQL in one round trip: fn's ExecContext calls are queued and sent
// together when fn returns, with a single Sync, so the server runs them as
// one implicit transaction (all commit, synced like any commit of the
// writer pool, or none). An intake group's dozen statements used to be a
// dozen round trips, each a wake-up of the server and of the client; the
// round trips, not the statements, were most of PostgreSQL's CPU per
// accepted message (BENCHMARKS.md).
//
// fn may only write: results are not known until the batch ran, so
// ExecContext returns a result that knows no counts, and reads are
// refused (QueryContext errs; QueryRowContext panics, as *sql.Row cannot
// carry an error built outside database/sql). Read before, on the pool.
// On SQLite, InPipeline is InTx.
func (db *DB) InPipeline(ctx context.Context, fn func(q Querier) error) (err error) {
	if db.Dialect != Postgres {
		return db.InTx(ctx, fn)
	}
	p := &pipeline{}
	if err = fn(p); err != nil {
		return err
	}
	if p.batch.Len() == 0 {
		return nil
	}
	bctx, cancel := bound(ctx)
	defer cancel()
	defer func() { note(ctx, bctx, err) }()
	conn, err := db.w.Conn(bctx)
	if err != nil {
		return fmt.Errorf("store: writer: %w", err)
	}
	defer conn.Close()
	err = conn.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("store: pipeline needs a pgx connection, not %T", dc)
		}
		br := sc.Conn().SendBatch(bctx, &p.batch)
		for i := 0; i < p.batch.Len(); i++ {
			if _, err := br.Exec(); err != nil {
				br.Close()
				return fmt.Errorf("store: pipelined statement %d of %d: %w", i+1, p.batch.Len(), err)
			}
		}
		if err := br.Close(); err != nil {
			return fmt.Errorf("store: commit: %w", err)
		}
		return nil
	})
	if err == nil {
		for _, f := range p.after {
			f()
		}
	}
	return err
}

// pipeline is the Querier InPipeline hands to fn.
type pipeline struct {
	batch pgx.Batch
	after []func() // run once the batch committed
}

func (p *pipeline) afterCommit(f func()) { p.after = append(p.after, f) }

var errPipelineRead = errors.New("store: a pipelined transaction cannot read; read before it")

func (p *pipeline) ExecContext(_ context.Context, query string, args ...any) (sql.Result, error) {
	p.batch.Queue(query, args...)
	return pipelinedResult{}, nil
}

func (p *pipeline) QueryContext(context.Context, string, ...any) (*sql.Rows, error) {
	return nil, errPipelineRead
}

func (p *pipeline) QueryRowContext(context.Context, string, ...any) *sql.Row {
	panic(errPipelineRead)
}

// pipelinedResult is the result of a queued statement: not run yet.
type pipelinedResult struct{}

func (pipelinedResult) LastInsertId() (int64, error) { return 0, errPipelineRead }
func (pipelinedResult) RowsAffected() (int64, error) { return 0, errPipelineRead }
