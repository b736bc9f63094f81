package app_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/store"
)

// recordMany records n delivered entries for domainID, every tenth a
// bounce to gone@example.net with the server's reply, one second apart
// from base.
func recordMany(t *testing.T, env *apitest.Env, domainID int64, n int, base time.Time) {
	t.Helper()
	batch := make([]event.Entry, 0, 1000)
	for i := 0; i < n; i++ {
		e := event.Entry{DomainID: domainID, MessageID: fmt.Sprintf("<m%d@alice.example>", i), Type: event.Delivered,
			Sender: "news@alice.example", Recipient: fmt.Sprintf("r%d@example.net", i), Subject: fmt.Sprintf("Issue %d", i),
			CreatedAt: base.Add(time.Duration(i) * time.Second), Details: []byte(`{"smtp_code":250,"smtp_message":"2.0.0 OK"}`)}
		if i%10 == 0 {
			e.Type, e.Recipient = event.Bounced, "gone@example.net"
			e.Details = []byte(`{"smtp_code":550,"enhanced_code":"5.1.1","smtp_message":"no such user"}`)
		}
		if batch = append(batch, e); len(batch) == cap(batch) || i == n-1 {
			if err := env.App.Events.Record(context.Background(), batch...); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
}

// TestLogExportOverHTTP: the API's and the console's exports of 10,000
// entries arrive whole in both formats (chunked, with no Content-Length),
// filters apply, and bad formats, other accounts' domains and keys without
// log:read are refused. That each page is sent before the next is read is
// shown by internal/logexport's TestExportStreams, which watches the store.
func TestLogExportOverHTTP(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		env := apitest.Start(t, d, nil)
		alice, bob := env.NewUser("alice"), env.NewUser("bob")
		dom := env.NewDomain(alice, "alice.example")
		env.NewDomain(bob, "bob.example")
		base := time.Now().UTC().Truncate(time.Hour).Add(-24 * time.Hour)
		recordMany(t, env, dom.ID, 10_000, base)
		path := "/api/domains/alice.example/log/export"

		resp := env.Do(apitest.Request{Method: "GET", Path: path, Auth: alice.Auth()})
		rows, err := csv.NewReader(bytes.NewReader(resp.Body)).ReadAll()
		if resp.StatusCode != 200 || err != nil || len(rows) != 10_001 {
			t.Fatalf("CSV export: %d, %d rows, %v", resp.StatusCode, len(rows), err)
		}
		if resp.ContentLength != -1 || !strings.Contains(resp.Header.Get("Content-Disposition"), `filename="alice.example-log-`) {
			t.Errorf("CSV export: Content-Length %d (want chunked), Content-Disposition %q", resp.ContentLength, resp.Header.Get("Content-Disposition"))
		}
		if rows[1][3] != "<m0@alice.example>" || rows[10_000][3] != "<m9999@alice.example>" || rows[1][10] != "no such user" {
			t.Errorf("CSV export: first row %v, last %v; want oldest first with the reply", rows[1], rows[10_000])
		}

		q := url.Values{"format": {"ndjson"}, "event_type": {"bounced"}, "recipient": {"Gone@example.net"},
			"start": {base.Add(100 * time.Second).Format(time.RFC3339)}}
		resp = env.Do(apitest.Request{Method: "GET", Path: path + "?" + q.Encode(), Auth: alice.Auth()})
		if n := ndjsonLines(t, resp.Body, "bounced", "gone@example.net"); resp.StatusCode != 200 || n != 990 {
			t.Errorf("NDJSON export of bounces from the 100th second: %d, %d lines; want 990", resp.StatusCode, n)
		}

		logRead, _, err := env.App.Accounts.CreateKeyWith(context.Background(), "alice", account.KeyOptions{Name: "send", Scopes: []string{account.ScopeSend}})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name, path, auth string
			status           int
			want             string
		}{
			{"bad format", path + "?format=xlsx", alice.Auth(), 422, `"format":["The format must be csv or ndjson."]`},
			{"bad event_type", path + "?event_type=nope", alice.Auth(), 422, `"event_type"`},
			{"another account's domain", "/api/domains/bob.example/log/export", alice.Auth(), 404, "Domain not found or not owned by user"},
			{"a key without log:read", path, apitest.User{Login: "alice", Key: logRead}.Auth(), 403, "log:read"},
		} {
			resp := env.Do(apitest.Request{Method: "GET", Path: c.path, Auth: c.auth})
			if resp.StatusCode != c.status || !strings.Contains(string(resp.Body), c.want) {
				t.Errorf("%s: %d %s; want %d with %s", c.name, resp.StatusCode, resp.Body, c.status, c.want)
			}
		}

		b := &browser{t: t, base: env.URL}
		b.signIn("alice", alice.Key, "/")
		_, page := b.do("GET", "/domains/alice.example/log?type=bounced", nil, nil)
		if !strings.Contains(page, `href="/domains/alice.example/log/export?format=csv&amp;type=bounced"`) ||
			!strings.Contains(page, `href="/domains/alice.example/log/export?format=ndjson&amp;type=bounced"`) {
			t.Errorf("the log page does not link its exports:\n%s", page)
		}
		r, body := b.do("GET", "/domains/alice.example/log/export?format=csv&type=bounced", nil, nil)
		rows, err = csv.NewReader(strings.NewReader(body)).ReadAll()
		if r.StatusCode != 200 || err != nil || len(rows) != 1001 || rows[1000][2] != "bounced" || r.ContentLength != -1 {
			t.Errorf("console CSV export of bounces: %d, %d rows, %v, Content-Length %d", r.StatusCode, len(rows), err, r.ContentLength)
		}
		r, body = b.do("GET", "/domains/alice.example/log/export?format=ndjson", nil, nil)
		if n := ndjsonLines(t, []byte(body), "", ""); r.StatusCode != 200 || n != 10_000 || r.Header.Get("Content-Type") != "application/x-ndjson" {
			t.Errorf("console NDJSON export: %d %q, %d lines", r.StatusCode, r.Header.Get("Content-Type"), n)
		}
		if r, body := b.do("GET", "/domains/alice.example/log/export?format=pdf", nil, nil); r.StatusCode != 400 || !strings.Contains(body, "The format must be csv or ndjson.") {
			t.Errorf("console export in a bad format: %d", r.StatusCode)
		}
		if r, _ := b.do("GET", "/domains/alice.example/log/export?type=nope", nil, nil); r.StatusCode != 400 {
			t.Errorf("console export with a bad type: %d, want 400 (not the whole log)", r.StatusCode)
		}
		if r, _ := b.do("GET", "/domains/bob.example/log/export", nil, nil); r.StatusCode != 404 {
			t.Errorf("console export of bob's domain: %d, want 404", r.StatusCode)
		}
	})
}

// ndjsonLines parses body as NDJSON log entries and counts them; each
// must have type typ and recipient rcpt when those are set.
func ndjsonLines(t *testing.T, body []byte, typ, rcpt string) int {
	t.Helper()
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		var e struct {
			Type      string `json:"event_type"`
			Recipient string `json:"recipient"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("NDJSON line %d %q: %v", n+1, sc.Text(), err)
		}
		if typ != "" && e.Type != typ || rcpt != "" && e.Recipient != rcpt {
			t.Fatalf("NDJSON line %d: %+v, want %s to %s", n+1, e, typ, rcpt)
		}
		n++
	}
	return n
}

// TestLogExportLimitOverHTTP: with --log-exports-per-account 1, an export
// held open by a client that stops reading (40 MB it does not take) makes
// the next one a 429 naming the limit, on the API and in the console;
// once the client leaves, its slot is free again.
func TestLogExportLimitOverHTTP(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, store.SQLite, func(c *config.Config) { c.LogExportsPerAccount = 1 })
	alice := env.NewUser("alice")
	dom := env.NewDomain(alice, "alice.example")
	big := strings.Repeat("x", 4000)
	batch := make([]event.Entry, 0, 1000)
	for i := 0; i < 10_000; i++ {
		batch = append(batch, event.Entry{DomainID: dom.ID, MessageID: fmt.Sprintf("<m%d@alice.example>", i), Type: event.Delivered,
			Recipient: "r@example.net", Subject: big})
		if len(batch) == cap(batch) {
			if err := env.App.Events.Record(context.Background(), batch...); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	req, _ := http.NewRequest("GET", env.URL+"/api/domains/alice.example/log/export?format=ndjson", nil)
	req.Header.Set("Authorization", alice.Auth())
	held, err := http.DefaultClient.Do(req)
	if err != nil || held.StatusCode != 200 {
		t.Fatalf("the first export: %v %v", held, err)
	}
	if _, err := held.Body.Read(make([]byte, 1)); err != nil { // it has started; then the client stops reading
		t.Fatal(err)
	}
	resp := env.Do(apitest.Request{Method: "GET", Path: "/api/domains/alice.example/log/export", Auth: alice.Auth()})
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "5" ||
		!strings.Contains(string(resp.Body), "At most 1 log exports may run at once per account (--log-exports-per-account)") {
		t.Errorf("a second export over the API: %d %s; want 429 naming the limit", resp.StatusCode, resp.Body)
	}
	b := &browser{t: t, base: env.URL}
	b.signIn("alice", alice.Key, "/")
	if r, page := b.do("GET", "/domains/alice.example/log/export?format=csv", nil, nil); r.StatusCode != 429 || !strings.Contains(page, "--log-exports-per-account") {
		t.Errorf("a second export in the console: %d, want a 429 page naming the limit", r.StatusCode)
	}
	held.Body.Close() // the client leaves: the export ends and frees its slot
	deadline := time.Now().Add(10 * time.Second)
	for env.App.LogExports.Running(alice.ID) != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if resp := env.Do(apitest.Request{Method: "GET", Path: "/api/domains/alice.example/log/export?event_type=bounced", Auth: alice.Auth()}); resp.StatusCode != 200 {
		t.Errorf("an export after the first client left: %d %s", resp.StatusCode, resp.Body)
	}
}
