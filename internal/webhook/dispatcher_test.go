package webhook_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/secret"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/storetest"
	"github.com/postline/postline/internal/testutil"
	"github.com/postline/postline/internal/webhook"
)

// receiver is a webhook endpoint that fails its first posts and records the
// events of the posts it accepts, checking every signature.
type receiver struct {
	t       *testing.T
	secret  string
	mu      sync.Mutex
	failing int
	fails   int
	acked   []int64
	types   []event.Type
	domain  string
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if !webhook.Verify(rc.secret, r.Header.Get(webhook.SignatureHeader), body, time.Now(), time.Minute) {
		rc.t.Errorf("bad signature %q", r.Header.Get(webhook.SignatureHeader))
	}
	if rc.failing > 0 {
		rc.failing--
		rc.fails++
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	var p struct {
		Domain string `json:"domain"`
		Events []struct {
			ID        int64  `json:"id"`
			EventType string `json:"event_type"`
		} `json:"events"`
	}
	if err := json.Unmarshal(body, &p); err != nil || len(p.Events) == 0 || len(p.Events) > webhook.BatchSize {
		rc.t.Errorf("payload %s: %v", body, err)
	}
	rc.domain = p.Domain
	for _, e := range p.Events {
		rc.acked = append(rc.acked, e.ID)
		rc.types = append(rc.types, event.Type(e.EventType))
	}
	w.WriteHeader(http.StatusNoContent)
}

func (rc *receiver) snapshot() ([]int64, []event.Type, int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]int64(nil), rc.acked...), append([]event.Type(nil), rc.types...), rc.fails
}

func TestDispatcher(t *testing.T) {
	t.Parallel()
	for _, d := range testutil.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			testDispatcher(t, testutil.OpenDB(t, d))
		})
	}
}

func testDispatcher(t *testing.T, db *store.DB) {
	ctx := context.Background()
	_, dom := storetest.NewDomainRow(t, db, "alice", "alice.example")
	_, other := storetest.NewDomainRow(t, db, "bob", "bob.example")
	box, _ := secret.NewBox(make([]byte, 32))
	st, events := store.NewWebhooks(db, box), store.NewEvents(db)
	svc := webhook.NewService(st, nil)

	record := func(n int, types ...event.Type) {
		t.Helper()
		es := make([]event.Entry, n)
		for i := range es {
			es[i] = event.Entry{DomainID: dom.ID, Type: types[i%len(types)], Recipient: "x@example.net", CreatedAt: time.Now(),
				Details: []byte(`{}`)}
		}
		if err := events.Insert(ctx, es); err != nil {
			t.Fatal(err)
		}
	}
	record(5, event.Queued) // before the webhook: never sent

	all := &receiver{t: t, failing: 2}
	srv := httptest.NewServer(all)
	defer srv.Close()
	wh, err := svc.Create(ctx, dom.ID, srv.URL+"/hook", nil)
	if err != nil {
		t.Fatal(err)
	}
	all.secret = wh.Secret
	record(250, event.Queued, event.Send, event.Delivered)

	// Two dispatchers (two processes) run at once; the lease keeps one
	// post per webhook at a time, so order holds and nothing is acked twice.
	cfg := webhook.DispatcherConfig{AllowPrivate: true, RetryBase: time.Millisecond}
	name := func(context.Context, int64) (string, error) { return dom.Name, nil }
	d1, d2 := webhook.NewDispatcher(cfg, st, events, name), webhook.NewDispatcher(cfg, st, events, name)
	deadline := time.Now().Add(20 * time.Second)
	for {
		var wg sync.WaitGroup
		for _, d := range []*webhook.Dispatcher{d1, d2} {
			wg.Add(1)
			go func() { defer wg.Done(); d.RunOnce(ctx) }()
		}
		wg.Wait()
		if acked, _, _ := all.snapshot(); len(acked) >= 250 || time.Now().After(deadline) {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	acked, _, fails := all.snapshot()
	if len(acked) != 250 || fails != 2 || all.domain != "alice.example" {
		t.Fatalf("acked %d events after %d failures to %q; want 250 after 2", len(acked), fails, all.domain)
	}
	for i := 1; i < len(acked); i++ {
		if acked[i] <= acked[i-1] {
			t.Fatalf("event %d acked after %d: out of order or twice", acked[i], acked[i-1])
		}
	}
	list, _ := svc.List(ctx, dom.ID)
	if len(list) != 1 || list[0].Cursor != acked[len(acked)-1] || list[0].Attempts != 0 || list[0].LastSuccessAt == nil {
		t.Errorf("webhook after catching up = %+v", list)
	}

	// A filtered webhook gets only its types; failures are recorded.
	only := &receiver{t: t}
	srv2 := httptest.NewServer(only)
	defer srv2.Close()
	wh2, err := svc.Create(ctx, dom.ID, srv2.URL, []string{"delivered", "delivered"})
	if err != nil || len(wh2.EventTypes) != 1 {
		t.Fatalf("filtered webhook: %+v, %v", wh2, err)
	}
	only.secret = wh2.Secret
	record(9, event.Queued, event.Send, event.Delivered)
	for range 50 {
		d1.RunOnce(ctx)
		if a, _, _ := only.snapshot(); len(a) == 3 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, types, _ := only.snapshot(); len(types) != 3 || types[0] != event.Delivered || types[2] != event.Delivered {
		t.Errorf("filtered webhook got %v, want three delivered", types)
	}
	srv2.Close() // the endpoint goes away: the failure is recorded, the cursor stays
	record(3, event.Delivered)
	d1.RunOnce(ctx)
	list, _ = svc.List(ctx, dom.ID)
	if len(list) != 2 || list[1].Attempts != 1 || list[1].LastError == "" || list[1].NextAttemptAt.Before(time.Now().Add(-time.Second)) {
		t.Errorf("after a failed post: %+v", list[1])
	}

	// Quiet webhooks (more than one page of them) never crowd out a busy one.
	for range 600 {
		if _, err := st.Create(ctx, webhook.Webhook{DomainID: other.ID, URL: "https://quiet.example/", Secret: "s",
			CreatedAt: time.Now(), NextAttemptAt: time.Now().Add(-time.Hour)}, 1000); err != nil { // due longest: first in line
			t.Fatal(err)
		}
	}
	before, _, _ := all.snapshot()
	record(4, event.Delivered)
	for range 50 {
		d1.RunOnce(ctx)
		if a, _, _ := all.snapshot(); len(a) == len(before)+4 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if a, _, _ := all.snapshot(); len(a) != len(before)+4 {
		t.Errorf("behind 600 quiet webhooks the busy one got %d new entries, want 4", len(a)-len(before))
	}

	// Validation and ownership.
	for _, bad := range []struct {
		url   string
		types []string
		field string
	}{{"", nil, "url"}, {"ftp://x.example/", nil, "url"}, {"https://u:p@x.example/", nil, "url"}, {"/relative", nil, "url"},
		{"https://x.example/", []string{"exploded"}, "event_types"}} {
		if _, err := svc.Create(ctx, dom.ID, bad.url, bad.types); apperr.CodeOf(err) != apperr.Invalid {
			t.Errorf("Create(%q, %v) = %v, want invalid %s", bad.url, bad.types, err, bad.field)
		}
	}
	if err := svc.Delete(ctx, other.ID, wh.ID); apperr.CodeOf(err) != apperr.NotFound {
		t.Errorf("deleting another domain's webhook: %v, want NotFound", err)
	}
	if err := svc.Delete(ctx, dom.ID, wh.ID); err != nil {
		t.Errorf("delete: %v", err)
	}
}

// With every slot busy, webhooks take turns: the one that just posted
// goes to the back of the line.
func TestDispatcherTakesTurns(t *testing.T) {
	t.Parallel()
	for _, d := range testutil.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := testutil.OpenDB(t, d)
			_, dom := storetest.NewDomainRow(t, db, "alice", "alice.example")
			box, _ := secret.NewBox(make([]byte, 32))
			st, events := store.NewWebhooks(db, box), store.NewEvents(db)
			var mu sync.Mutex
			posts := map[string]int{}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				posts[r.URL.Path]++
				mu.Unlock()
				w.WriteHeader(204)
			}))
			defer srv.Close()
			svc := webhook.NewService(st, nil)
			for _, path := range []string{"/1", "/2", "/3"} {
				if _, err := svc.Create(ctx, dom.ID, srv.URL+path, nil); err != nil {
					t.Fatal(err)
				}
			}
			es := make([]event.Entry, 3*webhook.BatchSize) // three posts' worth for each
			for i := range es {
				es[i] = event.Entry{DomainID: dom.ID, Type: event.Delivered, CreatedAt: time.Now(), Details: []byte(`{}`)}
			}
			if err := events.Insert(ctx, es); err != nil {
				t.Fatal(err)
			}
			disp := webhook.NewDispatcher(webhook.DispatcherConfig{AllowPrivate: true, Concurrency: 1}, st, events,
				func(context.Context, int64) (string, error) { return dom.Name, nil })
			for range 3 {
				time.Sleep(2 * time.Millisecond) // each post's next turn is stamped with its own millisecond
				disp.RunOnce(ctx)
			}
			mu.Lock()
			defer mu.Unlock()
			if posts["/1"] != 1 || posts["/2"] != 1 || posts["/3"] != 1 {
				t.Errorf("three rounds with one slot posted %v; want one each", posts)
			}
		})
	}
}
