package background

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A loop passes at Start unless told to wait, and a loop that waits does
// not pass before its first interval.
func TestLoopPassesAtStartUnlessItWaits(t *testing.T) {
	t.Parallel()
	for _, wait := range []bool{false, true} {
		var passes atomic.Int32
		passed := make(chan struct{}, 1)
		l := &Loop{Every: time.Hour, Wait: wait, Pass: func(context.Context) { passes.Add(1); passed <- struct{}{} }}
		l.Start(context.Background())
		if !wait {
			<-passed
		}
		l.Stop()
		if got, want := passes.Load(), map[bool]int32{false: 1, true: 0}[wait]; got != want {
			t.Errorf("Wait %v: %d passes before the first interval, want %d", wait, got, want)
		}
	}
}

// Stop cancels the pass under way and returns only once it has ended, so
// that nothing a loop does outlives Stop.
func TestStopWaitsForThePassUnderWay(t *testing.T) {
	t.Parallel()
	var ended atomic.Bool
	running := make(chan struct{})
	l := &Loop{Every: time.Hour, Pass: func(ctx context.Context) {
		close(running)
		<-ctx.Done()
		ended.Store(true)
	}}
	l.Start(context.Background())
	<-running
	l.Stop()
	if !ended.Load() {
		t.Fatal("Stop returned while a pass was still running")
	}
}

func TestSweepLogs(t *testing.T) {
	t.Parallel()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		name string
		ctx  context.Context
		n    int64
		err  error
		want string // "" for nothing logged
	}{
		{"a failure", context.Background(), 0, errors.New("disk gone"), `level=WARN msg="sweep failed" error="disk gone"`},
		{"a failure while stopping", cancelled, 0, context.Canceled, ""},
		{"rows swept", context.Background(), 3, nil, `level=DEBUG msg="swept rows" count=3`},
		{"nothing to sweep", context.Background(), 0, nil, ""},
	} {
		var buf bytes.Buffer
		log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
		s := Sweep{Run: func(context.Context) (int64, error) { return c.n, c.err },
			Failed: "sweep failed", Done: "swept rows", Level: slog.LevelDebug, Logger: log}
		s.Pass(c.ctx)
		if got := buf.String(); (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: logged %q, want %q", c.name, got, c.want)
		}
	}
}

// TestCancelWhen: cancel runs once gone says so, not before; and the
// watcher returns when its context ends without cancelling.
func TestCancelWhen(t *testing.T) {
	t.Parallel()
	var asked atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cancelled := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		CancelWhen(ctx, time.Millisecond, func(context.Context) bool { return asked.Add(1) >= 3 }, func() { close(cancelled) })
	}()
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("not cancelled after gone said so")
	}
	<-done
	if n := asked.Load(); n != 3 {
		t.Errorf("gone asked %d times, want 3 (cancelled at the first true)", n)
	}

	ctx2, stop := context.WithCancel(context.Background())
	done2 := make(chan struct{})
	go func() {
		defer close(done2)
		CancelWhen(ctx2, time.Hour, func(context.Context) bool { return true }, func() { t.Error("cancelled though gone was never asked") })
	}()
	stop()
	select {
	case <-done2:
	case <-time.After(5 * time.Second):
		t.Fatal("CancelWhen did not return when its context ended")
	}
}
