package app_test

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/testutil"
)

// faultEnv is a sending server whose faults a test injects, and the
// recipients it answered 202 for, which must all arrive.
type faultEnv struct {
	*sendEnv
	accepted []string
	sent     int
}

// trySend sends one message to a recipient of its own, with a text of
// size bytes; a 202 adds the recipient to those that must arrive.
func (e *faultEnv) trySend(t *testing.T, size int) (*apitest.Response, time.Duration) {
	t.Helper()
	e.sent++
	rcpt := fmt.Sprintf("r%d@rcpt.example.net", e.sent)
	parts := basicParts(rcpt)
	parts[2].value = strings.Repeat("x", size)
	start := time.Now()
	resp := e.send(t, parts, nil)
	if resp.StatusCode == 202 {
		e.accepted = append(e.accepted, rcpt)
	}
	return resp, time.Since(start)
}

// readyz asks /readyz and checks it answered within the 1 s it promises.
func (e *faultEnv) readyz(t *testing.T) *apitest.Response {
	t.Helper()
	start := time.Now()
	resp := e.Do(apitest.Request{Method: "GET", Path: "/readyz"})
	if took := time.Since(start); took > time.Second {
		t.Errorf("/readyz took %s (answered %d %s); it must answer within 1 s", took, resp.StatusCode, resp.Body)
	}
	return resp
}

// untilReady polls /readyz until it is 200 (the fault healed, without a
// restart), for at most 10 s.
func (e *faultEnv) untilReady(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp := e.readyz(t)
		if resp.StatusCode == 200 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz still %d %s 10 s after the fault ended", resp.StatusCode, resp.Body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// allArrive waits until every recipient answered 202 got its message. A
// message may arrive twice (an outcome the database could not record is
// attempted again), so it waits for each recipient, not for a count.
func (e *faultEnv) allArrive(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		got := map[string]bool{}
		for _, m := range e.sink.Messages() {
			for _, r := range m.To {
				got[r] = true
			}
		}
		var missing []string
		for _, r := range e.accepted {
			if !got[r] {
				missing = append(missing, r)
			}
		}
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("accepted (202) and not delivered within 60 s: %v", missing)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func wantReadyz(t *testing.T, resp *apitest.Response, status int, database string) {
	t.Helper()
	if resp.StatusCode != status || resp.JSON["database"] != database {
		t.Errorf("/readyz: %d %s, want %d with database %q", resp.StatusCode, resp.Body, status, database)
	}
}

// A full disk under SQLite: a send answers 507 naming the cause (not a
// bare 500), /readyz turns 503 "full" because a write no longer commits,
// nothing answered 202 is lost, and freeing the space heals it all without
// a restart.
func TestDiskFullAnswers507(t *testing.T) {
	t.Parallel()
	disk := testutil.SmallDisk(t, 16<<20)
	e := &faultEnv{sendEnv: startSend(t, store.SQLite, false, func(c *config.Config) {
		c.DataDir = disk
		c.DatabaseURL = "sqlite:" + disk + "/postline.db"
	})}
	if resp, _ := e.trySend(t, 100); resp.StatusCode != 202 {
		t.Fatalf("send before the disk fills: %d %s", resp.StatusCode, resp.Body)
	}
	wantReadyz(t, e.readyz(t), 200, "ok")
	b := &browser{t: t, base: e.URL}
	if resp := b.signIn(e.user.Login, e.user.Key, "/"); resp.StatusCode != 303 {
		t.Fatalf("console sign-in before the disk fills: %d", resp.StatusCode)
	}

	free := testutil.FillDisk(t, disk)
	var full *apitest.Response
	for i := 0; i < 20 && full == nil; i++ { // the log may take a few sends more
		resp, _ := e.trySend(t, 256<<10)
		switch resp.StatusCode {
		case 202:
		case 507:
			full = resp
		default:
			t.Fatalf("send on a full disk: %d %s, want 507 (or 202 while the log has room)", resp.StatusCode, resp.Body)
		}
	}
	if full == nil {
		t.Fatal("20 sends of 256 KiB on a full disk were all accepted")
	}
	if msg, _ := full.JSON["error"].(string); msg != apperr.MsgSQLiteFull && msg != apperr.MsgDiskFull {
		t.Errorf("507 body %s: want the cause named (%q)", full.Body, apperr.MsgSQLiteFull)
	}
	time.Sleep(1100 * time.Millisecond) // past the readiness probe's 1 s cache
	wantReadyz(t, e.readyz(t), 503, "full")
	// The console says the same: a list upload (which writes its lines)
	// is a 507 page naming the cause, not "something went wrong".
	_, page := b.do("GET", "/validation", nil, nil)
	csrf := csrfRE.FindStringSubmatch(page)
	if csrf == nil {
		t.Fatalf("no CSRF token on /validation:\n%.1000s", page)
	}
	var list strings.Builder
	for i := range 20000 {
		fmt.Fprintf(&list, "someone.with.a.long.name%d@list.example.org\n", i)
	}
	body, ct := multipartForm(t, csrf[1], "file", "list.csv", list.String())
	req, _ := http.NewRequest("POST", e.URL+"/validation/jobs", bytes.NewReader(body))
	req.Header.Set("Content-Type", ct)
	req.AddCookie(b.cookie)
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else {
		text, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 507 || !strings.Contains(string(text), "Insufficient storage") {
			t.Errorf("console list upload on a full disk: %d, want 507 naming the cause; page:\n%.2000s", resp.StatusCode, text)
		}
	}

	free()
	e.untilReady(t)
	if resp, _ := e.trySend(t, 256<<10); resp.StatusCode != 202 {
		t.Fatalf("send once space is freed: %d %s", resp.StatusCode, resp.Body)
	}
	e.allArrive(t)
}

// PostgreSQL frozen (the proxy forwards no byte) and down (connections cut
// and refused): sends and reads answer 503 with Retry-After within
// --db-timeout instead of hanging or answering 500, /readyz answers 503
// within 1 s, nothing answered 202 is lost, and resuming heals it all
// without a restart.
func TestPostgresFaultsAnswer503(t *testing.T) {
	t.Parallel()
	if testutil.PostgresURL() == "" {
		t.Skip("POSTLINE_TEST_DATABASE_URL not set")
	}
	const dbTimeout = time.Second
	var proxy *testutil.TCPProxy
	e := &faultEnv{sendEnv: startSend(t, store.Postgres, false, func(c *config.Config) {
		u, err := url.Parse(c.DatabaseURL)
		if err != nil {
			t.Fatal(err)
		}
		proxy = testutil.NewTCPProxy(t, u.Host)
		u.Host = proxy.Addr()
		c.DatabaseURL = u.String()
		c.DBTimeout = dbTimeout
	})}
	defer proxy.Resume() // the server's shutdown needs its database
	if resp, _ := e.trySend(t, 100); resp.StatusCode != 202 {
		t.Fatalf("send before any fault: %d %s", resp.StatusCode, resp.Body)
	}
	signedIn := &browser{t: t, base: e.URL}
	if resp := signedIn.signIn(e.user.Login, e.user.Key, "/"); resp.StatusCode != 303 {
		t.Fatalf("console sign-in before any fault: %d", resp.StatusCode)
	}
	wantReadyz(t, e.readyz(t), 200, "ok")

	for _, fault := range []struct {
		name     string
		inject   func()
		database string // /readyz's verdict
		message  []string
	}{
		{"frozen", proxy.Pause, "timeout", []string{apperr.MsgTimedOut}},
		{"down", proxy.Cut, "unreachable", []string{apperr.MsgDependencyDown, apperr.MsgDatabaseDown}},
	} {
		fault.inject()
		time.Sleep(1100 * time.Millisecond) // past the readiness probe's 1 s cache
		wantReadyz(t, e.readyz(t), 503, fault.database)
		resp, took := e.trySend(t, 100)
		msg, _ := resp.JSON["error"].(string)
		if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || !oneOf(msg, fault.message) {
			t.Errorf("%s: send: %d %s (Retry-After %q), want 503 %q with Retry-After", fault.name, resp.StatusCode, resp.Body,
				resp.Header.Get("Retry-After"), fault.message)
		}
		if took > dbTimeout+2*time.Second {
			t.Errorf("%s: send took %s, want at most about --db-timeout (%s)", fault.name, took, dbTimeout)
		}
		start := time.Now()
		list := e.Do(apitest.Request{Method: "GET", Path: "/api/domains", Auth: e.user.Auth()})
		if list.StatusCode != 503 || list.Header.Get("Retry-After") == "" || time.Since(start) > dbTimeout+2*time.Second {
			t.Errorf("%s: list domains: %d %s after %s, want 503 with Retry-After", fault.name, list.StatusCode, list.Body, time.Since(start))
		}
		// A signed-in reader is told the database is down (503, retry),
		// not shown the sign-in form as if signed out; a sign-in the same.
		for _, page := range []struct {
			name string
			do   func() (*http.Response, string)
		}{
			{"overview", func() (*http.Response, string) { return signedIn.do("GET", "/", nil, nil) }},
			{"sign-in", func() (*http.Response, string) {
				b := &browser{t: t, base: e.URL}
				return b.do("POST", "/sign-in", url.Values{"login": {e.user.Login}, "secret": {e.user.Key}, "next": {"/"}}, nil)
			}},
		} {
			start := time.Now()
			resp, body := page.do()
			if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || !containsOne(body, fault.message) ||
				time.Since(start) > dbTimeout+2*time.Second {
				t.Errorf("%s: console %s: %d (Retry-After %q) after %s, want 503 naming %q; page:\n%.1500s", fault.name, page.name,
					resp.StatusCode, resp.Header.Get("Retry-After"), time.Since(start), fault.message, body)
			}
		}
		proxy.Resume()
		e.untilReady(t)
		if resp, _ := e.trySend(t, 100); resp.StatusCode != 202 {
			t.Fatalf("%s, then back: send: %d %s", fault.name, resp.StatusCode, resp.Body)
		}
	}
	e.allArrive(t)
}

func containsOne(s string, set []string) bool {
	for _, v := range set {
		if strings.Contains(s, html.EscapeString(v)) {
			return true
		}
	}
	return false
}

func oneOf(s string, set []string) bool {
	for _, v := range set {
		if s == v {
			return true
		}
	}
	return false
}

// /readyz writes at most once a second however often it is asked: the
// answers in between come from the last probe.
func TestReadyzProbesAtMostOnceASecond(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		env := apitest.Start(t, d, nil)
		probe := func() string {
			v, _, err := store.NewMeta(env.App.DB).Get(context.Background(), "ready-probe")
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		if resp := env.Do(apitest.Request{Method: "GET", Path: "/readyz"}); resp.StatusCode != 200 {
			t.Fatalf("/readyz: %d %s", resp.StatusCode, resp.Body)
		}
		first := probe()
		if first == "" {
			t.Fatal("/readyz answered 200 without writing its probe row")
		}
		start := time.Now()
		for i := 0; i < 20; i++ {
			if resp := env.Do(apitest.Request{Method: "GET", Path: "/readyz"}); resp.StatusCode != 200 {
				t.Fatalf("/readyz: %d %s", resp.StatusCode, resp.Body)
			}
		}
		if got := probe(); got != first && time.Since(start) < 900*time.Millisecond {
			t.Errorf("20 /readyz in %s wrote the probe again (%s, then %s); want at most one write a second", time.Since(start), first, got)
		}
		time.Sleep(1100 * time.Millisecond)
		env.Do(apitest.Request{Method: "GET", Path: "/readyz"})
		if got := probe(); got == first {
			t.Errorf("/readyz a second later did not probe again (still %s)", got)
		}
	})
}
