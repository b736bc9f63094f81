package httpapi

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/background"
	"github.com/postline/postline/internal/event"
)

// streamWriteTimeout bounds each write of a stream: a client that stops
// reading without disconnecting is dropped instead of holding a goroutine
// and a connection forever (the server has no global write timeout,
// because streams are long-lived).
const streamWriteTimeout = 30 * time.Second

// StopStreams ends every open log stream, as the server shuts down:
// http.Server.Shutdown waits for handlers, and a following stream would
// otherwise hold it until the shutdown timeout. Clients reconnect with
// Last-Event-ID and lose nothing.
func (s *Server) StopStreams() {
	s.stopStreams()
	if c, ok := s.Console.(interface{ StopStreams() }); ok {
		c.StopStreams() // the console's live tails
	}
}

// handleLogStream is GET /api/domains/{domain}/log/stream. Errors found
// before the first byte (authentication, domain, parameters, the opening
// reads) are JSON with their status; after that the stream just ends, and
// the client can resume from the last id it received.
//
// Frames:
//
//	event: logs
//	id: <id of the batch's last entry>
//	data: [<up to 1000 entries, oldest first>]
//
//	event: complete
//	data: {"total":<entries sent before it>}
//
// and ": heartbeat" comments while a following stream has nothing to say.
func (s *Server) handleLogStream(w http.ResponseWriter, r *http.Request, p account.Principal) error {
	d, err := s.logDomain(r, p)
	if err != nil {
		return err
	}
	lq, err := parseLogQuery(r, true)
	if err != nil {
		return err
	}
	lq.filter.DomainID = d.ID
	release, ok := s.openStreams.take(p.AccountID)
	if !ok {
		return &rateLimited{retryAfter: 5, msg: fmt.Sprintf(
			"At most %d log streams may be open at once per account; close one or retry in 5 seconds.", MaxStreamsPerAccount)}
	}
	defer release()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(s.streamsCtx, cancel)()
	go background.CancelWhen(ctx, streamRecheck, func(ctx context.Context) bool { return s.keyGone(r.WithContext(ctx)) }, cancel)
	st, err := s.Events.OpenStream(ctx, event.StreamParams{Filter: lq.filter, Limit: lq.filter.Limit, Follow: lq.follow})
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // reverse proxies: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	sink := &sseSink{w: w, rc: http.NewResponseController(w)}
	if err := sink.flush(); err != nil {
		st.Close()
		return nil
	}
	if err := st.Run(ctx, sink); err != nil && ctx.Err() == nil {
		s.Logger.LogAttrs(r.Context(), slog.LevelWarn, "log stream ended early",
			slog.String("request_id", requestID(r.Context())), slog.String("error", err.Error()))
	}
	return nil
}

// streamRecheck is how often an open stream checks its key again (through
// the key cache).
const streamRecheck = 2 * time.Second

// keyGone reports whether the request's key stopped working (revoked,
// its member removed from the team, expired, or its account disabled): an
// open stream then ends, as it is no way to keep reading the account's
// log. A failure to check is not an answer.
func (s *Server) keyGone(r *http.Request) bool {
	_, err := s.authenticate(r)
	c := apperr.CodeOf(err)
	return c == apperr.Unauthorized || c == apperr.AuthMissing
}

// sseSink writes a stream's frames, one write and one flush each.
type sseSink struct {
	w   io.Writer
	rc  *http.ResponseController
	buf []byte // reused: a batch frame is built here, then written at once
}

var _ event.Sink = (*sseSink)(nil)

func (k *sseSink) Logs(batch []event.Entry) error {
	b := append(k.buf[:0], "event: logs\nid: "...)
	b = strconv.AppendInt(b, batch[len(batch)-1].ID, 10)
	b = append(b, "\ndata: "...)
	b = event.AppendJSONArray(b, batch) // JSON has no raw newlines: one data line
	b = append(b, "\n\n"...)
	k.buf = b
	return k.write(b)
}

func (k *sseSink) Complete(total int) error {
	b := append(k.buf[:0], "event: complete\ndata: {\"total\":"...)
	b = strconv.AppendInt(b, int64(total), 10)
	b = append(b, "}\n\n"...)
	k.buf = b
	return k.write(b)
}

func (k *sseSink) Heartbeat() error { return k.write([]byte(": heartbeat\n\n")) }

func (k *sseSink) write(b []byte) error {
	// Not every writer supports deadlines (httptest's recorder); the
	// request context still ends the stream when the client goes.
	_ = k.rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	if _, err := k.w.Write(b); err != nil {
		return err
	}
	return k.flush()
}

func (k *sseSink) flush() error { return k.rc.Flush() }

// MaxStreamsPerAccount bounds an account's open log streams per process:
// a following stream lives until the client leaves, and opening one costs
// only one request of the rate budget.
const MaxStreamsPerAccount = 20

// streamCounter counts open streams per account.
type streamCounter struct {
	mu sync.Mutex
	n  map[int64]int
}

// take counts a stream for account, unless it has MaxStreamsPerAccount
// open; release uncounts it.
func (c *streamCounter) take(account int64) (release func(), ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[int64]int{}
	}
	if c.n[account] >= MaxStreamsPerAccount {
		return nil, false
	}
	c.n[account]++
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.n[account]--; c.n[account] == 0 {
			delete(c.n, account)
		}
	}, true
}
