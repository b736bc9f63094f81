package sending

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/suppression"
)

// gate is a commit function that records its groups and, while holding
// is set, blocks each commit until released.
type gate struct {
	mu      sync.Mutex
	groups  [][]int
	fail    func(jobs []int) error
	entered chan struct{}
	release chan struct{}
}

func newGate() *gate {
	return &gate{entered: make(chan struct{}, 100), release: make(chan struct{}, 100)}
}

func (g *gate) commit(_ context.Context, jobs []int) error {
	g.mu.Lock()
	g.groups = append(g.groups, slices.Clone(jobs))
	g.mu.Unlock()
	g.entered <- struct{}{}
	<-g.release
	if g.fail != nil {
		return g.fail(jobs)
	}
	return nil
}

func TestGroupCommitLoneCallCommitsAtOnce(t *testing.T) {
	t.Parallel()
	g := newGate()
	g.release <- struct{}{}
	b := &groupCommit[int]{max: 8, commit: g.commit}
	if err := b.do(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(g.groups, [][]int{{1}}, slices.Equal) {
		t.Fatalf("groups = %v, want [[1]]", g.groups)
	}
}

// Calls that arrive while a group commits form the next group, up to max;
// each returns only after its own group committed.
func TestGroupCommitGroupsWaitingCalls(t *testing.T) {
	t.Parallel()
	g := newGate()
	b := &groupCommit[int]{max: 3, commit: g.commit}
	errs := make(chan error, 10)
	go func() { errs <- b.do(context.Background(), 0) }()
	<-g.entered // 0 commits alone and is held
	for i := 1; i <= 4; i++ {
		go func() { errs <- b.do(context.Background(), i) }()
	}
	waitQueued(t, b, 4)
	g.release <- struct{}{} // 0 done; the oldest waiting call leads 3 of the 4
	<-g.entered
	g.release <- struct{}{}
	<-g.entered
	g.release <- struct{}{}
	for range 5 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if len(g.groups) != 3 || len(g.groups[0]) != 1 || len(g.groups[1]) != 3 || len(g.groups[2]) != 1 {
		t.Fatalf("groups = %v, want sizes 1, 3, 1", g.groups)
	}
	var all []int
	for _, gr := range g.groups {
		all = append(all, gr...)
	}
	slices.Sort(all)
	if !slices.Equal(all, []int{0, 1, 2, 3, 4}) {
		t.Fatalf("committed %v, want each of 0..4 once", all)
	}
}

// A failed group tells every member to retry alone; a lone call gets the
// error itself.
func TestGroupCommitFailedGroup(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	g := newGate()
	g.fail = func([]int) error { return boom }
	b := &groupCommit[int]{max: 8, commit: g.commit}
	errs := make(chan error, 10)
	go func() { errs <- b.do(context.Background(), 0) }()
	<-g.entered
	for i := 1; i <= 2; i++ {
		go func() { errs <- b.do(context.Background(), i) }()
	}
	waitQueued(t, b, 2)
	g.release <- struct{}{}
	if err := <-errs; !errors.Is(err, boom) {
		t.Fatalf("lone call's error = %v, want boom", err)
	}
	<-g.entered
	g.release <- struct{}{}
	for range 2 {
		if err := <-errs; !errors.Is(err, errRetryAlone) {
			t.Fatalf("group member's error = %v, want errRetryAlone", err)
		}
	}
}

func waitQueued(t *testing.T, b *groupCommit[int], n int) {
	t.Helper()
	for {
		b.mu.Lock()
		q := len(b.queue)
		b.mu.Unlock()
		if q >= n {
			return
		}
		select {
		case <-t.Context().Done():
			t.Fatal("calls never queued")
		default:
		}
		runtime.Gosched()
	}
}

// outcomeStore fails every CompleteMany of more than one outcome and
// records what Complete wrote.
type outcomeStore struct {
	Store
	mu       sync.Mutex
	many     int
	single   []int64
	lostID   int64
	inCommit chan struct{}
	release  chan struct{}
}

func (s *outcomeStore) CompleteMany(_ context.Context, _ string, cs []Completion) ([]bool, error) {
	s.mu.Lock()
	s.many++
	s.mu.Unlock()
	if len(cs) == 1 && cs[0].ID == 1 { // the first, held open so that others queue behind it
		s.inCommit <- struct{}{}
		<-s.release
		return []bool{true}, nil
	}
	return nil, errors.New("constraint violated by one of the outcomes")
}

func (s *outcomeStore) Complete(_ context.Context, id int64, _ string, _ Outcome, _ []event.Entry, _ *suppression.Entry) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.single = append(s.single, id)
	return id != s.lostID, nil
}

// When a group of outcomes fails, each outcome is written on its own, and
// each caller learns its own lease verdict.
func TestWorkerCompleteFallsBackAlone(t *testing.T) {
	t.Parallel()
	st := &outcomeStore{lostID: 3, inCommit: make(chan struct{}), release: make(chan struct{})}
	w := &Worker{store: st, owner: "w"}
	w.completes = w.newCompleter()
	type res struct {
		id   int64
		held bool
		err  error
	}
	out := make(chan res, 3)
	run := func(id int64) {
		held, err := w.complete(context.Background(), Completion{ID: id, Outcome: Outcome{State: StateDelivered}})
		out <- res{id, held, err}
	}
	go run(1)
	<-st.inCommit
	go run(2)
	go run(3)
	for {
		w.completes.mu.Lock()
		q := len(w.completes.queue)
		w.completes.mu.Unlock()
		if q == 2 {
			break
		}
		runtime.Gosched()
	}
	close(st.release)
	got := map[int64]res{}
	for range 3 {
		r := <-out
		got[r.id] = r
	}
	if r := got[1]; !r.held || r.err != nil {
		t.Errorf("outcome 1 = %+v, want held", r)
	}
	if r := got[2]; !r.held || r.err != nil {
		t.Errorf("outcome 2 = %+v, want held (written alone)", r)
	}
	if r := got[3]; r.held || r.err != nil {
		t.Errorf("outcome 3 = %+v, want not held (its lease was lost)", r)
	}
	slices.Sort(st.single)
	if !slices.Equal(st.single, []int64{2, 3}) || st.many != 2 {
		t.Errorf("Complete for %v after %d CompleteMany calls; want 2 and 3 alone after 2 calls", st.single, st.many)
	}
}

// A group whose commit panics (someone's job is bad) gives every member,
// the leader included, errRetryAlone; a lone job that panics panics its
// own caller; the group commit keeps working after both.
func TestGroupCommitSurvivesPanickingCommit(t *testing.T) {
	t.Parallel()
	g := newGate()
	g.fail = func(jobs []int) error {
		if slices.Contains(jobs, 2) {
			panic("bad job 2")
		}
		return nil
	}
	b := &groupCommit[int]{max: 8, commit: g.commit}
	first := make(chan error, 1)
	go func() { first <- b.do(context.Background(), 1) }()
	<-g.entered // job 1 leads alone; jobs 2 and 3 queue behind it
	errs := make(chan error, 2)
	for _, j := range []int{2, 3} {
		go func() { errs <- b.do(context.Background(), j) }()
	}
	waitQueued(t, b, 2)
	g.release <- struct{}{} // job 1 commits; [2 3] leads next
	if err := <-first; err != nil {
		t.Fatalf("job 1: %v", err)
	}
	<-g.entered
	g.release <- struct{}{} // the group [2 3] panics
	for range 2 {
		if err := <-errs; !errors.Is(err, errRetryAlone) {
			t.Errorf("member of the panicking group: %v, want errRetryAlone", err)
		}
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("a lone bad job did not panic its caller")
			}
		}()
		g.release <- struct{}{}
		b.do(context.Background(), 2)
	}()
	<-g.entered
	done := make(chan error, 1)
	go func() { g.release <- struct{}{}; done <- b.do(context.Background(), 4) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("after the panics: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the group commit is wedged after a panicking commit")
	}
}

// The group commits even when the leader's request is cancelled.
func TestGroupCommitIgnoresLeaderCancellation(t *testing.T) {
	t.Parallel()
	b := &groupCommit[int]{max: 8, commit: func(ctx context.Context, jobs []int) error { return ctx.Err() }}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.do(ctx, 1); err != nil {
		t.Fatalf("commit under a cancelled leader: %v", err)
	}
}

// recordingStore keeps the outcomes written.
type recordingStore struct {
	Store
	mu  sync.Mutex
	got []Completion
}

func (s *recordingStore) CompleteMany(_ context.Context, _ string, cs []Completion) ([]bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, cs...)
	return make([]bool, len(cs)), nil
}

// An attempt that panics fails its delivery (reason internal_error) and
// the worker goes on: it must not take the process, and with it every
// other delivery in flight, down.
func TestPanickingAttemptFailsItsDelivery(t *testing.T) {
	t.Parallel()
	st := &recordingStore{}
	w := NewWorker(WorkerConfig{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, st, event.NewService(nil, event.Config{}),
		nil, nil, nil, nil) // no domain service: loading the domain panics
	w.safeAttempt(context.Background(), Delivery{ID: 7, DomainID: 1, Recipient: "x@example.net"}, prefetched{})
	if len(st.got) != 1 || st.got[0].ID != 7 || st.got[0].Outcome.State != StateFailed ||
		len(st.got[0].Entries) != 1 || !strings.Contains(string(st.got[0].Entries[0].Details), `"internal_error"`) {
		t.Fatalf("outcomes after a panicking attempt: %+v", st.got)
	}
}

// A lingering leader waits for company, and commits as soon as the group
// is full rather than when the linger runs out.
func TestGroupCommitLingersUntilFull(t *testing.T) {
	t.Parallel()
	g := newGate()
	for range 3 {
		g.release <- struct{}{}
	}
	b := &groupCommit[int]{max: 8, commit: g.commit, linger: time.Minute, full: 3}
	start := time.Now()
	errs := make(chan error, 3)
	for j := 1; j <= 3; j++ {
		go func() { errs <- b.do(context.Background(), j) }()
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if len(g.groups) != 1 || len(g.groups[0]) != 3 {
		t.Fatalf("groups = %v, want the three calls in one", g.groups)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("a full group committed after %v: it waited out the linger", d)
	}
}

// A lone call commits alone once the linger runs out.
func TestGroupCommitLingerEnds(t *testing.T) {
	t.Parallel()
	g := newGate()
	g.release <- struct{}{}
	b := &groupCommit[int]{max: 8, commit: g.commit, linger: 20 * time.Millisecond, full: 8}
	start := time.Now()
	if err := b.do(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Fatalf("committed after %v, before the linger of 20ms ran out", d)
	}
	if !slices.EqualFunc(g.groups, [][]int{{1}}, slices.Equal) {
		t.Fatalf("groups = %v, want [[1]]", g.groups)
	}
}

// An adaptive group commit (full 0) never keeps a lone caller waiting: after a
// group of one, the next leader commits at once.
func TestGroupCommitAdaptiveLingerSkipsALoneCaller(t *testing.T) {
	t.Parallel()
	g := newGate()
	g.release <- struct{}{}
	g.release <- struct{}{}
	b := &groupCommit[int]{max: 8, commit: g.commit, linger: time.Minute}
	done := make(chan error, 1)
	go func() {
		if err := b.do(context.Background(), 1); err != nil {
			done <- err
			return
		}
		done <- b.do(context.Background(), 2)
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a lone caller waited for company that could not come")
	}
	if !slices.EqualFunc(g.groups, [][]int{{1}, {2}}, slices.Equal) {
		t.Fatalf("groups = %v, want [[1] [2]]", g.groups)
	}
}

// Under concurrent load an adaptive group commit waits for up to twice its last
// group, and commits as soon as that many are queued.
func TestGroupCommitAdaptiveLingerWaitsForTwiceTheLastGroup(t *testing.T) {
	t.Parallel()
	g := newGate()
	b := &groupCommit[int]{max: 8, commit: g.commit, linger: time.Minute}
	// A group of two: job 1 commits alone (gated) while 2 and 3 queue.
	first := make(chan error, 1)
	go func() { first <- b.do(context.Background(), 1) }()
	<-g.entered
	errs := make(chan error, 8)
	for j := 2; j <= 3; j++ {
		go func() { errs <- b.do(context.Background(), j) }()
	}
	waitQueued(t, b, 2)
	g.release <- struct{}{} // [1] commits; [2 3] leads and does not linger (the last group was alone)
	<-g.entered
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	// While [2 3] commits, job 4 queues; it then leads after a group of
	// two, so it waits for four calls: 5, 6 and 7 arrive and end the wait.
	go func() { errs <- b.do(context.Background(), 4) }()
	waitQueued(t, b, 1)
	g.release <- struct{}{}
	for j := 5; j <= 7; j++ {
		go func() { errs <- b.do(context.Background(), j) }()
	}
	<-g.entered
	g.release <- struct{}{}
	for range 6 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if len(g.groups) != 3 || len(g.groups[1]) != 2 || len(g.groups[2]) != 4 || g.groups[2][0] != 4 {
		t.Fatalf("groups = %v, want [1] [2 3] [4 ...] with four in the last", g.groups)
	}
}
