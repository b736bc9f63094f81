package inboundpost_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/inboundpost"
	"github.com/postline/postline/internal/inboundroute"
	"github.com/postline/postline/internal/receiving"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/storetest"
	"github.com/postline/postline/internal/testutil"
)

// clock is a settable time.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

type keys struct{}

func (keys) SigningKey(context.Context, int64) (string, error) { return "key", nil }

// rig is an outbox on SQLite with a dispatcher on a settable clock
// posting to a loopback app that answers with handler.
type rig struct {
	db      *store.DB
	outbox  *inboundpost.Outbox
	d       *inboundpost.Dispatcher
	clock   *clock
	hits    atomic.Int32
	url     string
	account int64
	domain  int64
}

func setup(t *testing.T, timeout time.Duration, handler http.HandlerFunc) *rig {
	t.Helper()
	db := testutil.OpenDB(t, store.SQLite)
	acc, dom := storetest.NewDomainRow(t, db, "alice", "alice.example")
	r := &rig{db: db, clock: &clock{t: time.Now().UTC().Truncate(time.Millisecond)}, account: acc.ID, domain: dom.ID}
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.hits.Add(1)
		handler(w, req)
	}))
	t.Cleanup(app.Close)
	r.url = app.URL
	posts := store.NewInboundPosts(db)
	r.outbox = inboundpost.NewOutbox(posts, inboundpost.OutboxConfig{Now: r.clock.Now})
	r.d = inboundpost.NewDispatcher(inboundpost.Config{Timeout: timeout, AllowPrivate: true, Now: r.clock.Now, RetryBase: time.Minute},
		inboundpost.Deps{Store: posts, Log: store.NewEvents(db), Keys: keys{},
			DomainName: func(context.Context, int64) (string, error) { return "alice.example", nil }})
	return r
}

// queue hands one forward to the outbox and returns its token.
func (r *rig) queue(t *testing.T) string {
	t.Helper()
	out, err := r.outbox.Forward(context.Background(), receiving.Handoff{AccountID: r.account, DomainID: r.domain, Recipient: "help@alice.example",
		MessageID: "m1@sender.example", Raw: []byte("Subject: hi\r\n\r\nHello\r\n"),
		Actions: []inboundroute.Action{{Kind: inboundroute.KindForward, URL: r.url, RouteID: "aaaaaaaaaaaaaaaaaaaaaaaa"}}})
	if err != nil || len(out) != 1 || out[0].Outcome != "queued" {
		t.Fatalf("Forward = %+v, %v", out, err)
	}
	return out[0].Details["post"].(string)
}

// record writes the received entry that names token, as Receive does.
func (r *rig) record(t *testing.T, token string) {
	t.Helper()
	err := store.NewEvents(r.db).Insert(context.Background(), []event.Entry{{DomainID: r.domain, MessageID: "m1@sender.example",
		Type: event.Received, Recipient: "help@alice.example", CreatedAt: r.clock.Now(),
		Details: event.NewDetails(map[string]any{"actions": []any{map[string]any{"post": token}}})}})
	if err != nil {
		t.Fatal(err)
	}
}

func (r *rig) posts(t *testing.T) []event.Entry {
	t.Helper()
	list, err := store.NewEvents(r.db).List(context.Background(), event.Filter{DomainID: r.domain, Type: event.Post, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	return list
}

func (r *rig) run(t *testing.T) {
	t.Helper()
	if err := r.d.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestDispatcherWaitsForTheRecord: a post whose received entry is not in
// the log is not posted; once it is, it is; one whose entry never comes is
// dropped after the wait, unposted and unlogged.
func TestDispatcherWaitsForTheRecord(t *testing.T) {
	t.Parallel()
	r := setup(t, time.Second, func(http.ResponseWriter, *http.Request) {})
	token := r.queue(t)
	r.run(t)
	if r.hits.Load() != 0 {
		t.Fatal("posted before its receipt was recorded")
	}
	r.record(t, token)
	r.clock.Add(2 * time.Second)
	r.run(t)
	if r.hits.Load() != 1 || len(r.posts(t)) != 1 || !strings.Contains(string(r.posts(t)[0].Details), `"outcome":"posted"`) {
		t.Fatalf("after the record: %d posts, entries %+v", r.hits.Load(), r.posts(t))
	}

	// Never recorded: dropped after five minutes.
	r2 := setup(t, time.Second, func(http.ResponseWriter, *http.Request) {})
	r2.queue(t)
	for _, step := range []time.Duration{time.Minute, 3 * time.Minute, 2 * time.Minute} {
		r2.clock.Add(step)
		r2.run(t)
	}
	r2.clock.Add(time.Hour)
	r2.run(t)
	if r2.hits.Load() != 0 || len(r2.posts(t)) != 0 {
		t.Fatalf("an unrecorded post: %d posts, entries %+v; want none", r2.hits.Load(), r2.posts(t))
	}
	var state string
	r2.db.Reader().QueryRowContext(context.Background(), `SELECT state FROM inbound_posts`).Scan(&state)
	if state != inboundpost.StateDropped {
		t.Fatalf("state %q; want dropped", state)
	}
}

// TestDispatcherTimeoutsRetryThenGiveUp: an app that does not answer in
// time is tried again after the backoff, until the window ends: then the
// post is failed, the log saying so.
func TestDispatcherTimeoutsRetryThenGiveUp(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	r := setup(t, 100*time.Millisecond, func(w http.ResponseWriter, req *http.Request) {
		select {
		case <-release:
		case <-req.Context().Done():
		}
	})
	t.Cleanup(func() { close(release) }) // before the app closes (cleanups run last first)
	r.record(t, r.queue(t))
	r.run(t)
	if r.hits.Load() != 1 || len(r.posts(t)) != 0 {
		t.Fatalf("first try: %d posts, entries %+v; want one try, no end yet", r.hits.Load(), r.posts(t))
	}
	r.run(t) // not due before the backoff
	if r.hits.Load() != 1 {
		t.Fatalf("tried again at once: %d", r.hits.Load())
	}
	r.clock.Add(time.Minute)
	r.run(t)
	if r.hits.Load() != 2 {
		t.Fatalf("after the backoff: %d tries; want 2", r.hits.Load())
	}
	r.clock.Add(9 * time.Hour)
	r.run(t)
	entries := r.posts(t)
	if r.hits.Load() != 3 || len(entries) != 1 || !strings.Contains(string(entries[0].Details), `"outcome":"failed"`) ||
		!strings.Contains(string(entries[0].Details), "no answer from") || !strings.Contains(string(entries[0].Details), "given up 8h0m0s after it was queued") {
		t.Fatalf("past the window: %d tries, entries %+v", r.hits.Load(), entries)
	}
}

// TestOutboxJoinsAClientsRetry: the same message handed off again (a
// client's retry after a refusal: another trace on top, the same bytes
// sent) queues no second forward, and the post's token is the same; a
// notification of the retry's new stored copy is a post of its own.
func TestOutboxJoinsAClientsRetry(t *testing.T) {
	t.Parallel()
	r := setup(t, time.Second, func(http.ResponseWriter, *http.Request) {})
	h := func(trace, stored string) receiving.Handoff {
		return receiving.Handoff{AccountID: r.account, DomainID: r.domain, Recipient: "help@alice.example", MessageID: "m1@sender.example",
			Digest: [32]byte{1, 2, 3}, StoredID: stored, Raw: []byte(trace + "Subject: hi\r\n\r\nHello\r\n"),
			Actions: []inboundroute.Action{{Kind: inboundroute.KindForward, URL: r.url, RouteID: "aaaaaaaaaaaaaaaaaaaaaaaa"},
				{Kind: inboundroute.KindStore, Notify: r.url + "/n", RouteID: "aaaaaaaaaaaaaaaaaaaaaaaa"}}}
	}
	first, err := r.outbox.Forward(context.Background(), h("Received: one\r\n", "s1"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := r.outbox.Forward(context.Background(), h("Received: two\r\n", "s2"))
	if err != nil {
		t.Fatal(err)
	}
	if first[0].Details["post"] != again[0].Details["post"] || first[1].Details["post"] == again[1].Details["post"] {
		t.Fatalf("tokens: forward %v / %v (want equal), notify %v / %v (want different)", first[0].Details["post"], again[0].Details["post"],
			first[1].Details["post"], again[1].Details["post"])
	}
	var n int
	r.db.Reader().QueryRowContext(context.Background(), `SELECT COUNT(*) FROM inbound_posts`).Scan(&n)
	if n != 3 {
		t.Fatalf("%d posts queued; want 3 (one forward, two notifications)", n)
	}
}
