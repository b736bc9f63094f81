package sending

import (
	"testing"
	"time"
)

// TestClaimAheadFollowsAttemptTimes: the worker claims ahead while attempts
// are quick and stops once they are slow (a slow server would make the
// deliveries claimed ahead wait behind it), then resumes when they are
// quick again.
func TestClaimAheadFollowsAttemptTimes(t *testing.T) {
	w := NewWorker(WorkerConfig{Concurrency: 8}, nil, nil, nil, nil, nil, nil)
	if n := w.claimAhead(); n != 8 {
		t.Fatalf("a new worker claims %d ahead, want 8 (its concurrency)", n)
	}
	for range 20 {
		w.noteAttempt(10 * time.Millisecond)
	}
	if n := w.claimAhead(); n != 8 {
		t.Fatalf("after quick attempts: %d ahead, want 8", n)
	}
	w.noteAttempt(30 * time.Second) // one server that hangs for the timeout
	if n := w.claimAhead(); n != 0 {
		t.Fatalf("after a 30 s attempt: %d ahead, want 0", n)
	}
	for range 60 {
		w.noteAttempt(10 * time.Millisecond)
	}
	if n := w.claimAhead(); n != 8 {
		t.Fatalf("after quick attempts again: %d ahead, want 8", n)
	}
}
