// Package background runs the loops that live for the life of a process
// (sweepers, followers, watchers) with the Start/Stop shape every
// long-running part of Postline has: Start returns at once, Stop ends the
// loop and waits for a pass in progress, so that nothing outlives Stop.
package background

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Loop runs Pass every Every until Stop or the context of Start ends.
type Loop struct {
	Every time.Duration
	// Wait skips the pass at Start, for loops whose owner has just done
	// the work itself (loaded what it then follows).
	Wait bool
	Pass func(ctx context.Context)

	stop context.CancelFunc
	wg   sync.WaitGroup
}

// Start runs a pass now (unless Wait) and then every Every.
func (l *Loop) Start(ctx context.Context) error {
	ctx, l.stop = context.WithCancel(ctx)
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		if !l.Wait {
			l.Pass(ctx)
		}
		Every(ctx, l.Every, func(ctx context.Context) bool { l.Pass(ctx); return false })
	}()
	return nil
}

// Stop ends the loop and waits for it.
func (l *Loop) Stop() {
	if l.stop != nil {
		l.stop()
	}
	l.wg.Wait()
}

// Sweep is a pass that deletes or checks rows and reports how many:
// a failure is logged as a warning (unless the loop is stopping, when
// failing is expected), a pass that did anything at Level.
type Sweep struct {
	Run    func(ctx context.Context) (int64, error)
	Failed string // logged with the error
	Done   string // logged with the count
	Level  slog.Level
	Logger *slog.Logger
}

// NewSweeper returns a loop that runs s now and then every every; it runs
// once started.
func NewSweeper(every time.Duration, s Sweep) *Loop { return &Loop{Every: every, Pass: s.Pass} }

// Pass runs the sweep once; it is a Loop's Pass.
func (s Sweep) Pass(ctx context.Context) {
	n, err := s.Run(ctx)
	switch {
	case err != nil:
		if ctx.Err() == nil {
			s.Logger.Warn(s.Failed, "error", err)
		}
	case n > 0:
		s.Logger.Log(ctx, s.Level, s.Done, "count", n)
	}
}

// CancelWhen calls cancel once gone reports true, asking every every, and
// returns then or when ctx ends: a long request (a log stream, a live
// tail) ends soon after the credentials it was opened with stop working.
func CancelWhen(ctx context.Context, every time.Duration, gone func(ctx context.Context) bool, cancel context.CancelFunc) {
	Every(ctx, every, func(ctx context.Context) bool {
		if gone(ctx) {
			cancel()
			return true
		}
		return false
	})
}

// Every calls fn every every, the first time one interval from now, until
// ctx ends or fn reports it is done.
func Every(ctx context.Context, every time.Duration, fn func(ctx context.Context) (done bool)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if fn(ctx) {
				return
			}
		}
	}
}
