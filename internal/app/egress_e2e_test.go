package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/app"
	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/delivery"
	"github.com/postline/postline/internal/egress"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/store"
)

// startEgress is startSend with an egress file, opts' clock, and the
// domain's direct deliveries set to go through pool.
func startEgress(t *testing.T, d store.Dialect, file, pool string, opts app.Options) *sendEnv {
	t.Helper()
	p := filepath.Join(t.TempDir(), "egress.toml")
	if err := os.WriteFile(p, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	e := startSendWith(t, d, false, func(c *config.Config) { c.EgressFile = p }, opts)
	r := e.Do(apitest.Request{Method: "PATCH", Path: "/api/domains/shop.example.com/delivery", Auth: e.user.Auth(),
		Body: map[string]any{"pool": pool}})
	if r.StatusCode != 200 || !strings.Contains(string(r.Body), `"pool":"`+pool+`"`) {
		t.Fatalf("PATCH delivery pool: %d %s", r.StatusCode, r.Body)
	}
	e.dom.Delivery.Pool = pool
	return e
}

// sendMany sends n messages, 20 recipients a request, to rcpt.example.net.
func (e *sendEnv) sendMany(t *testing.T, n int) {
	t.Helper()
	for i := 0; i < n; i += 20 {
		var to []string
		for j := i; j < min(n, i+20); j++ {
			to = append(to, fmt.Sprintf("r%d@rcpt.example.net", j))
		}
		if r := e.send(t, basicParts(to...), nil); r.StatusCode != 202 {
			t.Fatalf("send: %d %s", r.StatusCode, r.Body)
		}
	}
}

// sourcesOf returns, per source named in delivered entries, how many, and
// checks each against the address the sink saw the message come from.
func (e *sendEnv) sourcesOf(t *testing.T) map[string]int {
	t.Helper()
	from := map[string]string{} // recipient → client address the sink saw
	for _, m := range e.sink.Messages() {
		host, _, _ := net.SplitHostPort(m.RemoteAddr)
		from[m.To[0]] = host
	}
	pg, err := e.App.Events.List(context.Background(), event.Filter{DomainID: e.dom.ID, Type: event.Delivered, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, en := range pg.Entries {
		var det struct {
			Source        string `json:"source"`
			SourceAddress string `json:"source_address"`
		}
		if err := json.Unmarshal(en.Details, &det); err != nil {
			t.Fatal(err)
		}
		if det.SourceAddress == "" || from[en.Recipient] != det.SourceAddress {
			t.Errorf("%s: entry names %s (%s); the sink saw it from %q", en.Recipient, det.Source, det.SourceAddress, from[en.Recipient])
		}
		got[det.Source]++
	}
	return got
}

// A pool of two sources weighted 1:3 carries 400 messages to one site in
// that proportion (±10%), each from its source's address with its EHLO
// name, and each delivered entry names the source it went out through.
// An unknown pool is refused naming the field.
func TestEgressPoolWeights(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		e := startEgress(t, d, `
[source."ip-2"]
source_address = "127.0.0.2"
ehlo_domain = "mta2.shop.example.com"
[source."ip-3"]
source_address = "127.0.0.3"
ehlo_domain = "mta3.shop.example.com"
[pool."main"]
entries = [{name = "ip-2", weight = 1}, {name = "ip-3", weight = 3}]
`, "main", app.Options{})
		r := e.Do(apitest.Request{Method: "PATCH", Path: "/api/domains/shop.example.com/delivery", Auth: e.user.Auth(),
			Body: map[string]any{"pool": "nope"}})
		if r.StatusCode != 422 || !strings.Contains(string(r.Body), "delivery.pool") {
			t.Errorf("unknown pool: %d %s, want 422 naming delivery.pool", r.StatusCode, r.Body)
		}
		e.sendMany(t, 400)
		if _, err := e.sink.WaitForMessages(ctxTimeout(t, 2*time.Minute), 400); err != nil {
			t.Fatal(err)
		}
		waitSettled(t, e, 400)
		for _, m := range e.sink.Messages() {
			host, _, _ := net.SplitHostPort(m.RemoteAddr)
			if want := map[string]string{"127.0.0.2": "mta2.shop.example.com", "127.0.0.3": "mta3.shop.example.com"}[host]; m.Helo != want {
				t.Errorf("a message from %s said EHLO %q", m.RemoteAddr, m.Helo)
			}
		}
		got := e.sourcesOf(t)
		if got["ip-2"]+got["ip-3"] != 400 || got["ip-2"] < 90 || got["ip-2"] > 110 {
			t.Errorf("400 messages through a 1:3 pool: %v, want ip-2 100 ±10%%, ip-3 the rest", got)
		}
	})
}

// A warm-up cap of 15 a day sends exactly 15 that day; the rest wait in
// the queue (no attempt, no deferred or temporary_fail entry) and go out
// the next UTC day, through a process started then.
func TestEgressWarmup(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		clock := &testClock{}
		today := egress.Day(clock.now())
		file := fmt.Sprintf(`
[source."new-ip"]
source_address = "127.0.0.2"
warmup = ["15/day", "100/day"]
warmup_start = %q
[pool."warm"]
entries = [{name = "new-ip"}]
`, today.Format(time.DateOnly))
		e := startEgress(t, d, file, "warm", app.Options{Now: clock.now})
		e.sendMany(t, 40)
		ctx := context.Background()
		// A flake seen once in CI (14 of the 15 on PostgreSQL) is read
		// from the queue's rows and the warm-up count when it fails.
		t.Cleanup(func() {
			if t.Failed() {
				dumpWarmup(t, e, today)
			}
		})
		if _, err := e.sink.WaitForMessages(ctxTimeout(t, time.Minute), 15); err != nil {
			t.Fatal(err)
		}
		var waiting int
		deadline := time.Now().Add(20 * time.Second)
		for waiting != 25 && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
			e.App.DB.Reader().QueryRowContext(ctx, `SELECT count(*) FROM deliveries WHERE state = 'pending' AND attempts = 0 AND next_attempt_at >= $1`,
				today.Add(24*time.Hour).UnixMilli()).Scan(&waiting)
		}
		if waiting != 25 {
			t.Fatalf("%d deliveries wait for the next day unattempted, want 25", waiting)
		}
		time.Sleep(300 * time.Millisecond) // a 16th message would arrive now
		if n := len(e.sink.Messages()); n != 15 {
			t.Errorf("%d messages on the first day, want the cap of 15", n)
		}
		for _, typ := range []event.Type{event.Deferred, event.TemporaryFail} {
			if pg, _ := e.App.Events.List(ctx, event.Filter{DomainID: e.dom.ID, Type: typ, Limit: 100}); len(pg.Entries) != 0 {
				t.Errorf("%d %s entries for deliveries that waited", len(pg.Entries), typ)
			}
		}

		// The next UTC day, another process sends the rest.
		e.App.Worker.Stop()
		clock.advance(today.Add(24*time.Hour + time.Minute).Sub(clock.now()))
		other, err := app.Open(ctx, e.Config, nil, app.Options{DKIMKeyBits: 1024, Now: clock.now})
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		if err := other.StartWorkers(wctx); err != nil {
			t.Fatal(err)
		}
		if _, err := e.sink.WaitForMessages(ctxTimeout(t, time.Minute), 40); err != nil {
			t.Fatal(err)
		}
		waitSettled(t, e, 40)
		if got := e.sourcesOf(t); got["new-ip"] != 40 {
			t.Errorf("delivered entries by source: %v, want all 40 from new-ip", got)
		}
	})
}

// A source address that cannot be bound stops serve at start, naming the
// source and the address (2001:db8::/32 is documentation space, never
// configured here; nothing is dialled).
func TestEgressUnboundAddress(t *testing.T) {
	t.Parallel()
	e := startEgress(t, store.SQLite, "[source.a]\nsource_address = \"127.0.0.2\"\n[pool.p]\nentries = [{name = \"a\"}]\n", "p", app.Options{})
	cfg := e.Config
	cfg.EgressFile = filepath.Join(t.TempDir(), "far.toml")
	if err := os.WriteFile(cfg.EgressFile, []byte("[source.\"far\"]\nsource_address = \"2001:db8::1\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	other, err := app.Open(context.Background(), cfg, nil, app.Options{DKIMKeyBits: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err = other.StartWorkers(ctx)
	if err == nil || !strings.Contains(err.Error(), `source "far"`) || !strings.Contains(err.Error(), "2001:db8::1") {
		t.Errorf("StartWorkers with an unbindable source = %v, want an error naming it", err)
	}
}

// An account's egress pool carries the mail of its domains that name
// none, and a domain's own pool wins over it. The operator sets it with
// PATCH /api/admin/accounts/{login}: another account gets 403, and an
// unknown pool 422 naming the field and the pool.
func TestEgressAccountPool(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		p := filepath.Join(t.TempDir(), "egress.toml")
		if err := os.WriteFile(p, []byte(`
[source."ip-2"]
source_address = "127.0.0.2"
[source."ip-3"]
source_address = "127.0.0.3"
[pool."two"]
entries = [{name = "ip-2"}]
[pool."three"]
entries = [{name = "ip-3"}]
`), 0o600); err != nil {
			t.Fatal(err)
		}
		e := startSendWith(t, d, false, func(c *config.Config) { c.EgressFile = p }, app.Options{})
		op := e.NewUser("operator")
		if err := e.App.Accounts.SetAdmin(context.Background(), "operator", true); err != nil {
			t.Fatal(err)
		}
		patch := func(u apitest.User, pool string) *apitest.Response {
			return e.Do(apitest.Request{Method: "PATCH", Path: "/api/admin/accounts/alice", Auth: u.Auth(),
				Body: map[string]any{"delivery": map[string]any{"pool": pool}}})
		}
		if r := patch(e.user, "two"); r.StatusCode != 403 {
			t.Errorf("alice setting her own pool: %d %s, want 403", r.StatusCode, r.Body)
		}
		if r := patch(op, "nope"); r.StatusCode != 422 || !strings.Contains(string(r.Body), "delivery.pool") || !strings.Contains(string(r.Body), `\"nope\"`) {
			t.Errorf("unknown pool: %d %s, want 422 naming delivery.pool and nope", r.StatusCode, r.Body)
		}
		// A long name is refused without being echoed whole.
		if r := patch(op, strings.Repeat("p", 100000)); r.StatusCode != 422 || len(r.Body) > 1000 {
			t.Errorf("a 100,000-byte pool name: %d, %d bytes of answer; want 422 in under 1,000 bytes", r.StatusCode, len(r.Body))
		}
		if r := e.Do(apitest.Request{Method: "PATCH", Path: "/api/domains/shop.example.com/delivery", Auth: e.user.Auth(),
			Body: map[string]any{"pool": strings.Repeat("p", 100000)}}); r.StatusCode != 422 || len(r.Body) > 1000 {
			t.Errorf("a domain's 100,000-byte pool name: %d, %d bytes of answer; want 422 in under 1,000 bytes", r.StatusCode,
				len(r.Body))
		}
		r := patch(op, "two")
		if r.StatusCode != 200 || !strings.Contains(string(r.Body), `"delivery":{"pool":"two"}`) {
			t.Fatalf("PATCH alice's pool: %d %s", r.StatusCode, r.Body)
		}
		if e.dom.Delivery.Pool != "" {
			t.Fatalf("shop.example.com names pool %q; the test needs a domain without one", e.dom.Delivery.Pool)
		}
		send := func(prefix string, n int) {
			var to []string
			for i := range n {
				to = append(to, fmt.Sprintf("%s%d@rcpt.example.net", prefix, i))
			}
			if r := e.send(t, basicParts(to...), nil); r.StatusCode != 202 {
				t.Fatalf("send: %d %s", r.StatusCode, r.Body)
			}
		}
		send("acc", 10)
		if _, err := e.sink.WaitForMessages(ctxTimeout(t, time.Minute), 10); err != nil {
			t.Fatal(err)
		}
		waitSettled(t, e, 10)
		if got := e.sourcesOf(t); got["ip-2"] != 10 || len(got) != 1 {
			t.Errorf("a domain without a pool, its account in pool two: sources %v, want all 10 from ip-2", got)
		}

		// The domain's own pool wins over its account's.
		r = e.Do(apitest.Request{Method: "PATCH", Path: "/api/domains/shop.example.com/delivery", Auth: e.user.Auth(),
			Body: map[string]any{"pool": "three"}})
		if r.StatusCode != 200 {
			t.Fatalf("PATCH the domain's pool: %d %s", r.StatusCode, r.Body)
		}
		send("dom", 10)
		if _, err := e.sink.WaitForMessages(ctxTimeout(t, time.Minute), 20); err != nil {
			t.Fatal(err)
		}
		waitSettled(t, e, 20)
		if got := e.sourcesOf(t); got["ip-2"] != 10 || got["ip-3"] != 10 {
			t.Errorf("then the domain in pool three: sources %v, want 10 from ip-2 and 10 from ip-3", got)
		}
		list := e.Do(apitest.Request{Method: "GET", Path: "/api/admin/accounts", Auth: op.Auth()})
		if !strings.Contains(string(list.Body), `"login":"alice"`) || !strings.Contains(string(list.Body), `"delivery":{"pool":"two"}`) {
			t.Errorf("GET /api/admin/accounts: %s, want alice in pool two", list.Body)
		}
	})
}

// dumpWarmup logs the deliveries of a failed warm-up test that are not
// plainly waiting for the next day, and the source's count for today.
func dumpWarmup(t *testing.T, e *sendEnv, today time.Time) {
	ctx := context.Background()
	rows, err := e.App.DB.Reader().QueryContext(ctx, `SELECT id, state, attempts, next_attempt_at, COALESCE(last_code, 0), COALESCE(last_message, '')
		FROM deliveries WHERE NOT (state = 'pending' AND attempts = 0 AND next_attempt_at >= $1) ORDER BY id`, today.Add(24*time.Hour).UnixMilli())
	if err != nil {
		t.Logf("reading the deliveries: %v", err)
		return
	}
	defer rows.Close()
	for rows.Next() {
		var id, attempts, next, code int64
		var state, msg string
		if err := rows.Scan(&id, &state, &attempts, &next, &code, &msg); err == nil {
			t.Logf("delivery %d: %s, %d attempts, next %s, last %d %q", id, state, attempts, time.UnixMilli(next).UTC().Format(time.RFC3339Nano), code, msg)
		}
	}
	n, err := store.NewRateCounter(e.App.DB).Get(ctx, delivery.WarmupKey("new-ip"), today)
	t.Logf("warm-up count of new-ip today: %d (%v); %d messages at the sink", n, err, len(e.sink.Messages()))
}
