package event

import (
	"context"
	"sync"
	"testing"
	"time"
)

// pruneStore records Prune calls; nothing else is used by the Pruner.
type pruneStore struct {
	Store
	mu       sync.Mutex
	calls    []time.Time
	compacts []time.Time
	called   chan struct{}
}

func (s *pruneStore) CompactCounts(_ context.Context, before time.Time) error {
	s.mu.Lock()
	s.compacts = append(s.compacts, before)
	s.mu.Unlock()
	select {
	case s.called <- struct{}{}:
	default:
	}
	return nil
}

func (s *pruneStore) Prune(_ context.Context, before time.Time, batch int) (int64, error) {
	s.mu.Lock()
	s.calls = append(s.calls, before)
	s.mu.Unlock()
	select {
	case s.called <- struct{}{}:
	default:
	}
	return 3, nil
}

func TestPrunerRunOnce(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	st := &pruneStore{called: make(chan struct{}, 1)}
	var with []time.Time
	p := NewPruner(st, PrunerConfig{Retention: 30 * 24 * time.Hour, Now: func() time.Time { return now },
		Also: []PruneFunc{func(_ context.Context, before time.Time, _ int) (int64, error) {
			with = append(with, before)
			return 0, nil
		}}})
	n, err := p.runOnce(context.Background())
	if err != nil || n != 3 {
		t.Fatalf("runOnce = %d, %v; want 3", n, err)
	}
	if want := now.Add(-30 * 24 * time.Hour); len(with) != 1 || !with[0].Equal(want) {
		t.Fatalf("the content kept with the log pruned with %v, want [%s]", with, want)
	}
	if want := now.Add(-30 * 24 * time.Hour); len(st.calls) != 1 || !st.calls[0].Equal(want) {
		t.Fatalf("Prune called with %v, want [%s]", st.calls, want)
	}
	if want := now.Add(-2 * time.Hour); len(st.compacts) != 1 || !st.compacts[0].Equal(want) {
		t.Fatalf("CompactCounts called with %v, want [%s]", st.compacts, want)
	}
}

func TestPrunerLifecycle(t *testing.T) {
	t.Parallel()
	st := &pruneStore{called: make(chan struct{}, 1)}
	p := NewPruner(st, PrunerConfig{Retention: time.Hour, Interval: time.Hour})
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-st.called: // the first pass runs at once
	case <-time.After(5 * time.Second):
		t.Fatal("Start ran no pass")
	}
	p.Stop()

	// Retention 0 keeps every entry; the counts are still compacted.
	off := &pruneStore{called: make(chan struct{}, 1)}
	q := NewPruner(off, PrunerConfig{Retention: 0})
	if err := q.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-off.called
	q.Stop()
	if len(off.calls) != 0 || len(off.compacts) == 0 {
		t.Fatalf("retention 0: pruned %v, compacted %v; want no pruning, a compaction", off.calls, off.compacts)
	}
}

// The records kept for the log's retention (the audit log) are pruned at
// the same cutoff, batch after batch until one is not full.
func TestPrunerAlso(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	var cuts []time.Time
	left := int64(25)
	also := func(_ context.Context, before time.Time, batch int) (int64, error) {
		cuts = append(cuts, before)
		n := min(left, int64(batch))
		left -= n
		return n, nil
	}
	p := NewPruner(&pruneStore{called: make(chan struct{}, 1)}, PrunerConfig{Retention: 24 * time.Hour, Batch: 10,
		Also: []PruneFunc{also}, Now: func() time.Time { return now }})
	if _, err := p.runOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if left != 0 || len(cuts) != 3 || !cuts[0].Equal(now.Add(-24*time.Hour)) {
		t.Fatalf("Also called at %v, %d rows left; want three batches at %s", cuts, left, now.Add(-24*time.Hour))
	}
	off := NewPruner(&pruneStore{called: make(chan struct{}, 1)}, PrunerConfig{Also: []PruneFunc{also}})
	cuts = nil
	if _, err := off.runOnce(context.Background()); err != nil || len(cuts) != 0 {
		t.Fatalf("with retention 0 (keep) Also was called: %v %v", cuts, err)
	}
}
