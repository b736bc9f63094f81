package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/validation"
)

// ValidationJobs implements validation.JobStore.
type ValidationJobs struct{ db *DB }

var _ validation.JobStore = ValidationJobs{}

// NewValidationJobs returns the job store.
func NewValidationJobs(db *DB) ValidationJobs { return ValidationJobs{db: db} }

const jobCols = `id, account_id, status, total, done, valid, invalid, risky, error, waiting_until, created_at, updated_at,
	check_mailbox, deliverable, undeliverable, risky_deliverability, unknown_deliverability, name, columns`

func scanJob(row interface{ Scan(...any) error }) (validation.Job, error) {
	var j validation.Job
	var waiting sql.NullInt64
	var created, updated int64
	var probe, deliverable, undeliverable, risky, unknown int
	var name sql.NullString
	var columns string
	err := row.Scan(&j.ID, &j.AccountID, &j.Status, &j.Total, &j.Done, &j.Valid, &j.Invalid, &j.Risky, &j.Error,
		&waiting, &created, &updated, &probe, &deliverable, &undeliverable, &risky, &unknown, &name, &columns)
	if columns != "" {
		json.Unmarshal([]byte(columns), &j.Columns) //nolint:errcheck // written by CreateJob
	}
	j.Name = name.String
	j.WaitingUntil, j.CreatedAt, j.UpdatedAt = nullMS(waiting), fromMS(created), fromMS(updated)
	j.CheckMailbox = probe != 0
	j.Deliverability = map[string]int{validation.Deliverable: deliverable, validation.Undeliverable: undeliverable,
		validation.Risky: risky, validation.Unknown: unknown}
	return j, err
}

// Job implements validation.JobStore.
func (s ValidationJobs) Job(ctx context.Context, accountID, id int64) (validation.Job, error) {
	j, err := scanJob(s.db.rd.QueryRowContext(ctx, `SELECT `+jobCols+` FROM validation_jobs
		WHERE id = $1 AND account_id = $2 AND status <> 'loading'`, id, accountID))
	return j, notFound(err, "validation job")
}

// JobNamed implements validation.JobStore.
func (s ValidationJobs) JobNamed(ctx context.Context, accountID int64, name string) (validation.Job, error) {
	j, err := scanJob(s.db.rd.QueryRowContext(ctx, `SELECT `+jobCols+` FROM validation_jobs
		WHERE account_id = $1 AND name = $2 AND status <> 'loading'`, accountID, name))
	return j, notFound(err, "validation job")
}

// DropJobName implements validation.JobStore: one statement, so a worker
// saving results meanwhile cannot bring an open job back.
func (s ValidationJobs) DropJobName(ctx context.Context, accountID int64, name string, now time.Time) (validation.Job, error) {
	var id int64
	err := s.db.w.QueryRowContext(ctx, `UPDATE validation_jobs SET name = NULL, updated_at = $3,
		status = CASE WHEN status IN ('queued', 'running') THEN 'cancelled' ELSE status END,
		lease_owner = CASE WHEN status IN ('queued', 'running') THEN NULL ELSE lease_owner END
		WHERE account_id = $1 AND name = $2 AND status <> 'loading' RETURNING id`, accountID, name, ms(now)).Scan(&id)
	if err != nil {
		return validation.Job{}, notFound(err, "validation job")
	}
	j, err := s.Job(ctx, accountID, id)
	if err != nil || j.Status != validation.JobCancelled {
		return j, err
	}
	return j, s.dropPending(ctx, j)
}

// Jobs implements validation.JobStore.
func (s ValidationJobs) Jobs(ctx context.Context, accountID int64, limit int) ([]validation.Job, error) {
	rows, err := s.db.rd.QueryContext(ctx, `SELECT `+jobCols+` FROM validation_jobs
		WHERE account_id = $1 AND status <> 'loading' ORDER BY id DESC LIMIT $2 + 0`, accountID, limit)
	if err != nil {
		return nil, notFound(err, "validation jobs")
	}
	defer rows.Close()
	var out []validation.Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

// CancelJob implements validation.JobStore.
func (s ValidationJobs) CancelJob(ctx context.Context, accountID, id int64, now time.Time) (validation.Job, error) {
	res, err := s.db.w.ExecContext(ctx, `UPDATE validation_jobs SET status = 'cancelled', updated_at = $3, lease_owner = NULL
		WHERE id = $1 AND account_id = $2 AND status IN ('queued', 'running')`, id, accountID, ms(now))
	if err != nil {
		return validation.Job{}, notFound(err, "validation job")
	}
	j, err := s.Job(ctx, accountID, id)
	if n, _ := res.RowsAffected(); err != nil || n == 0 {
		return j, err
	}
	return j, s.dropPending(ctx, j)
}

// Items implements validation.JobStore, reading in pages by index so a
// million lines never sit in memory.
func (s ValidationJobs) Items(ctx context.Context, jobID int64, fn func(validation.JobItem) error) error {
	last := -1
	for {
		rows, err := s.db.rd.QueryContext(ctx, `SELECT idx, email, result, extra FROM validation_job_items
			WHERE job_id = $1 AND idx > $2 ORDER BY idx LIMIT 1000`, jobID, last)
		if err != nil {
			return notFound(err, "validation job items")
		}
		n := 0
		for rows.Next() {
			var it validation.JobItem
			var result, extra sql.NullString
			if err := rows.Scan(&it.Index, &it.Email, &result, &extra); err != nil {
				rows.Close()
				return err
			}
			if extra.Valid {
				json.Unmarshal([]byte(extra.String), &it.Extra) //nolint:errcheck // written by CreateJob
			}
			if result.Valid {
				var r validation.Result
				if err := json.Unmarshal([]byte(result.String), &r); err == nil {
					it.Result = &r
				}
			}
			last, n = it.Index, n+1
			if err := fn(it); err != nil {
				rows.Close()
				return err
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if n < 1000 {
			return nil
		}
	}
}

// ClaimJob implements validation.JobStore.
func (s ValidationJobs) ClaimJob(ctx context.Context, owner string, now, until time.Time) (validation.Job, bool, error) {
	var j validation.Job
	found := false
	err := s.db.InTx(ctx, func(q Querier) error {
		lock := ""
		if s.db.Dialect == Postgres {
			lock = ` FOR UPDATE SKIP LOCKED`
		}
		var id int64
		// A job this runner leases is its own to go on with; another's only
		// once the lease has expired (its runner died).
		err := q.QueryRowContext(ctx, `SELECT id FROM validation_jobs WHERE status IN ('queued', 'running')
			AND (lease_until IS NULL OR lease_until < $1 OR lease_owner = $2) AND (waiting_until IS NULL OR waiting_until <= $1)
			ORDER BY id LIMIT 1`+lock, ms(now), owner).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if _, err := q.ExecContext(ctx, `UPDATE validation_jobs SET status = 'running', lease_owner = $2, lease_until = $3,
			waiting_until = NULL, updated_at = $4 WHERE id = $1`, id, owner, ms(until), ms(now)); err != nil {
			return err
		}
		found = true
		j, err = scanJob(q.QueryRowContext(ctx, `SELECT `+jobCols+` FROM validation_jobs WHERE id = $1`, id))
		return err
	})
	return j, found, notFound(err, "validation job")
}

// Pending implements validation.JobStore.
func (s ValidationJobs) Pending(ctx context.Context, jobID int64, limit int) ([]validation.JobItem, error) {
	rows, err := s.db.rd.QueryContext(ctx, `SELECT idx, email FROM validation_job_items WHERE job_id = $1 AND result IS NULL
		ORDER BY idx LIMIT $2 + 0`, jobID, limit)
	if err != nil {
		return nil, notFound(err, "validation job items")
	}
	defer rows.Close()
	var out []validation.JobItem
	for rows.Next() {
		var it validation.JobItem
		if err := rows.Scan(&it.Index, &it.Email); err != nil {
			return nil, err
		}
		out = append(out, it)
	}
	return out, rows.Err()
}

// SaveResults implements validation.JobStore.
func (s ValidationJobs) SaveResults(ctx context.Context, jobID int64, owner string, items []validation.JobItem, now time.Time) (bool, error) {
	done := false
	err := s.db.InTx(ctx, func(q Querier) error {
		var status string
		var lease sql.NullString
		if err := q.QueryRowContext(ctx, `SELECT status, lease_owner FROM validation_jobs WHERE id = $1`, jobID).Scan(&status, &lease); err != nil {
			return err
		}
		if status != validation.JobRunning || lease.String != owner {
			return apperr.Errorf(apperr.Conflict, "the job's lease was lost or it was cancelled")
		}
		var valid, invalid, risky int
		verdicts := map[string]int{}
		for _, it := range items {
			b, err := json.Marshal(it.Result)
			if err != nil {
				return err
			}
			if _, err := q.ExecContext(ctx, `UPDATE validation_job_items SET result = $3 WHERE job_id = $1 AND idx = $2`,
				jobID, it.Index, string(b)); err != nil {
				return err
			}
			verdicts[it.Result.Deliverability]++
			switch validation.Verdict(*it.Result) {
			case "valid":
				valid++
			case "invalid":
				invalid++
			default:
				risky++
			}
		}
		// The items are the lowest pending ones, so every line below the
		// first has its result: the search for one still pending starts
		// there, rather than counting a million lines in the writer's
		// transaction at every batch.
		from := 0
		if len(items) > 0 {
			from = items[0].Index
			for _, it := range items {
				from = min(from, it.Index)
			}
		}
		var one int
		err := q.QueryRowContext(ctx, `SELECT 1 FROM validation_job_items WHERE job_id = $1 AND idx >= $2 AND result IS NULL
			LIMIT 1`, jobID, from).Scan(&one)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		done = errors.Is(err, sql.ErrNoRows)
		status = validation.JobRunning
		if done {
			status = validation.JobDone
		}
		_, err = q.ExecContext(ctx, `UPDATE validation_jobs SET done = done + $2, valid = valid + $3, invalid = invalid + $4,
			risky = risky + $5, status = $6, updated_at = $7, lease_owner = CASE WHEN $6 = 'done' THEN NULL ELSE lease_owner END,
			deliverable = deliverable + $8, undeliverable = undeliverable + $9, risky_deliverability = risky_deliverability + $10,
			unknown_deliverability = unknown_deliverability + $11
			WHERE id = $1`, jobID, len(items), valid, invalid, risky, status, ms(now), verdicts[validation.Deliverable],
			verdicts[validation.Undeliverable], verdicts[validation.Risky], verdicts[validation.Unknown])
		return err
	})
	return done, err
}

// WaitJob implements validation.JobStore.
func (s ValidationJobs) WaitJob(ctx context.Context, jobID int64, owner string, until, now time.Time) error {
	_, err := s.db.w.ExecContext(ctx, `UPDATE validation_jobs SET waiting_until = $3, lease_owner = NULL, lease_until = NULL,
		updated_at = $4 WHERE id = $1 AND lease_owner = $2`, jobID, owner, ms(until), ms(now))
	return notFound(err, "validation job")
}
