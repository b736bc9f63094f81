package shaping

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/postline/postline/internal/background"
)

// WatcherConfig configures a Watcher.
type WatcherConfig struct {
	// Paths are the shaping files, later ones over earlier ones; none
	// means the built-in rules.
	Paths []string
	// LookupMX resolves mx_rollup domain sections to their sites
	// (ResolveSites); nil leaves each applying to its own domain.
	LookupMX MXLookup
	// Interval is how often the files are checked for changes. Default 2s.
	Interval time.Duration
	// ResolveEvery is how often the sites are resolved again while the
	// files do not change, as MX records move. Default 1h.
	ResolveEvery time.Duration
	Logger       *slog.Logger // default slog.Default()
	// Reloaded, when set, is called with each new Rules after a reload.
	Reloaded func(*Rules)
	// NowFunc is the clock; default time.Now.
	NowFunc func() time.Time
}

// Watcher holds the rules in force and reloads them when a file changes.
// A change that does not load (a syntax error, a bad value) is logged with
// its file, line and key, and the rules in force stay.
type Watcher struct {
	cfg        WatcherConfig
	cur        atomic.Pointer[Rules]
	base       *Rules     // the rules in force before ResolveSites
	mu         sync.Mutex // serialises runOnce
	stamp      [32]byte   // of the contents in force
	failed     string     // the last reload error logged, so it is logged once
	resolvedAt time.Time
	loop       background.Loop
}

// NewWatcher loads the files (and resolves the sites) once. An error here
// is a start-up error: there are no rules in force to keep.
func NewWatcher(ctx context.Context, cfg WatcherConfig) (*Watcher, error) {
	cfg.Interval = cmp.Or(cfg.Interval, 2*time.Second)
	cfg.ResolveEvery = cmp.Or(cfg.ResolveEvery, time.Hour)
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.NowFunc == nil {
		cfg.NowFunc = time.Now
	}
	if cfg.Interval < 0 || cfg.ResolveEvery < 0 {
		return nil, errors.New("shaping: Interval and ResolveEvery must not be negative")
	}
	w := &Watcher{cfg: cfg}
	if len(cfg.Paths) == 0 {
		w.install(ctx, Builtin())
		return w, nil
	}
	data, err := readFiles(cfg.Paths)
	if err != nil {
		return nil, err
	}
	r, err := loadData(cfg.Paths, data)
	if err != nil {
		return nil, err
	}
	w.stamp = stampOf(data)
	w.install(ctx, r)
	return w, nil
}

// Rules returns the rules in force.
func (w *Watcher) Rules() *Rules { return w.cur.Load() }

// Start checks the files every Interval until Stop or ctx ends. With no
// files (the built-in rules) there is nothing to watch.
func (w *Watcher) Start(ctx context.Context) error {
	if len(w.cfg.Paths) == 0 {
		return nil
	}
	w.loop = background.Loop{Every: w.cfg.Interval, Wait: true, Pass: func(ctx context.Context) { w.runOnce(ctx) }}
	return w.loop.Start(ctx)
}

// Stop ends the loop Start began and waits for it.
func (w *Watcher) Stop() { w.loop.Stop() }

// runOnce reloads when the files' contents changed, or resolves the sites
// again when that is due, and reports whether new rules are in force.
func (w *Watcher) runOnce(ctx context.Context) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.cfg.Paths) == 0 {
		return false
	}
	data, err := readFiles(w.cfg.Paths)
	if err != nil {
		w.reloadFailed(err)
		return false
	}
	stamp := stampOf(data)
	if stamp == w.stamp {
		if w.cfg.LookupMX == nil || w.cfg.NowFunc().Sub(w.resolvedAt) < w.cfg.ResolveEvery ||
			len(w.Rules().RollupDomains()) == 0 {
			return false
		}
		w.install(ctx, w.base)
		return true
	}
	r, err := loadData(w.cfg.Paths, data)
	if err != nil {
		w.reloadFailed(err)
		return false
	}
	w.stamp, w.failed = stamp, ""
	w.cfg.Logger.Info("shaping: files changed, new rules in force", "files", w.cfg.Paths)
	w.install(ctx, r)
	return true
}

// install resolves the sites of base, puts the result in force and logs
// its warnings when they are news.
func (w *Watcher) install(ctx context.Context, base *Rules) {
	w.base = base
	r := base
	if w.cfg.LookupMX != nil && len(base.RollupDomains()) > 0 {
		r = base.ResolveSites(ctx, w.cfg.LookupMX)
		w.resolvedAt = w.cfg.NowFunc()
	}
	old := w.cur.Swap(r)
	if old == nil || !slices.Equal(old.warnings, r.warnings) || !slices.Equal(old.unknown, r.unknown) {
		r.LogWarnings(w.cfg.Logger)
	}
	if w.cfg.Reloaded != nil && old != nil {
		w.cfg.Reloaded(r)
	}
}

func (w *Watcher) reloadFailed(err error) {
	if err.Error() == w.failed {
		return
	}
	w.failed = err.Error()
	attrs := []any{"error", err}
	var fe *FileError
	if errors.As(err, &fe) {
		attrs = append(attrs, "file", fe.Path, "line", fe.Line, "key", fe.Key)
	}
	w.cfg.Logger.Error("shaping: reload failed, keeping the rules in force", attrs...)
}

func stampOf(data [][]byte) [32]byte {
	h := sha256.New()
	for _, d := range data {
		h.Write(d)
		h.Write([]byte{0})
	}
	return [32]byte(h.Sum(nil))
}
