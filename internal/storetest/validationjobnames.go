package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/validation"
)

// testValidationJobNames: a job's name (Mailgun's list_id) finds it for
// its account only; a second job of the name is ErrJobNameTaken (another
// account may use it); DropJobName cancels an open job and frees the
// name, and a finished job keeps its status.
func testValidationJobNames(t *testing.T, db *store.DB) {
	ctx := context.Background()
	s := store.NewValidationJobs(db)
	alice, bob := twoAccounts(t, store.NewAccounts(db))

	j, err := s.CreateJob(ctx, validation.NewJob{AccountID: alice.ID, Name: "spring", Emails: emails("n", 3)}, now)
	if err != nil || j.Name != "spring" {
		t.Fatalf("CreateJob named = %+v, %v", j, err)
	}
	if got, err := s.JobNamed(ctx, alice.ID, "spring"); err != nil || got.ID != j.ID || got.Name != "spring" {
		t.Fatalf("JobNamed = %+v, %v", got, err)
	}
	if _, err := s.JobNamed(ctx, bob.ID, "spring"); apperr.CodeOf(err) != apperr.NotFound {
		t.Errorf("bob's JobNamed(spring) = %v, want NotFound", err)
	}
	if _, err := s.DropJobName(ctx, bob.ID, "spring", now); apperr.CodeOf(err) != apperr.NotFound {
		t.Errorf("bob's DropJobName(spring) = %v, want NotFound", err)
	}
	if _, err := s.CreateJob(ctx, validation.NewJob{AccountID: alice.ID, Name: "spring", Emails: emails("m", 2)}, now); !errors.Is(err, validation.ErrJobNameTaken) {
		t.Errorf("a second job named spring: %v, want ErrJobNameTaken", err)
	}
	if bj, err := s.CreateJob(ctx, validation.NewJob{AccountID: bob.ID, Name: "spring", Emails: emails("b", 1)}, now); err != nil || bj.Name != "spring" {
		t.Errorf("bob's job named spring: %+v, %v", bj, err)
	}
	// Jobs without a name never collide.
	for i := 0; i < 2; i++ {
		if _, err := s.CreateJob(ctx, validation.NewJob{AccountID: alice.ID, Emails: emails("u", 1)}, now); err != nil {
			t.Fatalf("unnamed job %d: %v", i, err)
		}
	}
	dropped, err := s.DropJobName(ctx, alice.ID, "spring", now)
	if err != nil || dropped.ID != j.ID || dropped.Status != validation.JobCancelled || dropped.Name != "" {
		t.Fatalf("DropJobName = %+v, %v; want the job cancelled without its name", dropped, err)
	}
	if _, err := s.JobNamed(ctx, alice.ID, "spring"); apperr.CodeOf(err) != apperr.NotFound {
		t.Errorf("JobNamed after DropJobName = %v, want NotFound", err)
	}
	if got, err := s.Job(ctx, alice.ID, j.ID); err != nil || got.Status != validation.JobCancelled {
		t.Errorf("the dropped job by id = %+v, %v; want it kept, cancelled", got, err)
	}
	again, err := s.CreateJob(ctx, validation.NewJob{AccountID: alice.ID, Name: "spring", Emails: emails("z", 1)}, now)
	if err != nil || again.ID == j.ID {
		t.Fatalf("the name again after DropJobName: %+v, %v", again, err)
	}
}
