package validation

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/postline/postline/internal/apperr"
)

// Job states. A job is loading while its lines are being stored (never
// shown, never claimed); it is queued once they all are.
const (
	JobLoading   = "loading"
	JobQueued    = "queued"
	JobRunning   = "running"
	JobDone      = "done"
	JobCancelled = "cancelled"
	JobFailed    = "failed"
)

// MaxJobLines bounds one list-cleaning job.
const MaxJobLines = 1_000_000

// LoadAbandonedAfter is how long after its creation a job still loading
// is taken for abandoned (its process died while storing its lines): it
// no longer counts against the account's unfinished jobs and is deleted.
// Storing a million lines takes well under a minute.
const LoadAbandonedAfter = time.Hour

// ErrTooManyJobs is the store's answer when the account already has its
// maximum of unfinished jobs.
var ErrTooManyJobs = errors.New("validation: the account has its maximum of unfinished jobs")

// ErrJobNameTaken is the store's answer when the account has a job of
// that name already.
var ErrJobNameTaken = errors.New("validation: the account has a job of that name")

// NewJob is a job to create.
type NewJob struct {
	AccountID    int64
	Emails       []string // in input order
	CheckMailbox bool
	// Name, when set, names the job for Mailgun's bulk validation (its
	// list_id): one job per name and account.
	Name string
	// Columns and Rows are the uploaded CSV's other columns (List), kept
	// for the results; none for a list of lines.
	Columns []string
	Rows    [][]string
	// MaxOpen is how many unfinished jobs (loading, queued or running)
	// the account may have, this one included; 0: any number.
	MaxOpen int
}

// Job is a list-cleaning job: its addresses are validated in the
// background, in input order, with the account's own history and budget.
type Job struct {
	ID, AccountID         int64
	Name                  string // "" for a job without a name
	Status                string
	Total, Done           int
	Valid, Invalid, Risky int
	// CheckMailbox probes each mailbox (check_mailbox); Deliverability
	// counts the results by deliverability verdict.
	CheckMailbox         bool
	Deliverability       map[string]int
	Error                string
	WaitingUntil         *time.Time // the account's hourly budget is spent until then
	CreatedAt, UpdatedAt time.Time
	// Columns names the uploaded CSV's other columns, which each item's
	// Extra holds (none for a list of lines).
	Columns []string
}

// JobItem is one line of a job with its result (nil while pending).
type JobItem struct {
	Index  int
	Email  string
	Result *Result
	// Extra is the line's other cells, as the job's Columns (read by Items
	// only).
	Extra []string
}

// JobStore keeps jobs. Missing rows (or another account's, or one still
// loading) are NotFound.
type JobStore interface {
	// CreateJob stores a queued job with its lines, or ErrTooManyJobs when
	// the account has j.MaxOpen unfinished jobs already (the count and the
	// insert are atomic: concurrent uploads cannot pass the limit
	// together). Its lines are stored in bounded transactions, so other
	// writers are not held up by a long list; until the last one commits
	// the job is loading.
	CreateJob(ctx context.Context, j NewJob, now time.Time) (Job, error)
	Job(ctx context.Context, accountID, id int64) (Job, error)
	Jobs(ctx context.Context, accountID int64, limit int) ([]Job, error)
	// JobNamed is the account's job of that name.
	JobNamed(ctx context.Context, accountID int64, name string) (Job, error)
	// DropJobName takes the name off the account's job of that name,
	// cancelling it when it is not finished, as CancelJob does.
	DropJobName(ctx context.Context, accountID int64, name string, now time.Time) (Job, error)
	// CancelJob cancels a job that is not finished, deleting its lines not
	// yet checked (Items then gives the checked ones); a finished one is
	// left.
	CancelJob(ctx context.Context, accountID, id int64, now time.Time) (Job, error)
	// Items calls fn with every item of a job in input order.
	Items(ctx context.Context, jobID int64, fn func(JobItem) error) error
	// ClaimJob leases the oldest open job whose lease is free and whose
	// wait is over; ok is false when there is none.
	ClaimJob(ctx context.Context, owner string, now, until time.Time) (Job, bool, error)
	// Pending returns up to limit items of a job still without a result.
	Pending(ctx context.Context, jobID int64, limit int) ([]JobItem, error)
	// SaveResults stores results and moves the counters, while the lease
	// is owner's; done is true when no item is pending any more (the job
	// is then marked done). items are the job's lowest pending ones, as
	// Pending returns them (or their first part).
	SaveResults(ctx context.Context, jobID int64, owner string, items []JobItem, now time.Time) (done bool, err error)
	// WaitJob releases a job until until (the account's budget is spent).
	WaitJob(ctx context.Context, jobID int64, owner string, until, now time.Time) error
	// DeleteJobsBefore removes finished jobs last changed before finished,
	// and jobs still loading that were created before abandoned.
	DeleteJobsBefore(ctx context.Context, finished, abandoned time.Time) (int64, error)
}

// Budget takes one validation from an account's hourly budget: ok, or the
// time the budget comes back.
type Budget func(ctx context.Context, accountID int64) (ok bool, resetAt time.Time)

// JobsConfig configures the job runner.
type JobsConfig struct {
	Batch     int           // addresses per commit (default 100)
	Lease     time.Duration // default 2m
	Poll      time.Duration // how often to look for work when idle (default 1s)
	Retention time.Duration // finished jobs are deleted after this (default 7 days)
	// MaxOpen is how many unfinished jobs an account may have (default 3).
	MaxOpen int
	Logger  *slog.Logger
	Now     func() time.Time
}

// Jobs is the list-cleaning service: the API and the console create and
// read jobs, Start runs them.
type Jobs struct {
	store  JobStore
	v      *Validator
	budget Budget
	cfg    JobsConfig
	owner  string
	stop   chan struct{}
	done   chan struct{}

	mu      sync.Mutex
	reading map[int64]int // uploads being read, by account (Reading)
}

// NewJobs returns the service. budget may be nil (no budget).
func NewJobs(st JobStore, v *Validator, budget Budget, cfg JobsConfig) *Jobs {
	if cfg.Batch <= 0 {
		cfg.Batch = 100
	}
	if cfg.Lease <= 0 {
		cfg.Lease = 2 * time.Minute
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.Retention <= 0 {
		cfg.Retention = 7 * 24 * time.Hour
	}
	if cfg.MaxOpen <= 0 {
		cfg.MaxOpen = 3
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	b := make([]byte, 8)
	rand.Read(b)
	return &Jobs{store: st, v: v, budget: budget, cfg: cfg, owner: "jobs-" + hex.EncodeToString(b), reading: map[int64]int{}}
}

// Reading takes a place for one of the account's lists while the caller
// reads it, before it is read: a list is read whole before Create counts
// the account's unfinished jobs, so each of an account's concurrent
// uploads held its list in memory (8 of 63 MB at once took ~900 MB). An
// account's uploads being read count against MaxOpen like its unfinished
// jobs (per process); past it the upload is refused as RateLimited, unread.
// done gives the place back.
func (j *Jobs) Reading(accountID int64) (done func(), err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.reading[accountID] >= j.cfg.MaxOpen {
		return nil, apperr.Errorf(apperr.RateLimited, "An account may have at most %d unfinished list-cleaning jobs "+
			"(validation-jobs-per-account), lists being uploaded included: wait for an upload or a job to finish, or cancel one.", j.cfg.MaxOpen)
	}
	j.reading[accountID]++
	return func() {
		j.mu.Lock()
		defer j.mu.Unlock()
		if j.reading[accountID]--; j.reading[accountID] == 0 {
			delete(j.reading, accountID)
		}
	}, nil
}

// Create queues a job for emails (1 to MaxJobLines, in input order); an
// account with MaxOpen unfinished jobs gets RateLimited.
func (j *Jobs) Create(ctx context.Context, accountID int64, emails []string, checkMailbox bool) (Job, error) {
	return j.CreateNamed(ctx, accountID, "", emails, checkMailbox)
}

// CreateNamed is Create for a job with a name (none when ""); a name the
// account's jobs already have is a Conflict.
func (j *Jobs) CreateNamed(ctx context.Context, accountID int64, name string, emails []string, checkMailbox bool) (Job, error) {
	return j.create(ctx, NewJob{AccountID: accountID, Name: name, Emails: emails, CheckMailbox: checkMailbox})
}

// CreateList is Create for an uploaded list (ReadList): a CSV's other
// columns come back with the results.
func (j *Jobs) CreateList(ctx context.Context, accountID int64, l List, checkMailbox bool) (Job, error) {
	return j.create(ctx, NewJob{AccountID: accountID, Emails: l.Emails, Columns: l.Columns, Rows: l.Rows, CheckMailbox: checkMailbox})
}

func (j *Jobs) create(ctx context.Context, p NewJob) (Job, error) {
	emails, name := p.Emails, p.Name
	switch {
	case p.CheckMailbox && !j.v.Probing():
		return Job{}, apperr.Field("check_mailbox", "Mailbox probing is off on this server (the operator turns it on with --validation-smtp-probe).")
	case len(emails) == 0:
		return Job{}, apperr.Field("emails", "at least one address is required")
	case len(emails) > MaxJobLines:
		return Job{}, apperr.Field("emails", fmt.Sprintf("at most %d addresses a job", MaxJobLines))
	}
	for i, e := range emails {
		if len(e) > maxInput {
			return Job{}, apperr.Field(fmt.Sprintf("emails.%d", i), fmt.Sprintf("an address is at most %d bytes", maxInput))
		}
		if !utf8.ValidString(e) || strings.ContainsRune(e, 0) { // PostgreSQL cannot store either
			return Job{}, apperr.Field(fmt.Sprintf("emails.%d", i), "an address must be valid UTF-8 without NUL characters")
		}
	}
	p.MaxOpen = j.cfg.MaxOpen
	job, err := j.store.CreateJob(ctx, p, j.cfg.Now().UTC())
	if errors.Is(err, ErrJobNameTaken) {
		return Job{}, apperr.Wrap(apperr.Conflict, err, fmt.Sprintf("A list named %s exists already: delete it first.", name))
	}
	if errors.Is(err, ErrTooManyJobs) {
		return Job{}, apperr.Wrap(apperr.RateLimited, err, fmt.Sprintf("An account may have at most %d unfinished list-cleaning jobs "+
			"(validation-jobs-per-account): wait for one to finish, or cancel one.", j.cfg.MaxOpen))
	}
	return job, err
}

// Get returns the account's job.
func (j *Jobs) Get(ctx context.Context, accountID, id int64) (Job, error) {
	return j.store.Job(ctx, accountID, id)
}

// Named returns the account's job of that name.
func (j *Jobs) Named(ctx context.Context, accountID int64, name string) (Job, error) {
	return j.store.JobNamed(ctx, accountID, name)
}

// DropName takes the name off the account's job of that name, cancelling
// it when it is not finished: the job stays in Postline's list, the name
// is free again.
func (j *Jobs) DropName(ctx context.Context, accountID int64, name string) (Job, error) {
	return j.store.DropJobName(ctx, accountID, name, j.cfg.Now().UTC())
}

// List returns the account's newest jobs.
func (j *Jobs) List(ctx context.Context, accountID int64) ([]Job, error) {
	return j.store.Jobs(ctx, accountID, 50)
}

// Cancel stops the account's job.
func (j *Jobs) Cancel(ctx context.Context, accountID, id int64) (Job, error) {
	return j.store.CancelJob(ctx, accountID, id, j.cfg.Now().UTC())
}

// Results calls fn with every item of the account's job in input order.
func (j *Jobs) Results(ctx context.Context, accountID, id int64, fn func(JobItem) error) error {
	if _, err := j.store.Job(ctx, accountID, id); err != nil {
		return err
	}
	return j.store.Items(ctx, id, fn)
}

// Start runs jobs in the background until Stop.
func (j *Jobs) Start(ctx context.Context) {
	j.stop, j.done = make(chan struct{}), make(chan struct{})
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		<-j.stop
		cancel()
	}()
	go func() {
		defer close(j.done)
		t := time.NewTicker(j.cfg.Poll)
		defer t.Stop()
		for {
			for j.RunOnce(ctx) {
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// Stop ends the runner; a job under way keeps its progress.
func (j *Jobs) Stop() {
	if j.stop != nil {
		close(j.stop)
		<-j.done
	}
}

// RunOnce advances one job by one batch; false when there was nothing to
// do.
func (j *Jobs) RunOnce(ctx context.Context) bool {
	now := j.cfg.Now().UTC()
	job, ok, err := j.store.ClaimJob(ctx, j.owner, now, now.Add(j.cfg.Lease))
	if err != nil {
		if ctx.Err() == nil {
			j.cfg.Logger.Warn("validation jobs: claiming", "error", err)
		}
		return false
	}
	if !ok {
		if n, err := j.store.DeleteJobsBefore(ctx, now.Add(-j.cfg.Retention), now.Add(-LoadAbandonedAfter)); err == nil && n > 0 {
			j.cfg.Logger.Info("validation jobs: deleted finished jobs", "count", n)
		}
		return false
	}
	items, err := j.store.Pending(ctx, job.ID, j.cfg.Batch)
	if err != nil {
		j.cfg.Logger.Warn("validation jobs: reading", "job", job.ID, "error", err)
		return false
	}
	// The budget counts addresses, not requests: take it for each.
	n := len(items)
	if j.budget != nil {
		for i := range items {
			if ok, reset := j.budget(ctx, job.AccountID); !ok {
				n = i
				if i == 0 {
					j.store.WaitJob(ctx, job.ID, j.owner, reset, now) //nolint:errcheck // the lease expires anyway
					return false
				}
				break
			}
		}
	}
	emails := make([]string, n)
	for i := range emails {
		emails[i] = items[i].Email
	}
	vctx := ctx
	if job.CheckMailbox {
		vctx = WithMailboxCheck(ctx)
	}
	results, _, err := j.v.ValidateBatchAs(vctx, job.AccountID, ModeStandard, emails)
	if err != nil {
		j.cfg.Logger.Warn("validation jobs: validating", "job", job.ID, "error", err)
		return false
	}
	for i := range results {
		items[i].Result = &results[i]
	}
	if _, err := j.store.SaveResults(ctx, job.ID, j.owner, items[:n], j.cfg.Now().UTC()); err != nil {
		j.cfg.Logger.Warn("validation jobs: saving", "job", job.ID, "error", err)
		return false
	}
	return true
}

// Verdict is a result's list-cleaning class: valid, invalid, or risky
// (valid, but a role account, a likely typo or a likely spamtrap).
func Verdict(r Result) string {
	switch {
	case !r.IsValid:
		return "invalid"
	case r.IsSpamtrap || r.Suggestion != "":
		return "risky"
	}
	for _, w := range r.Warnings {
		if w == WarnRoleAccount {
			return "risky"
		}
	}
	return "valid"
}
