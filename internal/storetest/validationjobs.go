package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/validation"
)

func emails(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d@x.example", prefix, i)
	}
	return out
}

// testValidationJobs: a job and its lines round trip in input order
// (across Items' pages); another account reads, lists and cancels none of
// it; the open-job limit holds, also under concurrent uploads; a job still
// loading is neither shown, claimed nor kept past its time; finished jobs
// are deleted after retention, open ones never.
func testValidationJobs(t *testing.T, db *store.DB) {
	ctx := context.Background()
	s := store.NewValidationJobs(db)
	accounts := store.NewAccounts(db)
	alice, bob := twoAccounts(t, accounts)

	lines := emails("a", 2001) // Items reads 1000 at a time
	j, err := s.CreateJob(ctx, validation.NewJob{AccountID: alice.ID, Emails: lines, CheckMailbox: true}, now)
	if err != nil || j.ID == 0 || j.Status != validation.JobQueued || j.Total != 2001 || j.Done != 0 || !j.CheckMailbox ||
		j.AccountID != alice.ID || !j.CreatedAt.Equal(now) || j.Deliverability[validation.Deliverable] != 0 {
		t.Fatalf("CreateJob = %+v, %v; want a queued job of 2001 lines", j, err)
	}
	got, err := s.Job(ctx, alice.ID, j.ID)
	if err != nil || got.ID != j.ID || got.Total != 2001 || got.Status != validation.JobQueued || !got.CheckMailbox {
		t.Fatalf("Job = %+v, %v", got, err)
	}
	var read []string
	if err := s.Items(ctx, j.ID, func(it validation.JobItem) error {
		if it.Index != len(read) || it.Result != nil {
			return fmt.Errorf("item %+v at position %d: want index %d, no result", it, len(read), len(read))
		}
		read = append(read, it.Email)
		return nil
	}); err != nil || !slices.Equal(read, lines) {
		t.Fatalf("Items = %d lines, %v; want all 2001 in input order", len(read), err)
	}
	stop := errors.New("stop")
	if n := 0; s.Items(ctx, j.ID, func(validation.JobItem) error { n++; return stop }) != stop || n != 1 {
		t.Fatal("Items did not stop at fn's error")
	}

	// Bob sees none of Alice's job.
	if _, err := s.Job(ctx, bob.ID, j.ID); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("Bob reading Alice's job = %v, want not_found", err)
	}
	if jobs, err := s.Jobs(ctx, bob.ID, 10); err != nil || len(jobs) != 0 {
		t.Fatalf("Bob's Jobs = %+v, %v; want none", jobs, err)
	}
	if _, err := s.CancelJob(ctx, bob.ID, j.ID, now); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("Bob cancelling Alice's job = %v, want not_found", err)
	}
	if got, _ := s.Job(ctx, alice.ID, j.ID); got.Status != validation.JobQueued {
		t.Fatalf("after Bob's cancel Alice's job is %s, want queued", got.Status)
	}

	// Jobs: newest first, limited.
	j2, err := s.CreateJob(ctx, validation.NewJob{AccountID: alice.ID, Emails: emails("b", 2)}, now.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	j3, err := s.CreateJob(ctx, validation.NewJob{AccountID: alice.ID, Emails: emails("c", 1)}, now.Add(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := s.Jobs(ctx, alice.ID, 2)
	if err != nil || len(jobs) != 2 || jobs[0].ID != j3.ID || jobs[1].ID != j2.ID {
		t.Fatalf("Jobs limit 2 = %+v, %v; want %d, %d (newest first)", jobs, err, j3.ID, j2.ID)
	}

	// The open-job limit counts queued jobs (3 now) and recent loading ones.
	if _, err := s.CreateJob(ctx, validation.NewJob{AccountID: alice.ID, Emails: emails("d", 1), MaxOpen: 3}, now); !errors.Is(err, validation.ErrTooManyJobs) {
		t.Fatalf("a fourth open job with MaxOpen 3 = %v, want ErrTooManyJobs", err)
	}
	if _, err := s.CreateJob(ctx, validation.NewJob{AccountID: bob.ID, Emails: emails("d", 1), MaxOpen: 1}, now); err != nil {
		t.Fatalf("Bob's first job was refused: %v (Alice's jobs counted against him?)", err)
	}
	var loading int64
	if err := db.Writer().QueryRowContext(ctx, `INSERT INTO validation_jobs (account_id, status, total, created_at, updated_at)
		VALUES ($1, 'loading', 5, $2, $2) RETURNING id`, alice.ID, now.UnixMilli()).Scan(&loading); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Job(ctx, alice.ID, loading); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("a loading job is shown: %v", err)
	}
	if jobs, _ := s.Jobs(ctx, alice.ID, 10); len(jobs) != 3 {
		t.Fatalf("Jobs lists %d jobs, want 3 (not the loading one)", len(jobs))
	}
	if _, err := s.CancelJob(ctx, alice.ID, j3.ID, now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateJob(ctx, validation.NewJob{AccountID: alice.ID, Emails: emails("d", 1), MaxOpen: 3}, now); !errors.Is(err, validation.ErrTooManyJobs) {
		t.Fatalf("with 2 queued and 1 loading, MaxOpen 3 = %v; want ErrTooManyJobs", err)
	}
	// An hour on, the loading job is abandoned: it no longer counts.
	if _, err := s.CreateJob(ctx, validation.NewJob{AccountID: alice.ID, Emails: emails("d", 1), MaxOpen: 3},
		now.Add(validation.LoadAbandonedAfter+time.Second)); err != nil {
		t.Fatalf("an abandoned loading job still counts: %v", err)
	}

	// Retention: finished jobs changed before the cut and loading jobs
	// created before theirs go; queued ones stay.
	n, err := s.DeleteJobsBefore(ctx, now.Add(time.Second), now.Add(time.Second))
	if err != nil || n != 2 {
		t.Fatalf("DeleteJobsBefore = %d, %v; want 2 (the cancelled job and the abandoned load)", n, err)
	}
	if _, err := s.Job(ctx, alice.ID, j3.ID); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("the cancelled job survived retention: %v", err)
	}
	var left int
	if err := db.Reader().QueryRowContext(ctx, `SELECT count(*) FROM validation_job_items WHERE job_id = $1`, j3.ID).Scan(&left); err != nil || left != 0 {
		t.Fatalf("the deleted job's lines survived retention (%d, %v)", left, err)
	}
	if err := db.Reader().QueryRowContext(ctx, `SELECT count(*) FROM validation_jobs WHERE id = $1`, loading).Scan(&left); err != nil || left != 0 {
		t.Fatalf("the abandoned loading job survived retention (%d, %v)", left, err)
	}
	if got, err := s.Job(ctx, alice.ID, j.ID); err != nil || got.Total != 2001 {
		t.Fatalf("retention deleted a queued job: %v", err)
	}

	// Concurrent uploads: the limit holds.
	carol, err := accounts.CreateAccount(ctx, "carol", now)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.CreateJob(ctx, validation.NewJob{AccountID: carol.ID, Emails: emails("e", 3), MaxOpen: 2}, now)
		}()
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
		} else if !errors.Is(err, validation.ErrTooManyJobs) {
			t.Fatalf("a concurrent upload past the limit: %v, want ErrTooManyJobs", err)
		}
	}
	if jobs, _ := s.Jobs(ctx, carol.ID, 10); ok != 2 || len(jobs) != 2 {
		t.Fatalf("%d concurrent uploads succeeded, %d stored; want exactly 2", ok, len(jobs))
	}
}

// testValidationJobRuns: claims take the oldest open job and never give
// one job to two runners; a lease that ran out is claimable again, and
// the runner that lost it can save nothing; results move the counters and
// finish the job; a waiting job is not claimed before its time; a
// cancelled or finished job is not claimed.
func testValidationJobRuns(t *testing.T, db *store.DB) {
	ctx := context.Background()
	s := store.NewValidationJobs(db)
	a, err := store.NewAccounts(db).CreateAccount(ctx, "alice", now)
	if err != nil {
		t.Fatal(err)
	}
	create := func(n int) validation.Job {
		j, err := s.CreateJob(ctx, validation.NewJob{AccountID: a.ID, Emails: emails("r", n)}, now)
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	j1, j2, j3 := create(3), create(2), create(1)
	lease := now.Add(time.Minute)

	// Three runners at once: three different jobs.
	var wg sync.WaitGroup
	claimed := make([]int64, 3)
	for i := range claimed {
		wg.Add(1)
		go func() {
			defer wg.Done()
			j, ok, err := s.ClaimJob(ctx, fmt.Sprintf("r%d", i), now, lease)
			if err != nil || !ok || j.Status != validation.JobRunning {
				t.Errorf("ClaimJob = %+v, %v, %v; want a running job", j, ok, err)
			}
			claimed[i] = j.ID
		}()
	}
	wg.Wait()
	slices.Sort(claimed)
	if !slices.Equal(claimed, []int64{j1.ID, j2.ID, j3.ID}) {
		t.Fatalf("concurrent claims took %v; want each of %d, %d, %d once", claimed, j1.ID, j2.ID, j3.ID)
	}
	if j, ok, err := s.ClaimJob(ctx, "r9", now.Add(time.Second), lease); err != nil || ok {
		t.Fatalf("a claim while every job is leased = %+v, %v, %v; want none", j, ok, err)
	}

	// Find who holds j1; past the lease another runner takes it over.
	var holder string
	if err := db.Reader().QueryRowContext(ctx, `SELECT lease_owner FROM validation_jobs WHERE id = $1`, j1.ID).Scan(&holder); err != nil {
		t.Fatal(err)
	}
	// A runner goes on with its own job while its lease lives.
	if j, ok, _ := s.ClaimJob(ctx, holder, now.Add(time.Second), lease); !ok || j.ID != j1.ID {
		t.Fatalf("the holder's own claim = %+v, %v; want its job %d again", j, ok, j1.ID)
	}
	after := lease.Add(time.Second)
	j, ok, err := s.ClaimJob(ctx, "r9", after, after.Add(time.Minute))
	if err != nil || !ok || j.ID != j1.ID {
		t.Fatalf("a claim after the leases ran out = %+v, %v, %v; want the oldest, %d", j, ok, err, j1.ID)
	}

	pending, err := s.Pending(ctx, j1.ID, 2)
	if err != nil || len(pending) != 2 || pending[0].Index != 0 || pending[1].Index != 1 || pending[0].Email != "r0@x.example" {
		t.Fatalf("Pending(2) = %+v, %v; want lines 0 and 1", pending, err)
	}
	res := func(it validation.JobItem, valid bool, deliv string) validation.JobItem {
		it.Result = &validation.Result{Email: it.Email, IsValid: valid, Deliverability: deliv, Warnings: []string{}}
		return it
	}
	batch := []validation.JobItem{res(pending[0], true, validation.Deliverable), res(pending[1], false, validation.Undeliverable)}
	if _, err := s.SaveResults(ctx, j1.ID, holder, batch, after); apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("SaveResults by the runner that lost the lease = %v, want conflict", err)
	}
	if got, _ := s.Job(ctx, a.ID, j1.ID); got.Done != 0 {
		t.Fatalf("a lost lease's results were counted: %+v", got)
	}
	done, err := s.SaveResults(ctx, j1.ID, "r9", batch, after)
	if err != nil || done {
		t.Fatalf("SaveResults of 2 of 3 = %v, %v; want not done", done, err)
	}
	if p, _ := s.Pending(ctx, j1.ID, 10); len(p) != 1 || p[0].Index != 2 {
		t.Fatalf("Pending after 2 results = %+v; want line 2", p)
	}
	p, _ := s.Pending(ctx, j1.ID, 10)
	done, err = s.SaveResults(ctx, j1.ID, "r9", []validation.JobItem{res(p[0], true, validation.Risky)}, after.Add(time.Second))
	if err != nil || !done {
		t.Fatalf("SaveResults of the last line = %v, %v; want done", done, err)
	}
	got, err := s.Job(ctx, a.ID, j1.ID)
	if err != nil || got.Status != validation.JobDone || got.Done != 3 || got.Valid != 2 || got.Invalid != 1 || got.Risky != 0 ||
		got.Deliverability[validation.Deliverable] != 1 || got.Deliverability[validation.Undeliverable] != 1 ||
		got.Deliverability[validation.Risky] != 1 || !got.UpdatedAt.Equal(after.Add(time.Second)) {
		t.Fatalf("finished job = %+v, %v; want done with 2 valid, 1 invalid and one of each deliverability", got, err)
	}
	var results []bool
	s.Items(ctx, j1.ID, func(it validation.JobItem) error {
		results = append(results, it.Result != nil && it.Result.Email == it.Email)
		return nil
	})
	if !slices.Equal(results, []bool{true, true, true}) {
		t.Fatalf("Items after the run: results present %v; want every line's", results)
	}
	if _, err := s.CancelJob(ctx, a.ID, j1.ID, after); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Job(ctx, a.ID, j1.ID); got.Status != validation.JobDone {
		t.Fatalf("cancelling a finished job made it %s, want it left done", got.Status)
	}

	// Cancel j2 (running, leased): no more claims or results for it.
	if got, err := s.CancelJob(ctx, a.ID, j2.ID, after); err != nil || got.Status != validation.JobCancelled {
		t.Fatalf("CancelJob = %+v, %v; want cancelled", got, err)
	}
	// Wait j3: not claimed before its time, claimed after.
	j, ok, _ = s.ClaimJob(ctx, "r7", after, after.Add(time.Minute))
	if !ok || j.ID != j3.ID {
		t.Fatalf("claim = %+v, %v; want %d (not the done or cancelled ones)", j, ok, j3.ID)
	}
	wake := after.Add(time.Hour)
	if err := s.WaitJob(ctx, j3.ID, "r7", wake, after); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Job(ctx, a.ID, j3.ID); got.WaitingUntil == nil || !got.WaitingUntil.Equal(wake) {
		t.Fatalf("waiting job = %+v; want waiting until %v", got, wake)
	}
	if j, ok, _ := s.ClaimJob(ctx, "r7", wake.Add(-time.Second), wake.Add(time.Minute)); ok {
		t.Fatalf("a waiting job (or a cancelled one) was claimed before its time: %+v", j)
	}
	j, ok, _ = s.ClaimJob(ctx, "r8", wake, wake.Add(time.Minute))
	if !ok || j.ID != j3.ID || j.WaitingUntil != nil {
		t.Fatalf("claim at the wait's end = %+v, %v; want %d, no longer waiting", j, ok, j3.ID)
	}
	if _, err := s.SaveResults(ctx, j2.ID, "r0", nil, wake); apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("SaveResults on a cancelled job = %v, want conflict", err)
	}
}

// testValidationJobColumns: an uploaded CSV's other columns come back with
// the job (its Columns) and each line (its Extra); a list of lines has
// none.
func testValidationJobColumns(t *testing.T, db *store.DB) {
	ctx := context.Background()
	s := store.NewValidationJobs(db)
	alice, _ := twoAccounts(t, store.NewAccounts(db))
	j, err := s.CreateJob(ctx, validation.NewJob{AccountID: alice.ID, Emails: []string{"a@x.example", `"b c"@x.example`},
		Columns: []string{"name", "plan"}, Rows: [][]string{{"Ann", "gold"}, {"Bé, \"B\"", ""}}}, now)
	if err != nil || !slices.Equal(j.Columns, []string{"name", "plan"}) {
		t.Fatalf("CreateJob with columns = %+v, %v", j, err)
	}
	if got, err := s.Job(ctx, alice.ID, j.ID); err != nil || !slices.Equal(got.Columns, []string{"name", "plan"}) {
		t.Fatalf("Job's columns = %q, %v", got.Columns, err)
	}
	var rows [][]string
	s.Items(ctx, j.ID, func(it validation.JobItem) error {
		rows = append(rows, append([]string{it.Email}, it.Extra...))
		return nil
	}) //nolint:errcheck
	if len(rows) != 2 || !slices.Equal(rows[0], []string{"a@x.example", "Ann", "gold"}) || !slices.Equal(rows[1], []string{`"b c"@x.example`, "Bé, \"B\"", ""}) {
		t.Fatalf("Items with their cells: %q", rows)
	}
	plain, err := s.CreateJob(ctx, validation.NewJob{AccountID: alice.ID, Emails: []string{"a@x.example"}}, now)
	if err != nil || plain.Columns != nil {
		t.Fatalf("a list of lines: %+v, %v; want no columns", plain, err)
	}
	s.Items(ctx, plain.ID, func(it validation.JobItem) error { //nolint:errcheck
		if it.Extra != nil {
			t.Errorf("a line of a list of lines has cells %q", it.Extra)
		}
		return nil
	})
}
