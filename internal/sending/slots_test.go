package sending

import (
	"context"
	"testing"
	"time"
)

// An attempt whose outcome is known hands its slot to the next attempt and
// waits for its commit in an outcome slot; with every outcome slot taken,
// the next outcome waits (holding its attempt slot), so at most 2n
// deliveries are sent and not yet recorded.
func TestSlotsHandOverWhileRecording(t *testing.T) {
	t.Parallel()
	s := newSlots(1)
	first := s.take()
	if s.free() != 0 {
		t.Fatalf("free = %d with the one slot taken", s.free())
	}
	first.record()
	if s.free() != 1 {
		t.Fatalf("free = %d after the outcome is known, want the slot handed over", s.free())
	}
	select {
	case <-s.freed:
	default:
		t.Fatal("handing the slot over did not signal the worker loop")
	}
	first.record() // finish after a panic in complete: nothing more to hand over

	second := s.take() // does not wait: the first attempt only records now
	recorded := make(chan struct{})
	go func() { second.record(); close(recorded) }()
	select {
	case <-recorded:
		t.Fatal("a second outcome went into the one outcome slot while the first still waits for its commit")
	case <-time.After(50 * time.Millisecond):
	}
	if s.free() != 0 {
		t.Fatalf("free = %d while the second attempt waits to record, want 0 (it keeps its attempt slot)", s.free())
	}
	first.release()
	select {
	case <-recorded:
	case <-time.After(5 * time.Second):
		t.Fatal("the second outcome did not get the outcome slot the first released")
	}
	second.release()
	if s.free() != 1 || len(s.recording) != 0 {
		t.Fatalf("after both: free = %d, outcome slots held = %d; want 1 and 0", s.free(), len(s.recording))
	}

	third := s.take() // an attempt that ends without an outcome (rate-limited, stopping)
	third.release()
	if s.free() != 1 {
		t.Fatalf("free = %d after an attempt without an outcome, want 1", s.free())
	}
	slotOf(context.Background()).record() // outside an attempt: nothing to hand over
}
