package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/store"
)

// queueEnv is a sending environment with an operator and a second sending
// domain of alice's, news.example.com.
type queueEnv struct {
	*sendEnv
	op   apitest.User
	news domain.Domain
}

func startQueue(t *testing.T, d store.Dialect) *queueEnv {
	t.Helper()
	e := &queueEnv{sendEnv: startSend(t, d, false, nil)}
	e.op = e.NewUser("operator")
	if err := e.App.Accounts.SetAdmin(context.Background(), "operator", true); err != nil {
		t.Fatal(err)
	}
	e.news = e.NewDomain(e.user, "news.example.com")
	return e
}

func (e *queueEnv) admin(method, path string, body any) *apitest.Response {
	return e.Do(apitest.Request{Method: method, Path: path, Auth: e.op.Auth(), Body: body})
}

// sendFrom sends one message from the domain to each recipient.
func (e *queueEnv) sendFrom(t *testing.T, dom string, to ...string) {
	t.Helper()
	for _, r := range to {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		for _, kv := range [][2]string{{"from", "hello@" + dom}, {"to", r}, {"subject", "Hi"}, {"text", "Hello"}} {
			mw.WriteField(kv[0], kv[1])
		}
		mw.Close()
		resp := e.Do(apitest.Request{Method: "POST", Path: "/api/domains/" + dom + "/message", Auth: e.user.Auth(),
			Body: buf.Bytes(), Header: http.Header{"Content-Type": {mw.FormDataContentType()}}})
		if resp.StatusCode != 202 {
			t.Fatalf("send from %s to %s: %d %s", dom, r, resp.StatusCode, resp.Body)
		}
	}
}

// delivery returns the state and attempt count of the delivery to rcpt.
func (e *queueEnv) delivery(t *testing.T, rcpt string) (string, int) {
	t.Helper()
	var state string
	var attempts int
	if err := e.App.DB.Reader().QueryRowContext(context.Background(), `SELECT state, attempts FROM deliveries WHERE recipient = $1`,
		rcpt).Scan(&state, &attempts); err != nil {
		t.Fatalf("delivery to %s: %v", rcpt, err)
	}
	return state, attempts
}

// entries returns the types of rcpt's log entries, in recording order.
func (e *queueEnv) entries(t *testing.T, domainID int64, rcpt string) ([]string, []event.Entry) {
	t.Helper()
	list, err := e.App.Events.List(context.Background(), event.Filter{DomainID: domainID, Recipient: rcpt, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for i := len(list.Entries) - 1; i >= 0; i-- {
		types = append(types, string(list.Entries[i].Type))
	}
	return types, list.Entries // newest first
}

// sinkHas returns the recipients the sink received, sorted.
func (e *queueEnv) sinkHas() []string {
	var out []string
	for _, m := range e.sink.Messages() {
		out = append(out, m.To...)
	}
	slices.Sort(out)
	return out
}

func (e *queueEnv) suspend(t *testing.T, body map[string]any) map[string]any {
	t.Helper()
	resp := e.admin("POST", "/api/admin/queue/suspensions", body)
	if resp.StatusCode != 201 {
		t.Fatalf("suspend %v: %d %s", body, resp.StatusCode, resp.Body)
	}
	return resp.JSON["data"].(map[string]any)
}

// A suspended sending domain's deliveries are not attempted (no send,
// no deferred entry, attempt count 0, nothing at the sink) while another
// domain's are delivered; the listing shows them held with the reason;
// resuming delivers them within about a second.
func TestSuspendDomainHoldsAndResumeReleases(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		e := startQueue(t, d)
		sp := e.suspend(t, map[string]any{"domain": "Shop.Example.com.", "reason": "complaints"})
		if sp["kind"] != "domain" || sp["value"] != "shop.example.com" || sp["reason"] != "complaints" || sp["until"] != nil ||
			sp["created_by"] != "operator" {
			t.Fatalf("suspension: %v", sp)
		}
		held := []string{"a@rcpt.example.net", "b@rcpt.example.net", "c@other-rcpt.net"}
		e.sendFrom(t, "shop.example.com", held...)
		e.sendFrom(t, "news.example.com", "n@rcpt.example.net")
		if _, err := e.sink.WaitForMessages(ctxTimeout(t, 15*time.Second), 1); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1500 * time.Millisecond) // a second and a half of polls and claims
		if got := e.sinkHas(); !slices.Equal(got, []string{"n@rcpt.example.net"}) {
			t.Fatalf("the sink received %v; want news.example.com's message alone", got)
		}
		for _, r := range held {
			if state, attempts := e.delivery(t, r); state != "pending" || attempts != 0 {
				t.Errorf("held delivery to %s: %s, attempt %d; want pending, 0", r, state, attempts)
			}
			if types, _ := e.entries(t, e.dom.ID, r); !slices.Equal(types, []string{"queued"}) {
				t.Errorf("held delivery to %s logged %v; want queued alone (held deliveries are not attempts)", r, types)
			}
		}
		q := e.admin("GET", "/api/admin/queue?by=domain", nil)
		groups, _ := q.JSON["data"].(map[string]any)["groups"].([]any)
		if q.StatusCode != 200 || len(groups) != 1 {
			t.Fatalf("queue by domain: %d %s", q.StatusCode, q.Body)
		}
		g := groups[0].(map[string]any)
		if g["name"] != "shop.example.com" || g["pending"] != 3.0 || g["suspension"] == nil ||
			g["suspension"].(map[string]any)["reason"] != "complaints" {
			t.Errorf("queue by domain: %v", g)
		}
		if list := e.admin("GET", "/api/admin/queue/suspensions", nil); len(list.JSON["data"].([]any)) != 1 {
			t.Errorf("suspensions: %s", list.Body)
		}

		resumed := time.Now()
		if r := e.admin("DELETE", fmt.Sprintf("/api/admin/queue/suspensions/%v", sp["id"]), nil); r.StatusCode != 200 {
			t.Fatalf("resume: %d %s", r.StatusCode, r.Body)
		}
		if _, err := e.sink.WaitForMessages(ctxTimeout(t, 10*time.Second), 4); err != nil {
			t.Fatalf("after resuming: %v (received %v)", err, e.sinkHas())
		}
		if took := time.Since(resumed); took > 2*time.Second {
			t.Errorf("held deliveries arrived %v after the resume; want about a second at most", took)
		}
		if types := e.chain(t, held[0], event.Delivered); !slices.Equal(types, []string{"queued", "send", "delivered"}) {
			t.Errorf("after the resume %s logged %v; want queued, send (attempt 1), delivered", held[0], types)
		}
		if r := e.admin("DELETE", fmt.Sprintf("/api/admin/queue/suspensions/%v", sp["id"]), nil); r.StatusCode != 404 {
			t.Errorf("resuming twice: %d, want 404", r.StatusCode)
		}
	})
}

// An account suspension with a duration holds every domain of the
// account and ends by itself.
func TestSuspendAccountForADuration(t *testing.T) {
	t.Parallel()
	e := startQueue(t, store.SQLite)
	sp := e.suspend(t, map[string]any{"account": "alice", "duration": "2s"})
	until, err := time.Parse(time.RFC3339, sp["until"].(string))
	if err != nil {
		t.Fatalf("until: %v", sp)
	}
	e.sendFrom(t, "shop.example.com", "a@rcpt.example.net")
	e.sendFrom(t, "news.example.com", "b@rcpt.example.net")
	msgs, err := e.sink.WaitForMessages(ctxTimeout(t, 15*time.Second), 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if m.ReceivedAt.Before(until) {
			t.Errorf("%v delivered at %v, before the suspension's end %v", m.To, m.ReceivedAt, until)
		}
		if late := m.ReceivedAt.Sub(until); late > 2*time.Second {
			t.Errorf("%v delivered %v after the suspension ended; want about a second", m.To, late)
		}
	}
	if _, attempts := e.delivery(t, "a@rcpt.example.net"); attempts != 1 {
		t.Errorf("delivered at attempt %d; want 1 (the hold was no attempt)", attempts)
	}
	if list := e.admin("GET", "/api/admin/queue/suspensions", nil); len(list.JSON["data"].([]any)) != 0 {
		t.Errorf("suspensions after the end: %s", list.Body)
	}
}

// A suspended site (the recipient domain's MX hosts) holds the deliveries
// going there, not the others; the listing by site shows it; resume
// delivers them at once.
func TestSuspendSite(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		e := startQueue(t, d)
		sp := e.suspend(t, map[string]any{"site": "MX.rcpt.example.net", "reason": "421 storm"})
		e.sendFrom(t, "shop.example.com", "a@rcpt.example.net", "b@other-rcpt.net")
		if _, err := e.sink.WaitForMessages(ctxTimeout(t, 15*time.Second), 1); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1500 * time.Millisecond)
		if got := e.sinkHas(); !slices.Equal(got, []string{"b@other-rcpt.net"}) {
			t.Fatalf("the sink received %v; want other-rcpt.net's alone", got)
		}
		if state, attempts := e.delivery(t, "a@rcpt.example.net"); state != "pending" || attempts != 0 {
			t.Errorf("delivery held for its site: %s, attempt %d; want pending, 0", state, attempts)
		}
		q := e.admin("GET", "/api/admin/queue?by=site", nil)
		groups, _ := q.JSON["data"].(map[string]any)["groups"].([]any)
		if q.StatusCode != 200 || len(groups) != 1 {
			t.Fatalf("queue by site: %d %s", q.StatusCode, q.Body)
		}
		if g := groups[0].(map[string]any); g["name"] != "mx.rcpt.example.net" || g["pending"] != 1.0 || g["suspension"] == nil {
			t.Errorf("queue by site: %v", g)
		}
		resumed := time.Now()
		if r := e.admin("DELETE", fmt.Sprintf("/api/admin/queue/suspensions/%v", sp["id"]), nil); r.StatusCode != 200 {
			t.Fatalf("resume: %d %s", r.StatusCode, r.Body)
		}
		if _, err := e.sink.WaitForMessages(ctxTimeout(t, 10*time.Second), 2); err != nil {
			t.Fatalf("after resuming the site: %v", err)
		}
		if took := time.Since(resumed); took > 2500*time.Millisecond {
			t.Errorf("the held delivery arrived %v after the resume; want about a second", took)
		}
		if _, attempts := e.delivery(t, "a@rcpt.example.net"); attempts != 1 {
			t.Errorf("delivered at attempt %d; want 1", attempts)
		}
	})
}

// Bounce fails the selected queued deliveries (held ones included) with
// the operator's reason, logged as failed; others are left alone.
func TestBounceQueued(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		e := startQueue(t, d)
		sp := e.suspend(t, map[string]any{"domain": "shop.example.com"})
		e.suspend(t, map[string]any{"domain": "news.example.com"})
		e.sendFrom(t, "shop.example.com", "x@rcpt.example.net", "y@other-rcpt.net")
		e.sendFrom(t, "news.example.com", "z@rcpt.example.net")
		resp := e.admin("POST", "/api/admin/queue/bounce", map[string]any{"domain": "shop.example.com", "reason": "spam run"})
		if resp.StatusCode != 200 || resp.JSON["data"].(map[string]any)["bounced"] != 2.0 {
			t.Fatalf("bounce: %d %s", resp.StatusCode, resp.Body)
		}
		for _, r := range []string{"x@rcpt.example.net", "y@other-rcpt.net"} {
			if state, _ := e.delivery(t, r); state != "failed" {
				t.Errorf("bounced delivery to %s is %s, want failed", r, state)
			}
			types, list := e.entries(t, e.dom.ID, r)
			if !slices.Equal(types, []string{"queued", "failed"}) {
				t.Errorf("bounced delivery to %s logged %v; want queued, failed", r, types)
				continue
			}
			var details map[string]any
			json.Unmarshal(list[0].Details, &details)
			if details["reason"] != "spam run" {
				t.Errorf("failed entry of %s: details %v, want reason the operator's", r, details)
			}
		}
		if state, _ := e.delivery(t, "z@rcpt.example.net"); state != "pending" {
			t.Errorf("news.example.com's delivery is %s; want still pending", state)
		}
		e.admin("DELETE", fmt.Sprintf("/api/admin/queue/suspensions/%v", sp["id"]), nil)
		time.Sleep(1500 * time.Millisecond)
		if got := e.sinkHas(); len(got) != 0 {
			t.Errorf("the sink received %v after the resume; bounced deliveries are never sent", got)
		}
	})
}

// The queue control routes answer 403 to senders, 404 for a domain or
// account that does not exist and 422 naming the field for bad input.
func TestQueueControlAPIErrors(t *testing.T) {
	t.Parallel()
	e := startQueue(t, store.SQLite)
	for _, r := range []struct{ method, path string }{{"GET", "/api/admin/queue?by=site"}, {"GET", "/api/admin/queue/suspensions"},
		{"POST", "/api/admin/queue/suspensions"}, {"DELETE", "/api/admin/queue/suspensions/1"}, {"POST", "/api/admin/queue/bounce"},
		{"POST", "/api/admin/queue/retry"}} {
		resp := e.Do(apitest.Request{Method: r.method, Path: r.path, Auth: e.user.Auth(), Body: map[string]any{"domain": "shop.example.com"}})
		if resp.StatusCode != 403 {
			t.Errorf("alice %s %s: %d %s, want 403", r.method, r.path, resp.StatusCode, resp.Body)
		}
	}
	for _, c := range []struct {
		method, path string
		body         any
		status       int
		field        string
	}{
		{"POST", "/api/admin/queue/suspensions", map[string]any{"domain": "nope.example"}, 404, ""},
		{"POST", "/api/admin/queue/suspensions", map[string]any{"account": "nobody"}, 404, ""},
		{"POST", "/api/admin/queue/retry", map[string]any{"domain": "nope.example"}, 404, ""},
		{"POST", "/api/admin/queue/bounce", map[string]any{"account": "nobody", "reason": "x"}, 404, ""},
		{"DELETE", "/api/admin/queue/suspensions/999", nil, 404, ""},
		{"DELETE", "/api/admin/queue/suspensions/abc", nil, 404, ""},
		{"POST", "/api/admin/queue/suspensions", map[string]any{"domain": "shop.example.com", "account": "alice"}, 422, "account"},
		{"POST", "/api/admin/queue/suspensions", map[string]any{"reason": "why"}, 422, "selector"},
		{"POST", "/api/admin/queue/suspensions", map[string]any{"domain": "shop.example.com", "duration": "soon"}, 422, "duration"},
		{"POST", "/api/admin/queue/suspensions", map[string]any{"site": " "}, 422, "site"},
		{"POST", "/api/admin/queue/suspensions", map[string]any{"site": "x", "reason": strings.Repeat("r", 501)}, 422, "reason"},
		{"POST", "/api/admin/queue/bounce", map[string]any{"domain": "shop.example.com"}, 422, "reason"},
		// A reason is one line of text: it is logged, sent in webhooks and
		// printed by the CLI, where CR/LF would forge lines and escapes
		// drive the terminal.
		{"POST", "/api/admin/queue/suspensions", map[string]any{"site": "x", "reason": "ok\r\nforged: line"}, 422, "reason"},
		{"POST", "/api/admin/queue/suspensions", map[string]any{"site": "x", "reason": "red \x1b[31m"}, 422, "reason"},
		{"POST", "/api/admin/queue/bounce", map[string]any{"domain": "shop.example.com", "reason": "a\nb"}, 422, "reason"},
		{"POST", "/api/admin/queue/bounce", map[string]any{"domain": "shop.example.com", "reason": strings.Repeat("r", 501)}, 422,
			"reason"},
		// Too long for a duration: the bound, not a wrapped value.
		{"POST", "/api/admin/queue/suspensions", map[string]any{"site": "x", "duration": "213504 days"}, 422, "duration"},
		{"POST", "/api/admin/queue/suspensions", map[string]any{"site": "x", "duration": 5}, 422, "duration"},
		{"POST", "/api/admin/queue/suspensions", map[string]any{"site": "x", "duration": "-5m"}, 422, "duration"},
		{"POST", "/api/admin/queue/bounce", map[string]any{"reason": "all of it"}, 422, "selector"},
		{"POST", "/api/admin/queue/retry", map[string]any{"site": "a", "domain": "b"}, 422, "site"},
		{"GET", "/api/admin/queue?by=tenant", nil, 422, "by"},
	} {
		resp := e.admin(c.method, c.path, c.body)
		errs, _ := resp.JSON["errors"].(map[string]any)
		if resp.StatusCode != c.status || (c.field != "" && errs[c.field] == nil) {
			t.Errorf("%s %s %v: %d %s; want %d naming %q", c.method, c.path, c.body, resp.StatusCode, resp.Body, c.status, c.field)
		}
	}
	if list := e.admin("GET", "/api/admin/queue/suspensions", nil); len(list.JSON["data"].([]any)) != 0 {
		t.Errorf("refused requests left suspensions: %s", list.Body)
	}
	// Compatible: retry with no body retries everything, as before.
	if resp := e.admin("POST", "/api/admin/queue/retry", nil); resp.StatusCode != 200 || resp.JSON["data"].(map[string]any)["retried"] != 0.0 {
		t.Errorf("retry without a body: %d %s", resp.StatusCode, resp.Body)
	}
}

// The operator page lists suspensions with their reason and end, suspends
// from a form (CSRF required; bad input answered in place) and resumes.
func TestConsoleQueueControl(t *testing.T) {
	t.Parallel()
	e := startQueue(t, store.SQLite)
	o := &browser{t: t, base: e.URL}
	o.signIn("operator", e.op.Key, "/")
	_, page := o.do("GET", "/admin", nil, nil)
	if !strings.Contains(page, "No suspension in force") {
		t.Fatalf("/admin before any suspension:\n%s", page)
	}
	csrf := csrfRE.FindStringSubmatch(page)[1]
	form := func(kv ...string) url.Values {
		v := url.Values{"csrf": {csrf}}
		for i := 0; i+1 < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return v
	}
	if r, _ := o.do("POST", "/admin/queue/suspensions", url.Values{"kind": {"domain"}, "value": {"shop.example.com"}}, nil); r.StatusCode != 403 {
		t.Errorf("suspend without the CSRF token: %d, want 403", r.StatusCode)
	}
	if r, page := o.do("POST", "/admin/queue/suspensions", form("kind", "domain", "value", "shop.example.com", "duration", "soon"), nil); r.StatusCode != 422 || !strings.Contains(page, `id="s-duration-err"`) {
		t.Errorf("a bad duration: %d", r.StatusCode)
	}
	if r, page := o.do("POST", "/admin/queue/suspensions", form("kind", "account", "value", "nobody"), nil); r.StatusCode != 404 || !strings.Contains(page, `id="s-value-err"`) {
		t.Errorf("an unknown account: %d", r.StatusCode)
	}
	status, page := o.submit("/admin/queue/suspensions", form("kind", "domain", "value", "shop.example.com", "duration", "2 hours", "reason", "<b>complaints</b>"))
	if status != 303 || !strings.Contains(page, `id="notice">Deliveries of domain shop.example.com wait until `) || !strings.Contains(page, `<td data-label="Name">shop.example.com</td><td data-label="Reason">&lt;b&gt;complaints&lt;/b&gt;</td>`) || !strings.Contains(page, "<time datetime=") {
		t.Fatalf("suspend from the form: %d\n%s", status, page)
	}
	list, err := e.App.Queue.Suspensions(context.Background())
	if err != nil || len(list) != 1 || list[0].CreatedBy != "operator" || list[0].Until == nil {
		t.Fatalf("suspensions after the form: %+v, %v", list, err)
	}
	e.sendFrom(t, "shop.example.com", "a@rcpt.example.net")
	if _, page := o.do("GET", "/admin?by=account", nil, nil); !strings.Contains(page, `<td data-label="Account">alice</td><td data-label="Pending">1</td>`) ||
		!strings.Contains(page, "shop.example.com <strong>suspended</strong>") {
		t.Errorf("/admin?by=account: want alice's pending delivery and shop.example.com marked suspended\n%s", page)
	}
	if r, _ := o.do("POST", fmt.Sprintf("/admin/queue/suspensions/%d/resume", list[0].ID), form(), nil); r.StatusCode != 303 {
		t.Fatalf("resume: %d", r.StatusCode)
	}
	if _, err := e.sink.WaitForMessages(ctxTimeout(t, 10*time.Second), 1); err != nil {
		t.Fatalf("after resuming from the console: %v", err)
	}
	if _, page := o.do("GET", "/admin", nil, nil); !strings.Contains(page, "No suspension in force") {
		t.Error("the resumed suspension is still listed")
	}
}
