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
	first := mustTake(t, s)
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

	second := mustTake(t, s) // does not wait: the first attempt only records now
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

	third := mustTake(t, s) // an attempt that ends without an outcome (rate-limited, stopping)
	third.release()
	if s.free() != 1 {
		t.Fatalf("free = %d after an attempt without an outcome, want 1", s.free())
	}
	slotOf(context.Background()).record() // outside an attempt: nothing to hand over
}

func mustTake(t *testing.T, s *slots) *slot {
	t.Helper()
	h, ok := s.take(context.Background())
	if !ok {
		t.Fatal("take failed without a cancelled context")
	}
	return h
}

// The starter waits for a slot, and stops waiting when the worker stops.
func TestSlotsTakeWaitsUntilStopped(t *testing.T) {
	t.Parallel()
	s := newSlots(1)
	held := mustTake(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan bool)
	go func() { _, ok := s.take(ctx); got <- ok }()
	select {
	case <-got:
		t.Fatal("took a second slot of one")
	case <-time.After(50 * time.Millisecond):
	}
	cancel()
	if ok := <-got; ok {
		t.Fatal("take succeeded after the worker stopped")
	}
	held.release()
	if _, ok := s.take(ctx); ok || s.free() != 1 {
		t.Fatalf("with a free slot and a stopped worker: took = %v, free = %d; want no attempt started", ok, s.free())
	}
}

// An attempt waiting for its turn under its site's limits hands its slot
// to the next attempt (and signals the worker loop), and takes one again
// when its turn comes, waiting while the slots are busy: at most n
// attempts build or send at once, and its outcome takes an outcome slot as
// any other, so what is sent and not yet recorded stays at most 2n.
func TestSlotsHandOverWhileWaitingForTurn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newSlots(1)
	waiting := mustTake(t, s)
	waiting.wait()
	if s.free() != 1 {
		t.Fatalf("free = %d while the attempt waits for its turn, want its slot handed over", s.free())
	}
	select {
	case <-s.freed:
	default:
		t.Fatal("handing the slot over did not signal the worker loop")
	}
	waiting.wait() // a second wait gives nothing back twice
	if s.free() != 1 {
		t.Fatalf("free = %d after a second wait, want 1", s.free())
	}

	next := mustTake(t, s) // does not wait: the first only waits for its turn
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := waiting.resume(cancelled); err == nil {
		t.Fatal("resume took a slot while the one slot was busy")
	}
	resumed := make(chan error, 1)
	go func() { resumed <- waiting.resume(ctx) }()
	select {
	case <-resumed:
		t.Fatal("the attempt whose turn came sends while the one slot is busy")
	case <-time.After(50 * time.Millisecond):
	}
	next.record() // sent: its slot goes to the attempt whose turn came
	if err := <-resumed; err != nil {
		t.Fatal(err)
	}
	if s.free() != 0 {
		t.Fatalf("free = %d once the attempt resumed, want 0", s.free())
	}
	if err := next.resume(ctx); err != nil || s.free() != 0 {
		t.Fatalf("resume of an attempt that never waited = %v, free = %d; want nil and nothing taken", err, s.free())
	}
	recorded := make(chan struct{})
	go func() { waiting.record(); close(recorded) }()
	select {
	case <-recorded:
		t.Fatal("a second outcome went into the one outcome slot while the first still waits for its commit")
	case <-time.After(50 * time.Millisecond):
	}
	next.release()
	<-recorded
	waiting.release()
	if s.free() != 1 || len(s.recording) != 0 {
		t.Fatalf("after both: free = %d, outcome slots held = %d; want 1 and 0", s.free(), len(s.recording))
	}

	gaveUp := mustTake(t, s) // waited, then its turn did not come: no outcome
	gaveUp.wait()
	gaveUp.release()
	if s.free() != 1 || len(s.recording) != 0 {
		t.Fatalf("after an attempt that waited without an outcome: free = %d, outcome slots held = %d; want 1 and 0",
			s.free(), len(s.recording))
	}
	var none *slot // an attempt outside a worker (tests calling attempt directly)
	none.wait()
	if err := none.resume(ctx); err != nil {
		t.Fatal(err)
	}
}
