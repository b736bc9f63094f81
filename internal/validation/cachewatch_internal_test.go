package validation

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
)

type forgetCount struct{ n atomic.Int32 }

func (f *forgetCount) ForgetCached() { f.n.Add(1) }

// The in-memory verdicts are dropped when, and only when, another process
// moved the counter since the watcher last looked; an unreadable counter
// drops nothing.
func TestCacheWatcherDropsOnlyWhenTheCounterMoves(t *testing.T) {
	t.Parallel()
	var epoch atomic.Int64
	var fail atomic.Bool
	read := func(context.Context) (int64, error) {
		if fail.Load() {
			return 0, errors.New("database gone")
		}
		return epoch.Load(), nil
	}
	epoch.Store(7) // bumped before this server started: its memory is fresh
	cache := &forgetCount{}
	var logs bytes.Buffer
	w := NewCacheWatcher(CacheWatcherConfig{Epoch: read, Cache: cache, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ctx := context.Background()
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	w.Stop() // the test runs the passes itself
	for _, step := range []struct {
		name  string
		bump  bool
		fail  bool
		drops int32
	}{
		{"unchanged", false, false, 0},
		{"bumped", true, false, 1},
		{"unchanged since", false, false, 1},
		{"unreadable", false, true, 1},
		{"bumped again", true, false, 2},
	} {
		if step.bump {
			epoch.Add(1)
		}
		fail.Store(step.fail)
		w.runOnce(ctx)
		if got := cache.n.Load(); got != step.drops {
			t.Fatalf("%s: %d drops in all, want %d", step.name, got, step.drops)
		}
	}
	if !strings.Contains(logs.String(), "validation cache changed by another process") {
		t.Errorf("a drop was not logged: %q", logs.String())
	}
}
