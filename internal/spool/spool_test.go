package spool_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/postline/postline/internal/spool"
)

func files(t *testing.T, dir string) int {
	t.Helper()
	e, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return len(e)
}

func content(size int) []byte {
	return bytes.Repeat([]byte("0123456789abcdef"), size/16+1)[:size]
}

// empty checks that nothing is held and no file is left.
func empty(t *testing.T, sp *spool.Spool) {
	t.Helper()
	if u := sp.Usage(); u != (spool.Usage{}) {
		t.Fatalf("usage %+v once every body is closed, want none", u)
	}
	if n := files(t, sp.Config().Dir); n != 0 {
		t.Fatalf("%d files left once every body is closed", n)
	}
}

func TestReadSpoolsPastBodyMemory(t *testing.T) {
	t.Parallel()
	for _, size := range []int{0, 1000, spool.BodyMemory, spool.BodyMemory + 1, 3*spool.BodyMemory + 12345} {
		sp := spool.New(spool.Config{Dir: t.TempDir()})
		want := content(size)
		b, err := sp.Read(bytes.NewReader(want))
		if err != nil {
			t.Fatal(err)
		}
		if n, spooled := files(t, sp.Config().Dir), size > spool.BodyMemory; (n == 1) != spooled {
			t.Fatalf("%d bytes: %d files in the spool directory, want spooled=%v", size, n, spooled)
		}
		got, err := b.Bytes(context.Background())
		if err != nil || !bytes.Equal(got, want) || b.Len() != int64(size) {
			t.Fatalf("%d bytes: read back %d bytes (Len %d, %v), want them all", size, len(got), b.Len(), err)
		}
		b.Close()
		b.Close() // twice is harmless
		empty(t, sp)
	}
}

// A body that stops short of its end (a client gone mid-DATA) returns the
// reader's error and leaves no file and nothing held.
func TestReadFailureLeavesNothing(t *testing.T) {
	t.Parallel()
	for _, size := range []int{1000, 2 * spool.BodyMemory} {
		sp := spool.New(spool.Config{Dir: t.TempDir()})
		broken := errors.New("connection reset")
		r := io.MultiReader(bytes.NewReader(make([]byte, size)), iotestErr{broken})
		if _, err := sp.Read(r); !errors.Is(err, broken) {
			t.Fatalf("%d bytes: Read = %v, want the reader's error", size, err)
		}
		empty(t, sp)
	}
}

type iotestErr struct{ err error }

func (e iotestErr) Read([]byte) (int, error) { return 0, e.err }

// bufferCost is what a body of n bytes in memory takes of the memory
// budget: its buffer (doubled from SmallBody) less the SmallBody outside
// the budget.
func bufferCost(n int) int64 {
	c := spool.SmallBody
	for c < n {
		c *= 2
	}
	return int64(c - spool.SmallBody)
}

// Past the memory budget, later bodies go to disk from their first byte
// past SmallBody, and a body under way goes to disk when it would need
// more memory; its memory comes back at once, and closing a body makes
// room again.
func TestMemoryBudgetSpillsLaterBodies(t *testing.T) {
	t.Parallel()
	const budget = 3 << 20
	sp := spool.New(spool.Config{Dir: t.TempDir(), Memory: budget})
	var held []*spool.Body
	defer func() {
		for _, b := range held {
			b.Close()
		}
	}()
	// Three bodies of 900 KiB hold a 1 MiB buffer each: nearly the whole budget.
	for i := range 3 {
		b, err := sp.Read(bytes.NewReader(content(900 << 10)))
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, b)
		if n := files(t, sp.Config().Dir); n != 0 {
			t.Fatalf("body %d: %d files, want it in memory", i, n)
		}
	}
	full := 3 * bufferCost(900<<10)
	if u := sp.Usage(); u.Memory != full || budget-full != 3*spool.SmallBody {
		t.Fatalf("memory in use %d, want %d (the budget less three SmallBody)", u.Memory, full)
	}
	// A fourth grows its buffer into the 12 KiB left (to 16 KiB), then
	// goes to disk.
	fourth := content(100 << 10)
	b, err := sp.Read(bytes.NewReader(fourth))
	if err != nil {
		t.Fatal(err)
	}
	if n, u := files(t, sp.Config().Dir), sp.Usage(); n != 1 || u.Memory != full || u.Disk != int64(len(fourth)) {
		t.Fatalf("past the budget: %d files, usage %+v, want the fourth body on disk", n, u)
	}
	if got, err := b.Bytes(context.Background()); err != nil || !bytes.Equal(got, fourth) {
		t.Fatalf("read back %d bytes, %v", len(got), err)
	}
	b.Close()
	// Closing one frees its memory for the next.
	held[0].Close()
	held = held[1:]
	b, err = sp.Read(bytes.NewReader(fourth))
	if err != nil {
		t.Fatal(err)
	}
	held = append(held, b)
	if n := files(t, sp.Config().Dir); n != 0 {
		t.Fatalf("after a close: %d files, want the body in memory", n)
	}
	for _, b := range held {
		b.Close()
	}
	held = nil
	empty(t, sp)
}

// An unfinished body holding some memory moves to disk the moment it
// would need more than the budget has left.
func TestUnfinishedBodySpillsWhenBudgetRunsOut(t *testing.T) {
	t.Parallel()
	sp := spool.New(spool.Config{Dir: t.TempDir(), Memory: spool.BodyMemory + 256<<10})
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	var slow *spool.Body
	go func() {
		var err error
		slow, err = sp.Read(pr)
		done <- err
	}()
	want := content(300 << 10)
	pw.Write(want[:200<<10]) // returns once read: the body holds a 256 KiB buffer
	if u := sp.Usage(); u.Memory != bufferCost(200<<10) {
		t.Fatalf("memory in use %d after 200 KiB, want %d", u.Memory, bufferCost(200<<10))
	}
	other, err := sp.Read(bytes.NewReader(content(900 << 10)))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	pw.Write(want[200<<10:]) // needs a 512 KiB buffer: no room
	if n, u := files(t, sp.Config().Dir), sp.Usage(); n != 1 || u.Memory != bufferCost(900<<10) {
		t.Fatalf("%d files, usage %+v; want the unfinished body on disk and its memory given back", n, u)
	}
	pw.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got, err := slow.Bytes(context.Background())
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read back %d bytes, %v, want the %d sent", len(got), err, len(want))
	}
	slow.Close()
	other.Close()
	empty(t, sp)
}

// Past the disk budget a body is refused with ErrFull and nothing of it is
// left; once room is made, the same body is taken.
func TestDiskBudgetFull(t *testing.T) {
	t.Parallel()
	sp := spool.New(spool.Config{Dir: t.TempDir(), Memory: 1, MaxBytes: 2 << 20}) // everything on disk
	first, err := sp.Read(bytes.NewReader(content(1536 << 10)))
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{1 << 20, 600 << 10} {
		if _, err := sp.Read(bytes.NewReader(content(size))); !errors.Is(err, spool.ErrFull) {
			t.Fatalf("%d bytes past the disk budget: %v, want ErrFull", size, err)
		}
		if n, u := files(t, sp.Config().Dir), sp.Usage(); n != 1 || u.Disk != 1536<<10 {
			t.Fatalf("after a refusal: %d files, usage %+v, want only the first body's", n, u)
		}
	}
	second, err := sp.Read(bytes.NewReader(content(512 << 10))) // exactly the rest
	if err != nil {
		t.Fatalf("a body that fits: %v", err)
	}
	// Both budgets are used up: a small body (a form field, a short
	// message) is still taken, in memory.
	want := content(spool.SmallBody - 1)
	small, got, err := sp.ReadAll(context.Background(), bytes.NewReader(want))
	if err != nil || !bytes.Equal(got, want) || files(t, sp.Config().Dir) != 2 {
		t.Fatalf("a small body with both budgets used up: %v, want it in memory", err)
	}
	small.Close()
	second.Close()
	first.Close()
	b, err := sp.Read(bytes.NewReader(content(1 << 20)))
	if err != nil {
		t.Fatalf("after room was made: %v", err)
	}
	b.Close()
	empty(t, sp)
}

// Bodies read back from disk take their size from the processing budget:
// another waits at most Wait, then ErrBusy; a body larger than the budget
// takes all of it; bodies in memory take none; Close gives it back.
func TestProcessingBudget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const wait = 100 * time.Millisecond
	sp := spool.New(spool.Config{Dir: t.TempDir(), MaxBytes: 64 << 20, ProcessingMemory: 2 << 20, Wait: wait})
	read := func(size int) *spool.Body {
		t.Helper()
		b, err := sp.Read(bytes.NewReader(content(size)))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a := read(1536 << 10)
	if _, err := a.Bytes(ctx); err != nil {
		t.Fatal(err)
	}
	if u := sp.Usage(); u.Processing != 1536<<10 || u.Disk != 0 {
		t.Fatalf("usage %+v, want 1.5 MiB processing and the file gone once read", u)
	}
	inMemory := read(900 << 10)
	if _, err := inMemory.Bytes(ctx); err != nil {
		t.Fatalf("a body in memory: %v, want it without waiting", err)
	}
	inMemory.Close()
	b := read(spool.BodyMemory + 1)
	start := time.Now()
	if _, err := b.Bytes(ctx); !errors.Is(err, spool.ErrBusy) {
		t.Fatalf("past the processing budget: %v, want ErrBusy", err)
	}
	if took := time.Since(start); took < wait || took > wait+time.Second {
		t.Fatalf("refused after %v, want after the wait of %v", took, wait)
	}
	b.Close()
	a.Close()
	huge := read(3 << 20) // more than the whole budget: takes all of it
	got, err := huge.Bytes(ctx)
	if err != nil || len(got) != 3<<20 {
		t.Fatalf("a body larger than the budget: %d bytes, %v", len(got), err)
	}
	small := read(spool.BodyMemory + 10)
	if _, err := small.Bytes(ctx); !errors.Is(err, spool.ErrBusy) {
		t.Fatalf("while a larger-than-budget body is processed: %v, want ErrBusy", err)
	}
	huge.Close()
	if _, err := small.Bytes(ctx); err != nil {
		t.Fatalf("once it is closed: %v", err)
	}
	small.Close()
	empty(t, sp)
}

// A reader waiting for the processing budget gives up with its context.
func TestProcessingWaitEndsWithContext(t *testing.T) {
	t.Parallel()
	sp := spool.New(spool.Config{Dir: t.TempDir(), ProcessingMemory: 2 << 20, Wait: time.Minute})
	hold, _, err := sp.ReadAll(context.Background(), bytes.NewReader(content(3<<20)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if b, _, err := sp.ReadAll(ctx, bytes.NewReader(content(2<<20))); !errors.Is(err, spool.ErrBusy) || b != nil {
		t.Fatalf("ReadAll = %v, want ErrBusy and no body", err)
	}
	if n := files(t, sp.Config().Dir); n != 0 {
		t.Fatalf("%d files left by a refused ReadAll", n)
	}
	hold.Close()
	empty(t, sp)
}

// Many bodies at once, some refused, never pass a budget, read back what
// was sent, and leave nothing once closed (run with -race).
func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	cfg := spool.Config{Dir: t.TempDir(), Memory: 4 << 20, MaxBytes: 12 << 20, ProcessingMemory: 6 << 20, Wait: 50 * time.Millisecond}
	sp := spool.New(cfg)
	var wg sync.WaitGroup
	var mu sync.Mutex
	outcomes := map[string]int{}
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			size := rand.IntN(3 << 20)
			want := content(size)
			b, got, err := sp.ReadAll(context.Background(), io.MultiReader(bytes.NewReader(want[:size/2]), bytes.NewReader(want[size/2:])))
			outcome := "ok"
			switch {
			case errors.Is(err, spool.ErrFull):
				outcome = "full"
			case errors.Is(err, spool.ErrBusy):
				outcome = "busy"
			case err != nil:
				t.Errorf("body %d: %v", i, err)
				return
			case !bytes.Equal(got, want):
				t.Errorf("body %d: read back %d bytes, want the %d sent", i, len(got), size)
			}
			if u := sp.Usage(); u.Memory > cfg.Memory || u.Disk > cfg.MaxBytes || u.Processing > cfg.ProcessingMemory {
				t.Errorf("usage %+v passes a budget of %+v", u, cfg)
			}
			time.Sleep(time.Millisecond)
			b.Close()
			mu.Lock()
			outcomes[outcome]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	t.Logf("outcomes: %v", outcomes)
	if outcomes["ok"] == 0 {
		t.Fatalf("no body was taken: %v", outcomes)
	}
	empty(t, sp)
}

func TestSweepRemovesOnlyStaleSpoolFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	old, fresh, other := dir+"/spool-1", dir+"/spool-2", dir+"/postline.db"
	for _, p := range []string{old, fresh, other} {
		os.WriteFile(p, []byte("x"), 0o600)
	}
	past := time.Now().Add(-3 * time.Hour)
	os.Chtimes(old, past, past)
	os.Chtimes(other, past, past)
	if n, err := spool.Sweep(dir, 2*time.Hour); n != 1 || err != nil {
		t.Fatalf("Sweep = %d, %v, want 1 removed", n, err)
	}
	for p, want := range map[string]bool{old: false, fresh: true, other: true} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Fatalf("%s exists = %v, want %v", p, err == nil, want)
		}
	}
}

// TestShareKeepsTheRestForOthers: a door's Share of half the budgets
// (inbound SMTP, which needs no login) is refused past its half while the
// spool as a whole still takes bodies from the other doors, and what the
// share holds counts in the whole.
func TestShareKeepsTheRestForOthers(t *testing.T) {
	t.Parallel()
	sp := spool.New(spool.Config{Dir: t.TempDir(), Memory: 1, MaxBytes: 4 << 20})
	inbound := sp.Share(0.5)
	held, err := inbound.Read(bytes.NewReader(content(2 << 20)))
	if err != nil {
		t.Fatalf("a body within the share: %v", err)
	}
	if _, err := inbound.Read(bytes.NewReader(content(256 << 10))); !errors.Is(err, spool.ErrFull) {
		t.Fatalf("a body past the share's half: %v, want ErrFull", err)
	}
	if u := sp.Usage(); u.Disk != 2<<20 {
		t.Fatalf("the whole spool counts %d bytes on disk, want the share's 2 MiB", u.Disk)
	}
	other, err := sp.Read(bytes.NewReader(content(2 << 20)))
	if err != nil {
		t.Fatalf("another door's body with the share full: %v, want taken", err)
	}
	if _, err := sp.Read(bytes.NewReader(content(256 << 10))); !errors.Is(err, spool.ErrFull) {
		t.Fatalf("past the whole budget: %v, want ErrFull", err)
	}
	held.Close()
	other.Close()
	if u := sp.Usage(); u.Disk != 0 {
		t.Fatalf("after closing: %d bytes still counted", u.Disk)
	}
}
