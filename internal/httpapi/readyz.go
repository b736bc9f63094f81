package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/postline/postline/internal/apperr"
)

// The bounds of /readyz: a load balancer may ask as often as it likes, the
// database sees at most one probe write a second, and the answer comes
// within readyWait whatever the database does (a frozen one included).
const (
	readyEvery        = time.Second
	readyProbeTimeout = 800 * time.Millisecond
	readyWait         = 900 * time.Millisecond
)

// WriteProber reports whether the database takes a write.
type WriteProber interface {
	ProbeWrite(ctx context.Context) error
}

// readiness runs the write probe at most once every readyEvery and answers
// from its last result in between.
type readiness struct {
	probe WriteProber
	log   *slog.Logger

	mu      sync.Mutex
	started time.Time     // when the last probe started
	done    bool          // a probe has finished: err is its result
	err     error         // the last probe's result
	running chan struct{} // non-nil while a probe runs; closed when it ends
}

// check returns the last probe's result, starting a new probe when that
// one is older than readyEvery and waiting for it while ctx allows.
func (r *readiness) check(ctx context.Context) error {
	r.mu.Lock()
	if r.running == nil && (!r.done || time.Since(r.started) >= readyEvery) {
		r.start()
	}
	running, err := r.running, r.err
	r.mu.Unlock()
	if running == nil {
		return err
	}
	select {
	case <-running:
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.err
	case <-ctx.Done():
		// A probe outlasting the wait (a frozen database) keeps running
		// under its own deadline; later checks wait for the same one.
		return fmt.Errorf("readyz: the database took no write within %s: %w", readyWait, context.DeadlineExceeded)
	}
}

// start runs one probe; r.mu is held.
func (r *readiness) start() {
	r.started = time.Now()
	r.running = make(chan struct{})
	go func() {
		// Not the request's context: one client hanging up must not fail
		// the probe every other caller waits for.
		ctx, cancel := context.WithTimeout(context.Background(), readyProbeTimeout)
		err := r.probe.ProbeWrite(ctx)
		cancel()
		r.mu.Lock()
		defer r.mu.Unlock()
		if (err == nil) != (r.err == nil) || !r.done {
			if err != nil {
				r.log.Warn("readyz: the database takes no write; not ready", "error", err)
			} else if r.done {
				r.log.Info("readyz: the database takes writes again; ready")
			}
		}
		r.err, r.done = err, true
		close(r.running)
		r.running = nil
	}()
}

// handleReadyz answers 200 only when a write commits, so a load balancer
// stops sending traffic to a process whose database cannot store what it
// would accept: down, frozen or full.
func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), readyWait)
	defer cancel()
	err := s.ready.check(ctx)
	if err == nil {
		writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "database": "ok"})
		return nil
	}
	state, msg := "unreachable", apperr.MsgDatabaseDown
	if e, ok := apperr.As(apperr.Classify(err)); ok {
		msg = e.Message
		switch {
		case e.Code == apperr.InsufficientStorage:
			state = "full"
		case errors.Is(err, context.DeadlineExceeded):
			state = "timeout"
		}
	}
	writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "unavailable", "database": state, "message": msg})
	return nil
}
