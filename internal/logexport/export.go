package logexport

import (
	"cmp"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/event"
)

// WriteTimeout bounds the writes of one page of an export: a client that
// stops reading is dropped instead of holding a connection for ever (the
// server has no global write timeout, because streams are long-lived).
const WriteTimeout = 30 * time.Second

// Config configures the Exporter.
type Config struct {
	// PerAccount is how many exports one account may run at once
	// (--log-exports-per-account; default 2).
	PerAccount int
	Logger     *slog.Logger
}

// Exporter serves exports and counts the running ones per account.
type Exporter struct {
	events  *event.Service
	cfg     Config
	mu      sync.Mutex
	running map[int64]int
}

// New returns an Exporter reading events.
func New(events *event.Service, cfg Config) *Exporter {
	cfg.PerAccount = cmp.Or(cfg.PerAccount, 2)
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Exporter{events: events, cfg: cfg, running: map[int64]int{}}
}

// Params describe one export.
type Params struct {
	AccountID int64  // whose export it is, for the limit
	Domain    string // the domain's name, for the file name
	// Filter selects the entries (DomainID required); Limit, Offset,
	// Order, AfterID and UpToID are the export's own business.
	Filter event.Filter
	Format Format
}

// take counts an export of account, unless it has PerAccount running.
func (x *Exporter) take(account int64) (release func(), err error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.running[account] >= x.cfg.PerAccount {
		return nil, &apperr.Error{Code: apperr.RateLimited, RetryAfter: 5, Message: fmt.Sprintf(
			"At most %d log exports may run at once per account (--log-exports-per-account); wait for one to finish.", x.cfg.PerAccount)}
	}
	x.running[account]++
	return func() {
		x.mu.Lock()
		defer x.mu.Unlock()
		if x.running[account]--; x.running[account] == 0 {
			delete(x.running, account)
		}
	}, nil
}

// Serve answers r with the export p describes (see the package comment
// for what is returned and what aborts). r's context ends it early.
func (x *Exporter) Serve(w http.ResponseWriter, r *http.Request, p Params) error {
	release, err := x.take(p.AccountID)
	if err != nil {
		return err
	}
	defer release()
	f := p.Filter
	f.AfterID, f.UpToID, f.Offset = 0, 0, 0
	st, err := x.events.OpenStream(r.Context(), event.StreamParams{Filter: f, Limit: math.MaxInt})
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", p.Format.ContentType())
	h.Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s-log-%s.%s"`, p.Domain, time.Now().UTC().Format("20060102T150405Z"), p.Format))
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Accel-Buffering", "no") // reverse proxies: pass each page on
	w.WriteHeader(http.StatusOK)
	out := &sink{rc: http.NewResponseController(w)}
	out.w = newWriter(p.Format, w)
	err = out.begin()
	if err == nil {
		err = st.Run(r.Context(), out)
	} else {
		st.Close()
	}
	if err == nil && r.Context().Err() != nil {
		err = r.Context().Err() // Run is quiet about an ended context; the file is not whole
	}
	if err != nil {
		x.cfg.Logger.Info("log export ended early", "domain", p.Domain, "sent", out.sent, "error", err)
		panic(http.ErrAbortHandler) // the client must not take what it got for the whole file
	}
	return nil
}

// sink writes the stream's pages and flushes each.
type sink struct {
	w    writer
	rc   *http.ResponseController
	sent int
}

var _ event.Sink = (*sink)(nil)

func (s *sink) begin() error {
	s.deadline()
	if err := s.w.header(); err != nil {
		return err
	}
	return s.rc.Flush()
}

func (s *sink) Logs(batch []event.Entry) error {
	s.deadline()
	if err := s.w.batch(batch); err != nil {
		return err
	}
	s.sent += len(batch)
	return s.rc.Flush()
}

func (s *sink) Complete(int) error { return nil }
func (s *sink) Heartbeat() error   { return nil } // an export does not follow

// deadline gives the next page's writes WriteTimeout. Not every writer
// supports deadlines (httptest's recorder); the context still ends it.
func (s *sink) deadline() { _ = s.rc.SetWriteDeadline(time.Now().Add(WriteTimeout)) }

// Running reports how many exports of account are running.
func (x *Exporter) Running(account int64) int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.running[account]
}
