package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/app"
	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/receiving"
	"github.com/postline/postline/internal/secret"
	"github.com/postline/postline/internal/sending"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/suspend"
	"github.com/postline/postline/internal/testutil"
)

// TestStoreCopyToPostgres: a populated SQLite database copied into
// PostgreSQL serves the same answers (domains, log pages, suppressions,
// webhooks, inbound routes, stored received messages and their queued
// forwards), its DKIM keys (RSA and Ed25519) and relay passwords open with the same secret
// key, and every table of the schema was copied with its rows.
func TestStoreCopyToPostgres(t *testing.T) {
	t.Parallel()
	pgURL := testutil.DatabaseURL(t, store.Postgres) // skips without PostgreSQL
	e := startSend(t, store.SQLite, false, func(c *config.Config) { c.WebhookAllowPrivate = true })
	ctx := context.Background()
	alice, err := e.App.Domains.Add(ctx, domain.AddParams{AccountID: e.user.ID, Name: "alice.example", Trusted: true, DKIMEd25519: true,
		Delivery: domain.Delivery{Mode: domain.ModeSMTP, Host: "relay.example.net", User: "u", Password: "hunter2"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, to := range []string{"ann@rcpt.example.net", "bob@rcpt.example.net"} {
		// Tagged: the stats and tags tables have rows to copy too.
		if r := e.send(t, append(basicParts(to), part{name: "tags", value: "copied"}), nil); r.StatusCode != 202 {
			t.Fatalf("send: %d %s", r.StatusCode, r.Body)
		}
	}
	if _, err := e.sink.WaitForMessages(ctxTimeout(t, 15*time.Second), 2); err != nil {
		t.Fatal(err)
	}
	// The outcome is recorded after the receiving server accepted: wait for
	// it, or the copy could catch a log the answers below had not.
	for _, to := range []string{"ann@rcpt.example.net", "bob@rcpt.example.net"} {
		e.chain(t, to, event.Delivered)
	}
	e.Do(apitest.Request{Method: "POST", Path: "/api/domains/shop.example.com/webhooks", Auth: e.user.Auth(),
		Body: map[string]any{"url": "https://hooks.example.com/x"}})
	e.App.Suppressions.AddBounce(ctx, e.dom.ID, "gone@rcpt.example.net", "dsn:5.1.1")
	// Suspensions: one resumed (kept for the history), one in force.
	resumed, err := e.App.Queue.Suspend(ctx, suspend.Request{Kind: suspend.Site, Value: "mx.old.example", Reason: "was", By: "cli"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.App.Queue.Resume(ctx, resumed.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.App.Queue.Suspend(ctx, suspend.Request{Kind: suspend.Site, Value: "mx.now.example", Reason: "is", By: "cli"}); err != nil {
		t.Fatal(err)
	}
	// An inbound route: its text id copies as it is.
	if r := e.Do(apitest.Request{Method: "POST", Path: "/api/routes", Auth: e.user.Auth(), Body: map[string]any{"priority": 3,
		"expression": `match_recipient("(.*)@shop\.example\.com")`, "actions": []string{`forward("https://app.example/in?box=\1")`, "stop()"}}}); r.StatusCode != 201 {
		t.Fatalf("route: %d %s", r.StatusCode, r.Body)
	}
	// A received message a route stored (through the receiving side, as
	// the inbound listener hands it over): its row, raw bytes and text id
	// copy as they are.
	if r := e.Do(apitest.Request{Method: "PATCH", Path: "/api/domains/shop.example.com/inbound", Auth: e.user.Auth(),
		Body: map[string]bool{"enabled": true}}); r.StatusCode != 200 {
		t.Fatalf("inbound: %d %s", r.StatusCode, r.Body)
	}
	if r := e.Do(apitest.Request{Method: "POST", Path: "/api/routes", Auth: e.user.Auth(), Body: map[string]any{"priority": 1,
		"expression": `match_recipient("^help@")`, "actions": []string{"store()"}}}); r.StatusCode != 201 {
		t.Fatalf("route: %d %s", r.StatusCode, r.Body)
	}
	shop, err := e.App.Domains.Get(ctx, "shop.example.com")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.App.Receiving.Receive(ctx, receiving.Envelope{RemoteIP: netip.MustParseAddr("127.0.0.1"), Helo: "mx.sender.example",
		MailFrom: "ann@sender.example", Recipients: []receiving.Recipient{{Address: "help@shop.example.com", Domain: shop}}},
		[]byte("From: ann@sender.example\r\nSubject: copied\r\n\r\nbinary \xff\x00 kept\r\n")); err != nil {
		t.Fatalf("receiving: %v", err)
	}
	// A console member with its password (the webhook above is in the audit log).
	token, _, err := e.App.Team.Invite(ctx, e.user.ID, "dev@team.example", "developer")
	if err != nil {
		t.Fatal(err)
	}
	devMember, err := e.App.Team.Join(ctx, token, "member password 1")
	if err != nil {
		t.Fatal(err)
	}
	// A key the member made: it carries the member, whose removal revokes it.
	devKey, _, err := e.App.Accounts.CreateKeyWith(ctx, e.user.Login, account.KeyOptions{Name: "dev's", Scopes: []string{"send"}, MemberID: devMember.ID})
	if err != nil {
		t.Fatal(err)
	}
	stored, _, err := e.App.Receiving.List(ctx, receiving.Filter{DomainID: shop.ID, Limit: 1})
	if err != nil || len(stored) != 1 {
		t.Fatalf("stored: %v, %v", stored, err)
	}
	paths := []string{"/api/domains", "/api/domains/shop.example.com", "/api/domains/shop.example.com/log",
		"/api/domains/shop.example.com/suppressions?type=bounce", "/api/domains/shop.example.com/webhooks", "/api/routes",
		"/api/domains/shop.example.com/inbound", "/api/domains/shop.example.com/inbound/" + stored[0].ID + "/raw", "/api/audit"}
	// Mailgun's stats and tags (their answers have no URLs, which name
	// the server).
	mgPaths := []string{"/v3/shop.example.com/tags/copied", "/v3/shop.example.com/tags/copied/stats?event=accepted&event=delivered",
		"/v3/shop.example.com/stats/total?event=accepted&event=delivered"}
	mgAuth := apitest.User{Login: "api", Key: e.user.Key}.Auth()
	auth := func(p string) string {
		if strings.HasPrefix(p, "/v3/") {
			return mgAuth
		}
		return e.user.Auth()
	}
	paths = append(paths, mgPaths...)
	before := map[string][]byte{}
	for _, p := range paths {
		r := e.Do(apitest.Request{Method: "GET", Path: p, Auth: auth(p)})
		if r.StatusCode != 200 {
			t.Fatalf("GET %s: %d", p, r.StatusCode)
		}
		before[p] = r.Body
	}
	if !bytes.Contains(before[mgPaths[1]], []byte(`"delivered":{"http":0,"optimized":0,"smtp":2,"total":2}`)) {
		t.Errorf("the tag's stats before the copy: %s", before[mgPaths[1]])
	}

	dst, err := store.Open(ctx, pgURL)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	if err := dst.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	counts, err := e.App.DB.CopyTo(ctx, dst, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Every table of PostgreSQL's schema (what the migrations made) must
	// have been filled from SQLite: a table added later cannot be forgotten.
	var tables []string
	rows, err := dst.Reader().QueryContext(ctx, `SELECT table_name FROM information_schema.tables
		WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' AND table_name <> 'goose_db_version'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		rows.Scan(&n)
		tables = append(tables, n)
	}
	rows.Close()
	if len(tables) < 10 {
		t.Fatalf("PostgreSQL schema has %d tables: %v", len(tables), tables)
	}
	copied := map[string]bool{}
	for _, c := range counts {
		copied[c.Table] = true
		if c.Source != c.Target {
			t.Errorf("%s: %d rows in SQLite, %d in PostgreSQL", c.Table, c.Source, c.Target)
		}
		// The received message's forward is queued in the outbox (its
		// URL does not resolve here: it stays queued).
		if c.Table == "inbound_posts" && c.Source != 1 {
			t.Errorf("inbound_posts: %d rows in SQLite; want the received message's forward", c.Source)
		}
	}
	for _, tb := range tables {
		// The processes delivering from the source are not the target's.
		if !copied[tb] && tb != "delivery_members" {
			t.Errorf("table %s of the schema was not copied", tb)
		}
	}
	if _, err := e.App.DB.CopyTo(ctx, dst, nil); err == nil {
		t.Fatal("a second copy into the now non-empty target was accepted")
	}

	// Serve from PostgreSQL with the same secret key.
	cfg := e.Config
	cfg.DatabaseURL, cfg.DataDir = pgURL, t.TempDir()
	cfg.SecretKey = secret.Encode(e.App.SecretKey)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pg, err := app.Open(cctx, cfg, nil, app.Options{DKIMKeyBits: 1024})
	if err != nil {
		t.Fatalf("serving the copy: %v", err)
	}
	defer pg.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go pg.Serve(cctx, ln)
	for _, p := range paths {
		r := e.DoAt("http://"+ln.Addr().String(), apitest.Request{Method: "GET", Path: p, Auth: auth(p)})
		got, want := r.Body, before[p]
		if strings.HasSuffix(p, "/webhooks") {
			// Both servers' dispatchers post (and fail) on their own
			// schedule: compare what was copied, not their attempts since.
			got, want = stableWebhooks(t, got), stableWebhooks(t, want)
		}
		if r.StatusCode != 200 || !bytes.Equal(got, want) {
			t.Errorf("GET %s from PostgreSQL: %d\n%s\nwant as from SQLite:\n%s", p, r.StatusCode, got, want)
		}
	}
	if hist, err := pg.Suspensions.History(ctx); err != nil || len(hist) != 2 || hist[0].Value != "mx.now.example" || hist[0].EndedAt != nil ||
		hist[1].Value != "mx.old.example" || hist[1].Ended != suspend.EndResumed || hist[1].EndedAt == nil {
		t.Errorf("suspensions' history on PostgreSQL: %+v, %v; want the one in force and the resumed one", hist, err)
	}
	if list, err := pg.Suspensions.List(ctx); err != nil || len(list) != 1 || list[0].Value != "mx.now.example" {
		t.Errorf("suspensions in force on PostgreSQL: %+v, %v", list, err)
	}
	if p, err := pg.Team.CheckPassword(ctx, "dev@team.example", "member password 1"); err != nil || p.AccountID != e.user.ID || p.Role != "developer" {
		t.Errorf("the member signing in on PostgreSQL: %+v, %v", p, err)
	}
	if _, err := pg.Accounts.AuthenticateKey(ctx, devKey); err != nil {
		t.Errorf("the member's key on PostgreSQL: %v", err)
	}
	if _, err := pg.Team.Remove(ctx, e.user.ID, devMember.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := pg.Accounts.AuthenticateKey(ctx, devKey); apperr.CodeOf(err) != apperr.Unauthorized {
		t.Errorf("the member's key after its removal on PostgreSQL: %v, want unauthorized (it carried its member over)", err)
	}
	got, err := pg.Domains.Get(ctx, "alice.example")
	if err != nil || got.Unreadable != "" || got.Delivery.Password != "hunter2" {
		t.Fatalf("the relay domain on PostgreSQL: %+v, %v; want its password readable", got.Delivery, err)
	}
	if !got.DKIMEd25519 || len(alice.DKIMEd25519Key) == 0 || !bytes.Equal(got.DKIMEd25519Key, alice.DKIMEd25519Key) {
		t.Fatalf("the domain's Ed25519 key on PostgreSQL: on %v, same key %v; want it copied and readable",
			got.DKIMEd25519, bytes.Equal(got.DKIMEd25519Key, alice.DKIMEd25519Key))
	}
	// The queue continues on PostgreSQL: a new send gets ids past the
	// copied ones and is delivered.
	dom, err := pg.Domains.Get(ctx, "shop.example.com")
	if err != nil {
		t.Fatal(err)
	}
	acc, err := pg.Sending.Accept(ctx, dom, e.user.ID, sending.Request{From: "orders@shop.example.com",
		To: []string{"cy@rcpt.example.net"}, Subject: "After the move", Text: "hello"})
	if err != nil {
		t.Fatalf("sending from PostgreSQL: %v", err)
	}
	if _, err := e.sink.WaitForMessages(ctxTimeout(t, 15*time.Second), 3); err != nil {
		t.Fatalf("the message sent after the move (%v) was not delivered: %v", acc.MessageIDs, err)
	}
}

// stableWebhooks drops the fields of a webhook list that its dispatcher
// changes as it runs.
func stableWebhooks(t *testing.T, body []byte) []byte {
	t.Helper()
	var v struct {
		Data []map[string]any `json:"data"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatal(err)
	}
	for _, w := range v.Data {
		for _, k := range []string{"failures", "last_error", "next_attempt_at", "last_success_at", "last_event_id"} {
			delete(w, k)
		}
	}
	out, _ := json.Marshal(v.Data)
	return out
}
