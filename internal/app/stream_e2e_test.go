package app_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/httpapi"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/testutil"
)

// streamed is what a client read from one stream.
type streamed struct {
	entries  []map[string]any
	batches  []int
	complete int // -1 when no complete frame came
	lastID   string
}

// readStream reads frames until the stream ends (or, with stopAfter > 0,
// until that many entries arrived after complete), checking every frame.
func readStream(t *testing.T, s *apitest.SSE) streamed {
	t.Helper()
	out := streamed{complete: -1}
	for {
		ev, err := s.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("reading the stream: %v", err)
		}
		switch ev.Type {
		case "logs":
			var batch []map[string]any
			if err := json.Unmarshal([]byte(ev.Data), &batch); err != nil {
				t.Fatalf("logs frame data is not a JSON array: %v: %.200s", err, ev.Data)
			}
			if len(batch) == 0 || len(batch) > 1000 {
				t.Fatalf("logs frame with %d entries, want 1..1000", len(batch))
			}
			if last := strconv.FormatFloat(batch[len(batch)-1]["id"].(float64), 'f', -1, 64); ev.ID != last {
				t.Fatalf("logs frame id: %q, want its last entry's id %s", ev.ID, last)
			}
			out.entries = append(out.entries, batch...)
			out.batches = append(out.batches, len(batch))
			out.lastID = ev.ID
		case "complete":
			var c struct{ Total *int }
			if err := json.Unmarshal([]byte(ev.Data), &c); err != nil || c.Total == nil || out.complete != -1 {
				t.Fatalf("complete frame %q (err %v, earlier complete %d)", ev.Data, err, out.complete)
			}
			out.complete = *c.Total
		default:
			t.Fatalf("unexpected event %q: %.200s", ev.Type, ev.Data)
		}
	}
}

func (s streamed) ids() []int64 {
	out := make([]int64, len(s.entries))
	for i, e := range s.entries {
		out[i] = int64(e["id"].(float64))
	}
	return out
}

func seedLog(t *testing.T, env *apitest.Env, domainID int64, n int) []event.Entry {
	t.Helper()
	ctx := context.Background()
	var batch []event.Entry
	now := time.Now().UTC()
	for e := range event.Synthetic(event.SyntheticParams{DomainID: domainID, Domain: "alice.example",
		From: now.Add(-48 * time.Hour), To: now, Count: n, Seed: 3}) {
		batch = append(batch, e)
	}
	if err := env.App.Events.Record(ctx, batch...); err != nil {
		t.Fatal(err)
	}
	all, err := store.NewEvents(env.App.DB).List(ctx, event.Filter{DomainID: domainID, Order: event.OldestFirst, Limit: n + 1})
	if err != nil || len(all) != n {
		t.Fatalf("seeded %d, %v", len(all), err)
	}
	return all
}

func entryIDs(es []event.Entry) []int64 {
	out := make([]int64, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}

func TestLogStreamOverHTTP(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		env := apitest.Start(t, d, nil)
		alice := env.NewUser("alice")
		dom := env.NewDomain(alice, "alice.example")
		all := seedLog(t, env, dom.ID, 2500)
		ctx := context.Background()
		open := func(query string, h http.Header) *apitest.SSE {
			t.Helper()
			s, resp := env.OpenStream(ctx, apitest.Request{Method: "GET", Path: "/api/domains/alice.example/log/stream?" + query,
				Auth: alice.Auth(), Header: h})
			if s == nil {
				t.Fatalf("?%s: %d %s", query, resp.StatusCode, resp.Body)
			}
			t.Cleanup(s.Close)
			if s.Resp.Header.Get("Cache-Control") != "no-cache" || s.Resp.Header.Get("X-RateLimit-Remaining") == "" {
				t.Errorf("stream headers: %v", s.Resp.Header)
			}
			return s
		}
		filter := func(keep func(event.Entry) bool) []event.Entry {
			var out []event.Entry
			for _, e := range all {
				if keep(e) {
					out = append(out, e)
				}
			}
			return out
		}
		rcpt := all[100].Recipient
		cases := []struct {
			query   string
			header  http.Header
			want    []event.Entry
			batches []int
		}{
			{"", nil, all, []int{1000, 1000, 500}},
			{"limit=1500", nil, all[:1500], []int{1000, 500}},
			{"limit=1", nil, all[:1], []int{1}},
			{"last_event_id=" + strconv.FormatInt(all[999].ID, 10), nil, all[1000:], []int{1000, 500}},
			{"last_event_id=1", http.Header{"Last-Event-Id": {strconv.FormatInt(all[2399].ID, 10)}}, all[2400:], []int{100}},
			{"event_type=opened", nil, filter(func(e event.Entry) bool { return e.Type == event.Opened }), nil},
			{"recipient=" + strings.ToUpper(rcpt), nil, filter(func(e event.Entry) bool { return event.Fold(e.Recipient) == event.Fold(rcpt) }), nil},
			{"start=" + all[700].CreatedAt.Format(time.RFC3339Nano) + "&end=" + all[1900].CreatedAt.Format(time.RFC3339Nano) + "&subject=invoice",
				nil, filter(func(e event.Entry) bool {
					return !e.CreatedAt.Before(all[700].CreatedAt) && !e.CreatedAt.After(all[1900].CreatedAt) && strings.Contains(e.Subject, "invoice")
				}), nil},
			{"sender=nobody@alice.example", nil, nil, nil},
		}
		for _, c := range cases {
			got := readStream(t, open(c.query, c.header))
			if !slices.Equal(got.ids(), entryIDs(c.want)) {
				t.Errorf("?%.60s: %d entries, want %d", c.query, len(got.entries), len(c.want))
			}
			if got.complete != len(c.want) {
				t.Errorf("?%.60s: complete total %d, want %d", c.query, got.complete, len(c.want))
			}
			if c.batches != nil && !slices.Equal(got.batches, c.batches) {
				t.Errorf("?%.60s: batches %v, want %v", c.query, got.batches, c.batches)
			}
		}
		// An entry in full, as in the list.
		got := readStream(t, open("limit=1", nil))
		e := got.entries[0]
		if e["id"] != float64(all[0].ID) || e["event_type"] != string(all[0].Type) || e["recipient"] != all[0].Recipient ||
			e["created_at"] != all[0].CreatedAt.Format("2006-01-02T15:04:05.000Z") || e["details"] == nil {
			t.Errorf("first streamed entry %v, want %+v", e, all[0])
		}

		// Resuming from each frame's id loses and repeats nothing.
		var resumed []int64
		last := ""
		for {
			s := open("limit=700&last_event_id="+last, nil)
			part := readStream(t, s)
			if len(part.entries) == 0 {
				break
			}
			resumed = append(resumed, part.ids()...)
			last = part.lastID
		}
		if !slices.Equal(resumed, entryIDs(all)) {
			t.Errorf("resumed in parts of 700: %d entries, want all %d in order", len(resumed), len(all))
		}

		for _, c := range []struct{ query, field string }{
			{"event_type=send", "event_type"}, {"limit=0", "limit"}, {"limit=500001", "limit"}, {"limit=x", "limit"},
			{"follow=maybe", "follow"}, {"last_event_id=-4", "last_event_id"}, {"start=nope", "start"},
		} {
			s, resp := env.OpenStream(ctx, apitest.Request{Method: "GET", Path: "/api/domains/alice.example/log/stream?" + c.query, Auth: alice.Auth()})
			if s != nil {
				s.Close()
				t.Errorf("?%s: a stream, want 422", c.query)
				continue
			}
			if msg, _ := resp.JSON["error"].(string); resp.StatusCode != 422 || !strings.Contains(msg, c.field) {
				t.Errorf("?%s: %d %s; want 422 naming %s", c.query, resp.StatusCode, resp.Body, c.field)
			}
		}
		s, resp := env.OpenStream(ctx, apitest.Request{Method: "GET", Path: "/api/domains/alice.example/log/stream",
			Auth: alice.Auth(), Header: http.Header{"Last-Event-Id": {"abc"}}})
		if s != nil || resp.StatusCode != 422 || !strings.Contains(resp.JSON["error"].(string), "Last-Event-ID") {
			t.Errorf("bad Last-Event-ID header: want 422 naming it")
		}
	})
}

// follow delivers what is recorded after the backlog, resumes without loss,
// and the limit ends a following stream.
func TestLogStreamFollow(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		env := apitest.Start(t, d, nil)
		alice := env.NewUser("alice")
		dom := env.NewDomain(alice, "alice.example")
		all := seedLog(t, env, dom.ID, 30)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		s, resp := env.OpenStream(ctx, apitest.Request{Method: "GET", Auth: alice.Auth(),
			Path: "/api/domains/alice.example/log/stream?follow=true&limit=34&event_type=clicked&last_event_id=" + strconv.FormatInt(all[19].ID, 10)})
		if s == nil {
			t.Fatalf("%d %s", resp.StatusCode, resp.Body)
		}
		defer s.Close()
		backlog := 0
		for _, e := range all[20:] {
			if e.Type == event.Clicked {
				backlog++
			}
		}
		var got []int64
		for {
			ev, err := s.Next()
			if err != nil {
				t.Fatal(err)
			}
			if ev.Type == "complete" {
				if ev.Data != `{"total":`+strconv.Itoa(backlog)+`}` {
					t.Fatalf("complete %s, want total %d", ev.Data, backlog)
				}
				break
			}
			var batch []struct{ ID int64 }
			json.Unmarshal([]byte(ev.Data), &batch)
			for _, b := range batch {
				got = append(got, b.ID)
			}
		}
		// Recorded after connect: an opened entry (filtered out), then clicks.
		record := func(typ event.Type, n int) {
			es := make([]event.Entry, n)
			for i := range es {
				es[i] = event.Entry{DomainID: dom.ID, Type: typ, Recipient: "late@example.net"}
			}
			if err := env.App.Events.Record(context.Background(), es...); err != nil {
				t.Fatal(err)
			}
		}
		record(event.Opened, 1)
		record(event.Clicked, 1)
		ev, err := s.Next()
		if err != nil || ev.Type != "logs" || !strings.Contains(ev.Data, `"late@example.net"`) || !strings.Contains(ev.Data, `"clicked"`) {
			t.Fatalf("after a live insert: %+v, %v; want a logs frame with the new click", ev, err)
		}
		// 34 is the limit: backlog + 1 so far; record more than enough.
		record(event.Clicked, 40)
		live := 1
		for {
			ev, err := s.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			var batch []json.RawMessage
			json.Unmarshal([]byte(ev.Data), &batch)
			live += len(batch)
		}
		if backlog+live != 34 {
			t.Errorf("stream ended after %d backlog + %d live entries, want 34 in all", backlog, live)
		}
	})
}

// An entry recorded by one process reaches a stream following on another
// through PostgreSQL's LISTEN/NOTIFY, faster than the followers' 5 s poll.
func TestLogStreamFollowAcrossProcesses(t *testing.T) {
	t.Parallel()
	if testutil.PostgresURL() == "" {
		t.Skip("POSTLINE_TEST_DATABASE_URL not set")
	}
	key := make([]byte, 32)
	rand.Read(key)
	secretKey := base64.StdEncoding.EncodeToString(key)
	one := apitest.Start(t, store.Postgres, func(c *config.Config) { c.SecretKey = secretKey })
	two := apitest.Start(t, store.Postgres, func(c *config.Config) {
		c.SecretKey, c.DatabaseURL = secretKey, one.Config.DatabaseURL
	})
	alice := one.NewUser("alice")
	dom := one.NewDomain(alice, "alice.example")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, resp := two.OpenStream(ctx, apitest.Request{Method: "GET", Auth: alice.Auth(),
		Path: "/api/domains/alice.example/log/stream?follow=true"})
	if s == nil {
		t.Fatalf("%d %s", resp.StatusCode, resp.Body)
	}
	defer s.Close()
	if ev, err := s.Next(); err != nil || ev.Type != "complete" || ev.Data != `{"total":0}` {
		t.Fatalf("first frame %+v, %v; want complete with total 0", ev, err)
	}
	start := time.Now()
	if err := one.App.Events.Record(ctx, event.Entry{DomainID: dom.ID, Type: event.Delivered, Recipient: "x@example.net"}); err != nil {
		t.Fatal(err)
	}
	ev, err := s.Next()
	if err != nil || ev.Type != "logs" || !strings.Contains(ev.Data, `"x@example.net"`) {
		t.Fatalf("frame %+v, %v; want the entry recorded by the other process", ev, err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("took %s: that is the poll, not the notification", took)
	}
}

// An account may hold MaxStreamsPerAccount log streams at once; the next
// is a 429 naming the limit, and closing one makes room.
func TestLogStreamsPerAccountAreBounded(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, store.SQLite, nil)
	alice := env.NewUser("alice")
	env.NewDomain(alice, "alice.example")
	req := apitest.Request{Method: "GET", Path: "/api/domains/alice.example/log/stream?follow=true", Auth: alice.Auth()}
	var cancels []context.CancelFunc
	defer func() {
		for _, c := range cancels {
			c()
		}
	}()
	for i := 0; i < httpapi.MaxStreamsPerAccount; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		cancels = append(cancels, cancel)
		if s, resp := env.OpenStream(ctx, req); s == nil {
			t.Fatalf("stream %d: %d %s", i+1, resp.StatusCode, resp.Body)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, resp := env.OpenStream(ctx, req)
	if s != nil || resp.StatusCode != 429 || !strings.Contains(fmt.Sprint(resp.JSON["message"]), fmt.Sprint(httpapi.MaxStreamsPerAccount)) {
		t.Fatalf("one stream too many: %+v", resp)
	}
	cancels[0]() // the client goes away; its stream ends and frees its place
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithCancel(context.Background())
		cancels = append(cancels, cancel)
		if s, _ := env.OpenStream(ctx, req); s != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("closing a stream did not make room for another")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
