package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/validation"
)

// testValidationJobCancelDropsPending: cancelling a job, or dropping the
// name of an open one, removes its lines not yet checked and keeps the
// checked ones with their results; so uploading a million lines and
// cancelling them, again and again, no longer leaves each list on disk
// for the week finished jobs are kept (~90 MB every 5 s on SQLite).
func testValidationJobCancelDropsPending(t *testing.T, db *store.DB) {
	ctx := context.Background()
	s := store.NewValidationJobs(db)
	alice, _ := twoAccounts(t, store.NewAccounts(db))
	count := func(id int64) (all, checked int) {
		s.Items(ctx, id, func(it validation.JobItem) error {
			all++
			if it.Result != nil {
				checked++
			}
			return nil
		})
		return all, checked
	}

	// 12,000 lines: more than one of the chunks lines are written and
	// deleted in; two of them checked.
	j, err := s.CreateJob(ctx, validation.NewJob{AccountID: alice.ID, Emails: emails("c", 12_000)}, now)
	if err != nil {
		t.Fatal(err)
	}
	lease := now.Add(time.Minute)
	if got, ok, err := s.ClaimJob(ctx, "r1", now, lease); err != nil || !ok || got.ID != j.ID {
		t.Fatalf("ClaimJob = %+v, %v, %v", got, ok, err)
	}
	pending, err := s.Pending(ctx, j.ID, 2)
	if err != nil || len(pending) != 2 {
		t.Fatalf("Pending = %+v, %v", pending, err)
	}
	for i := range pending {
		pending[i].Result = &validation.Result{Email: pending[i].Email, IsValid: true, Deliverability: validation.Deliverable, Warnings: []string{}}
	}
	if _, err := s.SaveResults(ctx, j.ID, "r1", pending, now); err != nil {
		t.Fatal(err)
	}
	got, err := s.CancelJob(ctx, alice.ID, j.ID, now)
	if err != nil || got.Status != validation.JobCancelled || got.Done != 2 {
		t.Fatalf("CancelJob = %+v, %v; want cancelled with 2 done", got, err)
	}
	if all, checked := count(j.ID); all != 2 || checked != 2 {
		t.Fatalf("after the cancel the job keeps %d lines, %d checked; want the 2 checked alone", all, checked)
	}

	// Dropping the name of an open job cancels it likewise; a finished
	// job's lines stay.
	named, err := s.CreateJob(ctx, validation.NewJob{AccountID: alice.ID, Name: "spring", Emails: emails("n", 7000)}, now)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.DropJobName(ctx, alice.ID, "spring", now); err != nil || got.Status != validation.JobCancelled {
		t.Fatalf("DropJobName = %+v, %v; want cancelled", got, err)
	}
	if all, _ := count(named.ID); all != 0 {
		t.Fatalf("after dropping the name the job keeps %d unchecked lines; want none", all)
	}
	small, err := s.CreateJob(ctx, validation.NewJob{AccountID: alice.ID, Name: "small", Emails: emails("s", 1)}, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.ClaimJob(ctx, "r2", now, lease); err != nil || !ok {
		t.Fatalf("ClaimJob: %v, %v", ok, err)
	}
	p, _ := s.Pending(ctx, small.ID, 1)
	p[0].Result = &validation.Result{Email: p[0].Email, Deliverability: validation.Undeliverable, Warnings: []string{}}
	if done, err := s.SaveResults(ctx, small.ID, "r2", p, now); err != nil || !done {
		t.Fatalf("SaveResults = %v, %v; want done", done, err)
	}
	if _, err := s.DropJobName(ctx, alice.ID, "small", now); err != nil {
		t.Fatal(err)
	}
	if all, checked := count(small.ID); all != 1 || checked != 1 {
		t.Fatalf("a finished job whose name was dropped keeps %d lines, %d checked; want its one", all, checked)
	}
}
