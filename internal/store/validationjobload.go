package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/postline/postline/internal/validation"
)

// jobChunk is how many lines of a list one transaction stores or deletes.
// On SQLite the writer is one connection: a million lines in one
// transaction held it for ~20 s, and every other account's writes waited.
// Between chunks the connection goes back to the pool, which hands it to
// a writer already waiting before the upload's next chunk.
const jobChunk = 5000

// jobRowsPerStatement is how many lines one INSERT stores. SQLite (modernc)
// takes longer per row the longer a VALUES list is (200,000 lines: 1.2 s
// in statements of 50 rows, 5.5 s of 500, 49 s of 5,000); PostgreSQL takes
// the same time for each.
const jobRowsPerStatement = 50

// CreateJob implements validation.JobStore. The job is created loading
// (neither shown nor claimed) once the account's unfinished jobs are
// counted; its lines follow in transactions of jobChunk; the last one
// queues it. An upload that fails half-way is deleted again; one whose
// process died is deleted by DeleteJobsBefore.
func (s ValidationJobs) CreateJob(ctx context.Context, p validation.NewJob, now time.Time) (validation.Job, error) {
	id, err := s.startJob(ctx, p, now)
	if err != nil {
		if errors.Is(err, validation.ErrTooManyJobs) {
			return validation.Job{}, err
		}
		return validation.Job{}, notFound(err, "validation job")
	}
	// A list without other columns (JSON, lines) inserts no extra column:
	// a fourth parameter a row made each chunk's transaction hold SQLite's
	// writer longer, and other accounts' sends waited for it.
	insert, withExtra := `INSERT INTO validation_job_items (job_id, idx, email) VALUES `, len(p.Rows) > 0
	if withExtra {
		insert = `INSERT INTO validation_job_items (job_id, idx, email, extra) VALUES `
	}
	for from := 0; from < len(p.Emails) && err == nil; from += jobChunk {
		rows := make([][]any, 0, jobChunk)
		for i, e := range p.Emails[from:min(from+jobChunk, len(p.Emails))] {
			if !withExtra {
				rows = append(rows, []any{id, from + i, e})
				continue
			}
			var extra any
			if from+i < len(p.Rows) {
				b, jerr := json.Marshal(p.Rows[from+i])
				if jerr != nil {
					err = jerr
					break
				}
				extra = string(b)
			}
			rows = append(rows, []any{id, from + i, e, extra})
		}
		if err != nil {
			break
		}
		err = s.db.InTx(ctx, func(q Querier) error {
			for i := 0; i < len(rows); i += jobRowsPerStatement {
				err := insertValues(ctx, q, insert, rows[i:min(i+jobRowsPerStatement, len(rows))])
				if err != nil {
					return err
				}
			}
			return nil
		})
	}
	var j validation.Job
	if err == nil {
		err = s.db.InTx(ctx, func(q Querier) error {
			if err := exec1(ctx, q, "loading validation job", `UPDATE validation_jobs SET status = 'queued'
				WHERE id = $1 AND status = 'loading'`, id); err != nil {
				return err
			}
			var err error
			j, err = scanJob(q.QueryRowContext(ctx, `SELECT `+jobCols+` FROM validation_jobs WHERE id = $1`, id))
			return err
		})
	}
	if err != nil {
		// Even when the client has gone (ctx cancelled): half a list must
		// not stay behind, counted against the account until it is purged.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if derr := s.deleteJob(cctx, id, len(p.Emails)); derr != nil {
			err = errors.Join(err, derr)
		}
		return validation.Job{}, fmt.Errorf("store: validation job lines: %w", err)
	}
	return j, nil
}

// startJob counts the account's unfinished jobs and inserts the new one,
// loading, in one transaction.
func (s ValidationJobs) startJob(ctx context.Context, p validation.NewJob, now time.Time) (int64, error) {
	var id int64
	err := s.db.InTx(ctx, func(q Querier) error {
		if p.MaxOpen > 0 {
			// The account row's lock serialises creates of one account on
			// PostgreSQL (SQLite has one writer), so the count holds until
			// the insert commits. NO KEY UPDATE leaves rows that reference
			// the account free to be inserted meanwhile.
			if s.db.Dialect == Postgres {
				if _, err := q.ExecContext(ctx, `SELECT 1 FROM accounts WHERE id = $1 FOR NO KEY UPDATE`, p.AccountID); err != nil {
					return err
				}
			}
			var n int
			if err := q.QueryRowContext(ctx, `SELECT count(*) FROM validation_jobs WHERE account_id = $1
				AND (status IN ('queued', 'running') OR (status = 'loading' AND created_at >= $2))`,
				p.AccountID, ms(now.Add(-validation.LoadAbandonedAfter))).Scan(&n); err != nil {
				return err
			}
			if n >= p.MaxOpen {
				return validation.ErrTooManyJobs
			}
		}
		var name any
		if p.Name != "" {
			name = p.Name
			// A job whose process died while storing its lines must not
			// hold its name until it is purged.
			if _, err := q.ExecContext(ctx, `UPDATE validation_jobs SET name = NULL
				WHERE account_id = $1 AND name = $2 AND status = 'loading' AND created_at < $3`,
				p.AccountID, p.Name, ms(now.Add(-validation.LoadAbandonedAfter))); err != nil {
				return err
			}
		}
		columns := ""
		if len(p.Columns) > 0 {
			b, err := json.Marshal(p.Columns)
			if err != nil {
				return err
			}
			columns = string(b)
		}
		err := q.QueryRowContext(ctx, `INSERT INTO validation_jobs (account_id, status, total, created_at, updated_at, check_mailbox, name, columns)
			VALUES ($1, 'loading', $2, $3, $3, $4, $5, $6) RETURNING id`, p.AccountID, len(p.Emails), ms(now), b2i(p.CheckMailbox), name, columns).Scan(&id)
		if isUnique(err) {
			return validation.ErrJobNameTaken
		}
		return err
	})
	return id, err
}

// deleteJob deletes a job's lines in chunks, then the job: one statement
// deleting a million lines (the foreign key's cascade) would hold
// SQLite's writer as long as inserting them did.
func (s ValidationJobs) deleteJob(ctx context.Context, id int64, total int) error {
	for from := 0; from < total; from += jobChunk {
		if _, err := s.db.w.ExecContext(ctx, `DELETE FROM validation_job_items WHERE job_id = $1 AND idx >= $2 AND idx < $3`,
			id, from, from+jobChunk); err != nil {
			return err
		}
	}
	_, err := s.db.w.ExecContext(ctx, `DELETE FROM validation_jobs WHERE id = $1`, id)
	return err
}

// dropPending deletes a cancelled job's lines not yet checked, in chunks
// as deleteJob does, and keeps the checked ones with their results: else
// a million lines uploaded and cancelled at once stayed on disk for the
// week finished jobs are kept, and uploading and cancelling in a loop
// filled it (~90 MB every 5 s on SQLite). It goes on when the client
// hangs up: the job is cancelled already.
func (s ValidationJobs) dropPending(ctx context.Context, j validation.Job) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	for from := 0; from < j.Total; from += jobChunk {
		if _, err := s.db.w.ExecContext(ctx, `DELETE FROM validation_job_items WHERE job_id = $1 AND idx >= $2 AND idx < $3
			AND result IS NULL`, j.ID, from, from+jobChunk); err != nil {
			return notFound(err, "validation job lines")
		}
	}
	return nil
}

// DeleteJobsBefore implements validation.JobStore, a job at a time, each
// in chunks.
func (s ValidationJobs) DeleteJobsBefore(ctx context.Context, finished, abandoned time.Time) (int64, error) {
	rows, err := s.db.rd.QueryContext(ctx, `SELECT id, total FROM validation_jobs
		WHERE (status IN ('done', 'cancelled', 'failed') AND updated_at < $1) OR (status = 'loading' AND created_at < $2)
		ORDER BY id`, ms(finished), ms(abandoned))
	if err != nil {
		return 0, notFound(err, "validation jobs")
	}
	type job struct {
		id    int64
		total int
	}
	var jobs []job
	for rows.Next() {
		var j job
		if err := rows.Scan(&j.id, &j.total); err != nil {
			rows.Close()
			return 0, notFound(err, "validation jobs")
		}
		jobs = append(jobs, j)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, notFound(err, "validation jobs")
	}
	for i, j := range jobs {
		if err := s.deleteJob(ctx, j.id, j.total); err != nil {
			return int64(i), notFound(err, "validation jobs")
		}
	}
	return int64(len(jobs)), nil
}
