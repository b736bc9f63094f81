package httpapi_test

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/httpapi"
	"github.com/postline/postline/internal/ratelimit"
	"github.com/postline/postline/internal/secret"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/testutil"
)

// gatedEvents counts page reads; with a gate, every read after the first
// waits for it (or for the request's end), so a test controls progress.
type gatedEvents struct {
	event.Store
	lists atomic.Int32
	gate  chan struct{}
}

func (g *gatedEvents) List(ctx context.Context, f event.Filter) ([]event.Entry, error) {
	if n := g.lists.Add(1); g.gate != nil && n > 1 {
		select {
		case <-g.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return g.Store.List(ctx, f)
}

// sseBundle is an API server over a real SQLite store with one domain of
// n entries, whose handler reports each return on returned.
type sseBundle struct {
	url, auth string
	api       *httpapi.Server
	events    *gatedEvents
	returned  chan struct{}
}

func setupSSE(t *testing.T, n int, cfg event.Config, gate chan struct{}) sseBundle {
	t.Helper()
	ctx := context.Background()
	db := testutil.OpenDB(t, store.SQLite)
	accounts := account.NewService(store.NewAccounts(db), nil)
	box, _ := secret.NewBox(make([]byte, 32))
	domains := domain.NewService(store.NewDomains(db, box), nil, domain.Config{DKIMKeyBits: 1024})
	a, err := accounts.CreateUser(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	key, _, err := accounts.CreateKey(ctx, "alice", "t")
	if err != nil {
		t.Fatal(err)
	}
	d, err := domains.Add(ctx, domain.AddParams{AccountID: a.ID, Name: "alice.example", Delivery: domain.Delivery{Mode: domain.ModeDirect}, Trusted: true})
	if err != nil {
		t.Fatal(err)
	}
	g := &gatedEvents{Store: store.NewEvents(db), gate: gate}
	svc := event.NewService(g, cfg)
	var batch []event.Entry
	for e := range event.Synthetic(event.SyntheticParams{DomainID: d.ID, Domain: d.Name, From: time.Now().Add(-time.Hour), To: time.Now(), Count: n}) {
		batch = append(batch, e)
	}
	if err := svc.Record(ctx, batch...); err != nil {
		t.Fatal(err)
	}
	api := httpapi.New(httpapi.Deps{Accounts: accounts, Domains: domains, Events: svc,
		Limiter: ratelimit.New(ratelimit.NewMemory(), nil), Limits: httpapi.Limits{DomainPerMinute: 1000, ValidationPerHour: 1000},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	returned := make(chan struct{}, 16)
	h := api.Handler()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		returned <- struct{}{}
	}))
	t.Cleanup(ts.Close)
	return sseBundle{url: ts.URL + "/api/domains/alice.example/log/stream", auth: "Basic " + basic("alice", key),
		api: api, events: g, returned: returned}
}

func basic(login, key string) string {
	r, _ := http.NewRequest("GET", "/", nil)
	r.SetBasicAuth(login, key)
	return strings.TrimPrefix(r.Header.Get("Authorization"), "Basic ")
}

func (b sseBundle) open(t *testing.T, ctx context.Context, query string) (*http.Response, *bufio.Reader) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", b.url+"?"+query, nil)
	req.Header.Set("Authorization", b.auth)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	return resp, bufio.NewReader(resp.Body)
}

// frame reads up to the next blank line and returns the lines before it.
func frame(t *testing.T, r *bufio.Reader) []string {
	t.Helper()
	var lines []string
	for {
		l, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading a frame: %v (so far %q)", err, lines)
		}
		if l = strings.TrimRight(l, "\n"); l == "" {
			return lines
		}
		lines = append(lines, l)
	}
}

func (b sseBundle) awaitReturn(t *testing.T, what string) {
	t.Helper()
	select {
	case <-b.returned:
	case <-time.After(5 * time.Second):
		t.Fatalf("the stream handler did not return after %s", what)
	}
}

// A client that leaves mid-stream stops the reading: the page read in
// flight ends with the request, and no further page is read.
func TestStreamStopsWhenClientLeaves(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	b := setupSSE(t, 5000, event.Config{}, gate)
	ctx, cancel := context.WithCancel(context.Background())
	resp, r := b.open(t, ctx, "")
	if f := frame(t, r); len(f) != 3 || f[0] != "event: logs" {
		t.Fatalf("first frame %.100q", f)
	}
	cancel()
	resp.Body.Close()
	b.awaitReturn(t, "the client disconnected")
	// The first page was sent; the second is either interrupted or never
	// started, depending on when the handler notices: never the others.
	if n := b.events.lists.Load(); n > 2 {
		t.Errorf("%d page reads after the client left at the first of 5 pages, want at most 2", n)
	}
	close(gate)
}

// Shutdown ends following streams instead of waiting for them.
func TestStopStreamsEndsFollowers(t *testing.T) {
	t.Parallel()
	b := setupSSE(t, 10, event.Config{}, nil)
	resp, r := b.open(t, context.Background(), "follow=true")
	defer resp.Body.Close()
	frame(t, r) // logs
	if f := frame(t, r); len(f) != 2 || f[0] != "event: complete" || f[1] != `data: {"total":10}` {
		t.Fatalf("second frame %q, want complete with total 10", f)
	}
	b.api.StopStreams()
	b.awaitReturn(t, "StopStreams")
	if l, err := r.ReadString('\n'); err == nil {
		t.Fatalf("read %q after StopStreams, want the end of the body", l)
	}
}

func TestStreamHeartbeat(t *testing.T) {
	t.Parallel()
	b := setupSSE(t, 0, event.Config{Heartbeat: 30 * time.Millisecond}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, r := b.open(t, ctx, "follow=1")
	defer resp.Body.Close()
	if got := resp.Header.Get("Content-Type"); got != "text/event-stream" {
		t.Errorf("Content-Type %q", got)
	}
	if f := frame(t, r); len(f) != 2 || f[1] != `data: {"total":0}` {
		t.Fatalf("first frame %q, want complete with total 0", f)
	}
	for i := 0; i < 2; i++ {
		if f := frame(t, r); len(f) != 1 || f[0] != ": heartbeat" {
			t.Fatalf("idle frame %q, want a heartbeat comment", f)
		}
	}
}
