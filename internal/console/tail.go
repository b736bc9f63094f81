package console

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/background"
	"github.com/postline/postline/internal/event"
)

// tailEntry is what the live tail sends of an entry: the columns of the
// log page. The browser inserts them as text, never as HTML.
type tailEntry struct {
	ID        int64  `json:"id"`
	CreatedAt string `json:"created_at"`
	Type      string `json:"type"`
	Recipient string `json:"recipient"`
	Subject   string `json:"subject"`
	MessageID string `json:"message_id"`
	Reply     string `json:"reply"` // the receiving server's answer, if any
}

// tailSink writes stream frames as Server-Sent Events: `event: entries`
// with an id (the last entry's, so EventSource resumes after it).
type tailSink struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func (t tailSink) Logs(batch []event.Entry) error {
	out := make([]tailEntry, len(batch))
	for i, e := range batch {
		out[i] = tailEntry{ID: e.ID, CreatedAt: e.CreatedAt.UTC().Format(time.RFC3339), Type: string(e.Type),
			Recipient: e.Recipient, Subject: e.Subject, MessageID: e.MessageID, Reply: e.Reply().String()}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(t.w, "id: %d\nevent: entries\ndata: %s\n\n", batch[len(batch)-1].ID, b); err != nil {
		return err
	}
	return t.rc.Flush()
}

func (t tailSink) Complete(int) error { return nil }

func (t tailSink) Heartbeat() error {
	if _, err := fmt.Fprint(t.w, ": keep-alive\n\n"); err != nil {
		return err
	}
	return t.rc.Flush()
}

// tailMax bounds one tail connection; EventSource reconnects with the
// last id, so nothing is missed.
const tailMax = 10 * time.Minute

// tailRecheck is how often an open tail checks its session again.
const tailRecheck = 2 * time.Second

// signedOut reports whether the request's session has ended (its member
// removed, signed out, its key revoked, the account disabled): an open
// tail then ends, as it is no way to keep reading the account's log. A
// failure to check is not an answer.
func (c *Console) signedOut(r *http.Request) bool {
	_, ok, _, err := c.session(r)
	return !ok && err == nil
}

// logTail streams a domain's new entries (after `after`, or the
// Last-Event-ID of a reconnection) as they are recorded: the log page's
// live tail. It stops at shutdown (StopStreams) and after tailMax.
func (c *Console) logTail(w http.ResponseWriter, r *http.Request, s *account.Session) error {
	d, err := c.deps.Domains.Owned(r.Context(), s.AccountID, r.PathValue("name"))
	if err != nil {
		return err
	}
	after, _ := strconv.ParseInt(r.URL.Query().Get("after"), 10, 64)
	if id, err := strconv.ParseInt(r.Header.Get("Last-Event-ID"), 10, 64); err == nil {
		after = id
	}
	rc := http.NewResponseController(w) // through the API's wrappers to the connection
	st, err := c.deps.Events.OpenStream(r.Context(), event.StreamParams{Filter: event.Filter{DomainID: d.ID, AfterID: after},
		Limit: 1_000_000, Follow: true})
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		st.Close()
		return fmt.Errorf("console: the response cannot stream: %w", err)
	}
	ctx, cancel := context.WithTimeout(r.Context(), tailMax)
	defer cancel()
	stop := context.AfterFunc(c.streams, cancel)
	defer stop()
	go background.CancelWhen(ctx, tailRecheck, func(ctx context.Context) bool { return c.signedOut(r.WithContext(ctx)) }, cancel)
	st.Run(ctx, tailSink{w: w, rc: rc}) //nolint:errcheck // the stream just ends; the browser reconnects
	return nil
}

// StopStreams ends the live tails (the server is shutting down).
func (c *Console) StopStreams() { c.stopStreams() }
