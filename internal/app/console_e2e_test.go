package app_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/store"
)

// browser is a cookie-keeping client that does not follow redirects:
// cookie is the session's, flash the notice a form's POST leaves for the
// next page.
type browser struct {
	t      *testing.T
	base   string
	cookie *http.Cookie
	flash  *http.Cookie
}

func (b *browser) do(method, path string, form url.Values, header http.Header) (*http.Response, string) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, b.base+path, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if b.cookie != nil {
		req.AddCookie(b.cookie)
	}
	if b.flash != nil {
		req.AddCookie(b.flash)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	for _, c := range resp.Cookies() {
		keep := &b.cookie
		if strings.HasSuffix(c.Name, "postline-flash") {
			keep = &b.flash
		} else if !strings.HasSuffix(c.Name, "postline") {
			continue
		}
		if c.MaxAge < 0 {
			*keep = nil
		} else {
			*keep = c
		}
	}
	return resp, string(raw)
}

// submit posts a form as a browser does: a 303 answer is followed to its
// page (which shows the POST's notice). It returns the POST's status and
// the page it ended on.
func (b *browser) submit(path string, form url.Values) (int, string) {
	b.t.Helper()
	resp, page := b.do("POST", path, form, nil)
	if resp.StatusCode == http.StatusSeeOther {
		_, page = b.do("GET", resp.Header.Get("Location"), nil, nil)
	}
	return resp.StatusCode, page
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func (b *browser) signIn(login, secret, next string) *http.Response {
	b.t.Helper()
	resp, _ := b.do("POST", "/sign-in", url.Values{"login": {login}, "secret": {secret}, "next": {next}}, nil)
	return resp
}

// TestConsoleSessions: sign-in with a key or a password, the session
// cookie's flags, the security headers, CSRF and cross-origin refusal,
// sign-out, another account's domain as a 404 page, no open redirect, the
// session ending when its key is revoked or it sits idle.
func TestConsoleSessions(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		env := apitest.Start(t, d, nil)
		alice, bob := env.NewUser("alice"), env.NewUser("bob")
		env.NewDomain(alice, "alice.example")
		env.NewDomain(bob, "bob.example")
		b := &browser{t: t, base: env.URL}

		resp, page := b.do("GET", "/", nil, nil)
		csp := resp.Header.Get("Content-Security-Policy")
		if resp.StatusCode != 200 || !strings.Contains(page, `action="/sign-in"`) || !strings.Contains(csp, "script-src 'self'") ||
			strings.Contains(csp, "unsafe-inline") || !strings.Contains(csp, "frame-ancestors 'none'") || resp.Header.Get("X-Frame-Options") != "DENY" {
			t.Fatalf("signed-out /: %d CSP %q XFO %q\n%s", resp.StatusCode, csp, resp.Header.Get("X-Frame-Options"), page)
		}
		if resp, _ := b.do("GET", "/domains", nil, nil); resp.StatusCode != 401 {
			t.Errorf("/domains signed out: %d, want 401 with the sign-in form", resp.StatusCode)
		}
		if r := b.signIn("alice", "pl_not-the-key", "/"); r.StatusCode != 401 || b.cookie != nil {
			t.Fatalf("a wrong key: %d, cookie %v", r.StatusCode, b.cookie)
		}
		r := b.signIn("alice", alice.Key, "//evil.example/x")
		if r.StatusCode != 303 || r.Header.Get("Location") != "/" || b.cookie == nil {
			t.Fatalf("sign-in with a key and next=//evil.example: %d Location %q cookie %v", r.StatusCode, r.Header.Get("Location"), b.cookie)
		}
		if !b.cookie.HttpOnly || b.cookie.SameSite != http.SameSiteStrictMode || b.cookie.Secure || strings.Contains(b.cookie.Value, alice.Key) {
			t.Errorf("session cookie %+v: want HttpOnly, SameSite=Strict, not Secure over plain HTTP, not the key", b.cookie)
		}
		resp, page = b.do("GET", "/", nil, nil)
		if resp.StatusCode != 200 || !strings.Contains(page, "alice.example") || strings.Contains(page, "bob.example") || strings.Contains(page, alice.Key) {
			t.Fatalf("overview: %d\n%s", resp.StatusCode, page)
		}
		if resp, page := b.do("GET", "/domains/alice.example", nil, nil); resp.StatusCode != 200 || !strings.Contains(page, "_domainkey.alice.example") {
			t.Errorf("own domain page: %d\n%s", resp.StatusCode, page)
		}
		for _, p := range []string{"/domains/bob.example", "/domains/nope.example", "/no-such-page"} {
			if resp, page := b.do("GET", p, nil, nil); resp.StatusCode != 404 || strings.Contains(page, "bob.example") && p != "/domains/bob.example" {
				t.Errorf("GET %s: %d, want the 404 page", p, resp.StatusCode)
			}
		}
		if resp, _ := b.do("GET", "/api/nope", nil, nil); resp.StatusCode != 404 || !strings.Contains(resp.Header.Get("Content-Type"), "json") {
			t.Errorf("/api/nope: %d %s, want the API's JSON 404", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		m := csrfRE.FindStringSubmatch(page)
		if m == nil {
			t.Fatal("no CSRF token on the page")
		}
		if resp, _ := b.do("POST", "/sign-out", url.Values{}, nil); resp.StatusCode != 403 {
			t.Errorf("sign-out without the token: %d, want 403", resp.StatusCode)
		}
		if resp, _ := b.do("POST", "/sign-out", url.Values{"csrf": {m[1]}}, http.Header{"Origin": {"https://evil.example"}}); resp.StatusCode != 403 {
			t.Errorf("sign-out from another origin: %d, want 403", resp.StatusCode)
		}
		if resp, _ := b.do("POST", "/sign-out", url.Values{"csrf": {m[1]}}, http.Header{"Sec-Fetch-Site": {"cross-site"}}); resp.StatusCode != 403 {
			t.Errorf("sign-out marked cross-site: %d, want 403", resp.StatusCode)
		}
		old := b.cookie
		if resp, _ := b.do("POST", "/sign-out", url.Values{"csrf": {m[1]}}, nil); resp.StatusCode != 303 || b.cookie != nil {
			t.Fatalf("sign-out: %d, cookie %v", resp.StatusCode, b.cookie)
		}
		b.cookie = old // the old cookie no longer signs anyone in
		if resp, _ := b.do("GET", "/domains", nil, nil); resp.StatusCode != 401 {
			t.Errorf("after sign-out the old cookie still works: %d", resp.StatusCode)
		}

		// A password; then the key's revocation ends a key session.
		if err := env.App.Accounts.SetPassword(context.Background(), "bob", "correct horse battery"); err != nil {
			t.Fatal(err)
		}
		pb := &browser{t: t, base: env.URL}
		if r := pb.signIn("bob", "correct horse battery", "/domains"); r.StatusCode != 303 || r.Header.Get("Location") != "/domains" {
			t.Fatalf("password sign-in: %d %q", r.StatusCode, r.Header.Get("Location"))
		}
		b.cookie = nil
		b.signIn("alice", alice.Key, "/")
		keys, _ := env.App.Accounts.Keys(context.Background(), "alice")
		env.App.Accounts.RevokeKey(context.Background(), keys[0].ID)
		// The sign-in page says why a session ended, once (issue 32, defect 9).
		if resp, page := b.do("GET", "/domains", nil, nil); resp.StatusCode != 401 ||
			!strings.Contains(page, "Your session ended: the API key it was started with was revoked.") || b.cookie != nil {
			t.Errorf("a session of a revoked key: %d (cookie %v)\n%s", resp.StatusCode, b.cookie, page)
		}
		if _, page := b.do("GET", "/domains", nil, nil); strings.Contains(page, "session ended") {
			t.Errorf("the reason was said twice:\n%s", page)
		}
		// Idle past the timeout (12 h by default): ended. A form posted then
		// is sent to the sign-in page, which says why.
		if _, err := env.App.DB.Writer().ExecContext(context.Background(), `UPDATE sessions SET last_seen_at = last_seen_at - 13 * 3600 * 1000`); err != nil {
			t.Fatal(err)
		}
		if resp, _ := pb.do("POST", "/sign-out", url.Values{"csrf": {"x"}}, nil); resp.StatusCode != 303 || resp.Header.Get("Location") != "/?ended=idle" {
			t.Errorf("a form posted by a session idle for 13 h: %d %q, want 303 to /?ended=idle", resp.StatusCode, resp.Header.Get("Location"))
		}
		if resp, page := pb.do("GET", "/?ended=idle", nil, nil); resp.StatusCode != 200 ||
			!strings.Contains(page, "Your session ended after 12 hours without use.") || !strings.Contains(page, `action="/sign-in"`) {
			t.Errorf("the sign-in page after an idle session: %d\n%s", resp.StatusCode, page)
		}
		if _, page := (&browser{t: t, base: env.URL}).do("GET", "/?ended=%3Cb%3Eowned", nil, nil); strings.Contains(page, "owned") ||
			strings.Contains(page, "session-ended") {
			t.Errorf("the sign-in page shows text from its link:\n%s", page)
		}
		// The stylesheet: hashed name, cached for ever.
		css := regexp.MustCompile(`href="(/static/console\.[0-9a-f]+\.css)"`).FindStringSubmatch(page)
		if css == nil {
			t.Fatal("no stylesheet link")
		}
		if resp, _ := b.do("GET", css[1], nil, nil); resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Cache-Control"), "immutable") {
			t.Errorf("stylesheet: %d %q", resp.StatusCode, resp.Header.Get("Cache-Control"))
		}
	})
}

// TestConsoleOff: --console=false leaves / to the API's 404.
func TestConsoleOff(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, store.SQLite, func(c *config.Config) { c.Console = false })
	if resp := env.Do(apitest.Request{Method: "GET", Path: "/api/domains/x"}); resp.StatusCode != 401 {
		t.Fatalf("API: %d", resp.StatusCode)
	}
	b := &browser{t: t, base: env.URL}
	if resp, _ := b.do("GET", "/", nil, nil); resp.StatusCode != 404 {
		t.Errorf("/ with the console off: %d, want 404", resp.StatusCode)
	}
}

// TestConsoleLogAndChain: the log page lists a sent message's entries with
// every value escaped, filters by type, and opens the message's chain;
// another account's log is the 404 page.
func TestConsoleLogAndChain(t *testing.T) {
	t.Parallel()
	e := startSend(t, store.SQLite, false, nil)
	other := e.NewUser("mallory")
	e.NewDomain(other, "mallory.example")
	parts := basicParts("ann@rcpt.example.net")
	for i := range parts {
		if parts[i].name == "subject" {
			parts[i].value = `<script>alert("x")</script> Order`
		}
	}
	resp := e.send(t, parts, nil)
	if resp.StatusCode != 202 {
		t.Fatalf("send: %d %s", resp.StatusCode, resp.Body)
	}
	msgID := resp.JSON["data"].(map[string]any)["message_ids"].([]any)[0].(string)
	if _, err := e.sink.WaitForMessages(ctxTimeout(t, 15*time.Second), 1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the delivered entry", func() bool { return len(e.entries(t, "ann@rcpt.example.net", event.Delivered)) == 1 })
	b := &browser{t: t, base: e.URL}
	b.signIn("alice", e.user.Key, "/")
	r, page := b.do("GET", "/domains/shop.example.com/log", nil, nil)
	if r.StatusCode != 200 || strings.Contains(page, "<script>alert") || !strings.Contains(page, "&lt;script&gt;") ||
		!strings.Contains(page, "ann@rcpt.example.net") || !strings.Contains(page, "/messages/"+msgID) {
		t.Fatalf("log page: %d\n%s", r.StatusCode, page)
	}
	if _, page := b.do("GET", "/domains/shop.example.com/log?type=delivered", nil, nil); strings.Count(page, "<td>delivered</td>") != 1 || strings.Contains(page, "<td>queued</td>") {
		t.Errorf("type=delivered shows other types:\n%s", page)
	}
	if !strings.Contains(page, `<a href="/domains/shop.example.com" id="back-to-domain">`) {
		t.Error("the log page does not link back to its domain")
	}
	r, page = b.do("GET", "/domains/shop.example.com/messages/"+msgID, nil, nil)
	q, s, dl := strings.Index(page, "<td>queued</td>"), strings.Index(page, "<td>send</td>"), strings.Index(page, "<td>delivered</td>")
	if r.StatusCode != 200 || q < 0 || s < q || dl < s {
		t.Errorf("chain page: %d, queued/send/delivered at %d/%d/%d\n%s", r.StatusCode, q, s, dl, page)
	}
	// The details are labelled fields, not raw JSON (issue 32, defect 8).
	if !strings.Contains(page, "<dt>SMTP code</dt><dd>250</dd>") || !strings.Contains(page, "<dt>Attempt</dt><dd>1</dd>") ||
		!strings.Contains(page, "<dt>Certificate verified</dt><dd>no</dd>") || strings.Contains(page, "smtp_code") || strings.Contains(page, "{&#34;") {
		t.Errorf("the chain page's details are not labelled fields:\n%s", page)
	}
	// The overview counts the message from the hourly counts and charts it.
	_, page = b.do("GET", "/", nil, nil)
	if !regexp.MustCompile(`<th scope="row">24 hours</th><td>1</td><td>1</td>`).MatchString(page) ||
		!strings.Contains(page, `<svg class="chart"`) || !strings.Contains(page, "<title>1</title>") || strings.Contains(page, "mallory") {
		t.Errorf("overview after one delivered message:\n%s", page)
	}
	for _, p := range []string{"/domains/mallory.example/log", "/domains/mallory.example/log/tail", "/domains/mallory.example/messages/" + msgID} {
		if r, _ := b.do("GET", p, nil, nil); r.StatusCode != 404 {
			t.Errorf("GET %s: %d, want 404", p, r.StatusCode)
		}
	}
	// Counts have thousands separators.
	many := make([]event.Entry, 1500)
	for i := range many {
		many[i] = event.Entry{DomainID: e.dom.ID, MessageID: fmt.Sprintf("m%d@shop.example.com", i), Type: event.Queued,
			Sender: "a@shop.example.com", Recipient: "x@rcpt.example.net", CreatedAt: time.Now().UTC()}
	}
	if err := e.App.Events.Record(context.Background(), many...); err != nil {
		t.Fatal(err)
	}
	if _, page := b.do("GET", "/domains/shop.example.com/log", nil, nil); !regexp.MustCompile(`<p id="log-total">(more than )?1,5\d\d entries`).MatchString(page) {
		t.Errorf("the log's total without a thousands separator:\n%s", page)
	}
	if _, page := b.do("GET", "/", nil, nil); !regexp.MustCompile(`<th scope="row">24 hours</th><td>1,501</td>`).MatchString(page) {
		t.Errorf("the overview's count without a thousands separator:\n%s", page)
	}
}

// TestConsoleKeysAndSuppressions: a key created in the console is shown
// once and works on the API; revoking another account's key id is a 404;
// an address suppressed and whitelisted in the console is what the
// suppression service has; bad input is shown next to its field.
func TestConsoleKeysAndSuppressions(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, store.SQLite, nil)
	alice, bob := env.NewUser("alice"), env.NewUser("bob")
	env.NewDomain(alice, "alice.example")
	env.NewDomain(bob, "bob.example")
	b := &browser{t: t, base: env.URL}
	b.signIn("alice", alice.Key, "/")
	_, page := b.do("GET", "/keys", nil, nil)
	csrf := csrfRE.FindStringSubmatch(page)[1]
	status, page := b.submit("/keys", url.Values{"csrf": {csrf}, "name": {"deploy"}})
	key := regexp.MustCompile(`pl_[A-Za-z0-9_-]{40,}`).FindString(page)
	if status != 303 || key == "" || !strings.Contains(page, `<p class="notice" role="status" id="notice">API key created.</p>`) ||
		!strings.Contains(page, `<button type="button" class="copy" data-copy="`+key+`"`) {
		t.Fatalf("create key: %d, then\n%s", status, page)
	}
	// Shown once: a reload shows neither the key nor the notice.
	if _, again := b.do("GET", "/keys", nil, nil); strings.Contains(again, key) || strings.Contains(again, "API key created") {
		t.Errorf("a reload of the keys page shows the new key or the notice again")
	}
	if resp := env.Do(apitest.Request{Method: "GET", Path: "/api/domains", Auth: apitest.User{Login: "alice", Key: key}.Auth()}); resp.StatusCode != 200 {
		t.Errorf("the console's new key on the API: %d", resp.StatusCode)
	}
	if _, page := b.do("GET", "/keys", nil, nil); strings.Contains(page, key) || !strings.Contains(page, "deploy") {
		t.Error("the key list shows the whole key, or not its name")
	}
	signing, err := env.App.Webhooks.SigningKey(context.Background(), alice.ID)
	if _, page := b.do("GET", "/keys", nil, nil); err != nil || !strings.Contains(page, `<code class="wrap" id="signing-key">`+signing+`</code>`) {
		t.Errorf("the keys page does not show the account's webhook signing key %q (%v)", signing, err)
	}
	if r, page := b.do("POST", "/keys", url.Values{"csrf": {csrf}, "name": {strings.Repeat("n", 101)}}, nil); r.StatusCode != 422 || !strings.Contains(page, `class="error"`) {
		t.Errorf("a 101-character key name: %d", r.StatusCode)
	}
	// A scoped key from the form: it sends nothing outside its scopes, and
	// does not sign in to the console.
	status, page = b.submit("/keys", url.Values{"csrf": {csrf}, "name": {"validator"}, "scopes": {"validate"},
		"domains": {"alice.example"}, "expires": {time.Now().AddDate(0, 1, 0).Format("2006-01-02")}})
	scoped := regexp.MustCompile(`pl_[A-Za-z0-9_-]{40,}`).FindString(page)
	if status != 303 || scoped == "" || !strings.Contains(page, "<td>validate</td><td>alice.example</td>") {
		t.Fatalf("create a scoped key: %d\n%s", status, page)
	}
	sk := apitest.User{Login: "alice", Key: scoped}
	if resp := env.Do(apitest.Request{Method: "GET", Path: "/api/domains", Auth: sk.Auth()}); resp.StatusCode != 403 {
		t.Errorf("a validate key on the domains list: %d", resp.StatusCode)
	}
	if r, page := b.do("POST", "/keys", url.Values{"csrf": {csrf}, "scopes": {"everything"}}, nil); r.StatusCode != 422 || !strings.Contains(page, "unknown scope") {
		t.Errorf("an unknown scope in the form: %d", r.StatusCode)
	}
	other := &browser{t: t, base: env.URL}
	if r := other.signIn("alice", scoped, "/"); r.StatusCode != 403 || other.cookie != nil {
		t.Errorf("console sign-in with a scoped key: %d, cookie %v", r.StatusCode, other.cookie)
	}

	bobKeys, _ := env.App.Accounts.Keys(context.Background(), "bob")
	if r, _ := b.do("POST", fmt.Sprintf("/keys/%d/revoke", bobKeys[0].ID), url.Values{"csrf": {csrf}}, nil); r.StatusCode != 404 {
		t.Errorf("revoking bob's key from alice's console: %d, want 404", r.StatusCode)
	}
	if resp := env.Do(apitest.Request{Method: "GET", Path: "/api/domains", Auth: bob.Auth()}); resp.StatusCode != 200 {
		t.Fatalf("bob's key after alice's attempt: %d", resp.StatusCode)
	}

	add := func(recipient, typ string) (*http.Response, string) {
		return b.do("POST", "/domains/alice.example/suppressions", url.Values{"csrf": {csrf}, "recipient": {recipient}, "type": {typ}}, nil)
	}
	if r, _ := add("gone@x.example", "bounce"); r.StatusCode != 303 {
		t.Fatalf("suppress: %d", r.StatusCode)
	}
	if r, _ := add("gone@x.example", "whitelist"); r.StatusCode != 303 {
		t.Fatalf("whitelist: %d", r.StatusCode)
	}
	dom, err := env.App.Domains.Owned(context.Background(), alice.ID, "alice.example")
	if err != nil {
		t.Fatal(err)
	}
	v, err := env.App.Suppressions.Check(context.Background(), dom.ID, "gone@x.example")
	if err != nil || v.Suppressed {
		t.Errorf("after suppress + whitelist in the console: %+v, %v; want not suppressed", v, err)
	}
	if r, page := add("not an address", "bounce"); r.StatusCode != 422 || !strings.Contains(page, `id="s-recipient-err"`) {
		t.Errorf("a bad recipient: %d", r.StatusCode)
	}
	if r, _ := b.do("GET", "/domains/bob.example/suppressions", nil, nil); r.StatusCode != 404 {
		t.Errorf("bob's suppressions from alice's console: %d", r.StatusCode)
	}
	if r, _ := b.do("POST", "/domains/bob.example/suppressions", url.Values{"csrf": {csrf}, "recipient": {"x@y.example"}, "type": {"bounce"}}, nil); r.StatusCode != 404 {
		t.Errorf("adding to bob's list from alice's console: %d", r.StatusCode)
	}
}

// TestConsoleWebhooks: a webhook added in the console shows its secret
// once, then its posts with their status; another account's webhooks are
// a 404 page.
func TestConsoleWebhooks(t *testing.T) {
	t.Parallel()
	e := startSend(t, store.SQLite, false, func(c *config.Config) { c.WebhookAllowPrivate = true })
	other := e.NewUser("mallory")
	e.NewDomain(other, "mallory.example")
	hooks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) }))
	defer hooks.Close()
	b := &browser{t: t, base: e.URL}
	b.signIn("alice", e.user.Key, "/")
	_, page := b.do("GET", "/domains/shop.example.com/webhooks", nil, nil)
	csrf := csrfRE.FindStringSubmatch(page)[1]
	status, page := b.submit("/domains/shop.example.com/webhooks", url.Values{"csrf": {csrf}, "url": {hooks.URL + "/in"}, "event_types": {"delivered"}})
	secret := regexp.MustCompile(`whsec_[A-Za-z0-9+/=_-]+`).FindString(page)
	if status != 303 || secret == "" || !strings.Contains(page, `data-copy="`+secret+`"`) || !strings.Contains(page, "Webhook to "+hooks.URL+"/in added.") {
		t.Fatalf("add webhook: %d\n%s", status, page)
	}
	if r, page := b.do("POST", "/domains/shop.example.com/webhooks", url.Values{"csrf": {csrf}, "url": {"ftp://x"}}, nil); r.StatusCode != 422 || !strings.Contains(page, `id="wh-url-err"`) {
		t.Errorf("a bad URL: %d", r.StatusCode)
	}
	e.send(t, basicParts("ann@rcpt.example.net"), nil)
	waitFor(t, "a post listed with status 204", func() bool {
		_, page := b.do("GET", "/domains/shop.example.com/webhooks", nil, nil)
		return strings.Contains(page, "<td>204</td>") && !strings.Contains(page, "whsec_")
	})
	if r, _ := b.do("GET", "/domains/mallory.example/webhooks", nil, nil); r.StatusCode != 404 {
		t.Errorf("mallory's webhooks from alice's console: %d", r.StatusCode)
	}
	// A Mailgun-format webhook is listed beside it, with its format.
	if resp := e.Do(apitest.Request{Method: "POST", Path: "/v3/domains/shop.example.com/webhooks", Auth: apitest.User{Login: "api", Key: e.user.Key}.Auth(),
		Body: url.Values{"id": {"delivered"}, "url": {hooks.URL + "/mg"}}.Encode(), Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}}); resp.StatusCode != 200 {
		t.Fatalf("mailgun webhook: %d %s", resp.StatusCode, resp.Body)
	}
	_, page = b.do("GET", "/domains/shop.example.com/webhooks", nil, nil)
	if !strings.Contains(page, hooks.URL+"/mg") || !strings.Contains(page, "<dt>Format</dt><dd>Mailgun") || !strings.Contains(page, "<dt>Format</dt><dd>Postline") {
		t.Errorf("the webhooks page does not show both kinds with their format:\n%s", page)
	}
}

// TestConsoleOperator: the operator page is 403 to senders; an operator
// creates and disables accounts there (the disabled account's key stops
// working, the last enabled operator cannot disable itself) and sees the
// queue.
func TestConsoleOperator(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, store.SQLite, nil)
	alice, op := env.NewUser("alice"), env.NewUser("op")
	env.App.Accounts.SetAdmin(context.Background(), "op", true)
	b := &browser{t: t, base: env.URL}
	b.signIn("alice", alice.Key, "/")
	if r, _ := b.do("GET", "/admin", nil, nil); r.StatusCode != 403 {
		t.Errorf("/admin for a sender: %d, want 403", r.StatusCode)
	}
	_, page := b.do("GET", "/", nil, nil)
	if strings.Contains(page, `href="/admin"`) {
		t.Error("a sender's navigation links the operator page")
	}
	o := &browser{t: t, base: env.URL}
	o.signIn("op", op.Key, "/")
	// alice's egress pool (set in the store: this server has no egress file).
	if err := store.NewAccounts(env.App.DB).SetAccountPool(context.Background(), alice.ID, "main"); err != nil {
		t.Fatal(err)
	}
	r, page := o.do("GET", "/admin", nil, nil)
	if r.StatusCode != 200 || !strings.Contains(page, "alice") || !strings.Contains(page, "Nothing waiting") {
		t.Fatalf("/admin for the operator: %d\n%s", r.StatusCode, page)
	}
	if !strings.Contains(page, "Egress pool</th>") || !strings.Contains(page, `<td data-label="Egress pool">main</td>`) || !strings.Contains(page, `<td data-label="Egress pool">none</td>`) {
		t.Errorf("/admin does not show the accounts' egress pools (alice: main, op: none)")
	}
	csrf := csrfRE.FindStringSubmatch(page)[1]
	if r, page := o.do("GET", "/admin?keys=alice", nil, nil); r.StatusCode != 200 || !strings.Contains(page, "Keys of alice") || strings.Contains(page, alice.Key) {
		t.Errorf("alice's keys on the operator page: %d", r.StatusCode)
	}
	if status, page := o.submit("/admin/accounts", url.Values{"csrf": {csrf}, "login": {"dave"}}); status != 303 ||
		!strings.Contains(page, `id="notice">Account dave created;`) || !strings.Contains(page, `<td data-label="Login">dave`) {
		t.Errorf("create dave: %d\n%s", status, page)
	}
	if r, page := o.do("POST", "/admin/accounts", url.Values{"csrf": {csrf}, "login": {"no spaces"}}, nil); r.StatusCode != 422 || !strings.Contains(page, `id="a-login-err"`) {
		t.Errorf("a bad login: %d", r.StatusCode)
	}
	if r, _ := o.do("POST", "/admin/accounts/alice/disable", url.Values{"csrf": {csrf}}, nil); r.StatusCode != 303 {
		t.Fatalf("disable alice: %d", r.StatusCode)
	}
	if resp := env.Do(apitest.Request{Method: "GET", Path: "/api/domains", Auth: alice.Auth()}); resp.StatusCode != 401 {
		t.Errorf("alice's key after the operator disabled her: %d", resp.StatusCode)
	}
	if r, page := b.do("GET", "/domains", nil, nil); r.StatusCode != 401 || !strings.Contains(page, "Your session ended: an operator disabled the account.") {
		t.Errorf("alice's console session after she was disabled: %d\n%s", r.StatusCode, page)
	}
	b.do("POST", "/admin/accounts/op/disable", url.Values{"csrf": {csrf}}, nil) // alice's ended session, the operator's token
	if resp := env.Do(apitest.Request{Method: "GET", Path: "/api/domains", Auth: op.Auth()}); resp.StatusCode != 200 {
		t.Error("a signed-out browser with the operator's CSRF token disabled the operator")
	}
	// The last enabled operator cannot lock itself out (issue 32, defect 5).
	r, page = o.do("POST", "/admin/accounts/op/disable", url.Values{"csrf": {csrf}}, nil)
	if r.StatusCode != 409 || !strings.Contains(page, "op is the last enabled operator account") {
		t.Errorf("the last operator disabling itself: %d\n%s", r.StatusCode, page)
	}
	if r, _ := o.do("GET", "/admin", nil, nil); r.StatusCode != 200 {
		t.Errorf("the operator page after the refusal: %d, want the operator still signed in", r.StatusCode)
	}
}

// TestConsoleValidation: one address checked in the console, with the
// reason, warnings and typo suggestion explained and escaped; the checks
// count against the account's hourly validation budget.
func TestConsoleValidation(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, store.SQLite, func(c *config.Config) { c.RateValidationPerHour = 3 })
	alice := env.NewUser("alice")
	env.DNS.AddMX("acme-mail.com", 10, "mx.acme-mail.com")
	env.DNS.AddA("mx.acme-mail.com", "192.0.2.10")
	b := &browser{t: t, base: env.URL}
	b.signIn("alice", alice.Key, "/")
	check := func(email string) string {
		_, page := b.do("GET", "/validation?email="+url.QueryEscape(email), nil, nil)
		return page
	}
	if p := check("info@acme-mail.com"); !strings.Contains(p, "<h2>Valid</h2>") || !strings.Contains(p, "role_account") {
		t.Errorf("info@acme-mail.com:\n%s", p)
	}
	if p := check("jane@gmail.con"); !strings.Contains(p, "Not valid") || !strings.Contains(p, "jane@gmail.com") {
		t.Errorf("a typo domain:\n%s", p)
	}
	if p := check(`"<script>"@acme-mail.com`); strings.Contains(p, "<script>") {
		t.Error("the address is not escaped")
	}
	if p := check("x@acme-mail.com"); !strings.Contains(p, "limit of your account is reached") {
		t.Errorf("a fourth check with a budget of 3:\n%s", p)
	}
}

// TestConsoleDomainChanges: a relay host off the operator's allowlist is
// shown next to its field; "verify now" shows each record's state; a
// domain is deleted only when its name is typed again.
func TestConsoleDomainChanges(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, store.SQLite, nil)
	alice := env.NewUser("alice")
	b := &browser{t: t, base: env.URL}
	b.signIn("alice", alice.Key, "/")
	_, page := b.do("GET", "/domains", nil, nil)
	csrf := csrfRE.FindStringSubmatch(page)[1]
	r, page := b.do("POST", "/domains", url.Values{"csrf": {csrf}, "name": {"shop.example"}, "mode": {"smtp"}, "host": {"10.0.0.1"}}, nil)
	if r.StatusCode != 422 || !strings.Contains(page, `id="d-host-err"`) {
		t.Errorf("a relay host off the allowlist: %d", r.StatusCode)
	}
	if r, _ := b.do("POST", "/domains", url.Values{"csrf": {csrf}, "name": {"shop.example"}, "mode": {"direct"}}, nil); r.StatusCode != 303 {
		t.Fatalf("add a direct domain: %d", r.StatusCode)
	}
	status, page := b.submit("/domains/shop.example/verify", url.Values{"csrf": {csrf}})
	if status != 303 || !strings.Contains(page, "not verified yet") || !strings.Contains(page, "<strong>missing</strong>") {
		t.Errorf("verify now: %d\n%s", status, page)
	}
	if r, _ := b.do("POST", "/domains/shop.example/delete", url.Values{"csrf": {csrf}, "confirm": {"shop"}}, nil); r.StatusCode != 422 {
		t.Errorf("delete with the wrong confirmation: %d", r.StatusCode)
	}
	if r, _ := b.do("POST", "/domains/shop.example/delete", url.Values{"csrf": {csrf}, "confirm": {"shop.example"}}, nil); r.StatusCode != 303 {
		t.Errorf("delete: %d", r.StatusCode)
	}
	if r, _ := b.do("GET", "/domains/shop.example", nil, nil); r.StatusCode != 404 {
		t.Errorf("after delete: %d", r.StatusCode)
	}
}

// TestConsoleJobsAreTheAccounts: another account's list is a 404 page, and
// its results cannot be downloaded.
func TestConsoleJobsAreTheAccounts(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, store.SQLite, nil)
	alice, bob := env.NewUser("alice"), env.NewUser("bob")
	resp := env.Do(apitest.Request{Method: "POST", Path: "/api/email/validate/jobs", Auth: alice.Auth(),
		Body: map[string]any{"emails": []string{"a@example.com"}}})
	id := int(resp.JSON["data"].(map[string]any)["id"].(float64))
	a := &browser{t: t, base: env.URL}
	a.signIn("alice", alice.Key, "/")
	if r, _ := a.do("GET", fmt.Sprintf("/validation/jobs/%d", id), nil, nil); r.StatusCode != 200 {
		t.Fatalf("alice's own list: %d", r.StatusCode)
	}
	b := &browser{t: t, base: env.URL}
	b.signIn("bob", bob.Key, "/")
	for _, p := range []string{fmt.Sprintf("/validation/jobs/%d", id), fmt.Sprintf("/validation/jobs/%d/results.csv", id)} {
		if r, body := b.do("GET", p, nil, nil); r.StatusCode != 404 || strings.Contains(body, "a@example.com") {
			t.Errorf("bob GET %s: %d", p, r.StatusCode)
		}
	}
}

// TestConsoleDomainSettingsAndSignInLimit: the tracking switches and hosts
// and the relay settings change from the domain page (the DKIM key and
// the relay password stay; a host outside the domain is shown as an
// error); sign-in failures past the limit are refused even with the right
// key.
func TestConsoleDomainSettingsAndSignInLimit(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, store.SQLite, func(c *config.Config) {
		c.RelayAllowlist = []string{"*.relay.example"}
		c.AuthAttemptsPerLogin = 2
	})
	alice := env.NewUser("alice")
	ctx := context.Background()
	d0 := env.NewDomain(alice, "shop.example")
	b := &browser{t: t, base: env.URL}
	b.signIn("alice", alice.Key, "/")
	_, page := b.do("GET", "/domains/shop.example", nil, nil)
	if !strings.Contains(page, `class="copy"`) {
		t.Error("no copy buttons next to the records")
	}
	csrf := csrfRE.FindStringSubmatch(page)[1]
	post := func(v url.Values) (*http.Response, string) {
		v.Set("csrf", csrf)
		return b.do("POST", "/domains/shop.example/settings", v, nil)
	}
	if r, _ := post(url.Values{"section": {"tracking"}, "opens": {"on"}, "unsubscribe": {"on"}, "tracking_host": {"t.shop.example"}}); r.StatusCode != 303 {
		t.Fatalf("tracking settings: %d", r.StatusCode)
	}
	d, _ := env.App.Domains.Owned(ctx, alice.ID, "shop.example")
	if !d.Tracking.Opens || d.Tracking.Clicks || !d.Tracking.Unsubscribe || d.TrackingDomain != "t.shop.example" {
		t.Errorf("after the tracking form: %+v host %q", d.Tracking, d.TrackingDomain)
	}
	if r, page := post(url.Values{"section": {"tracking"}, "tracking_host": {"t.other.example"}}); r.StatusCode != 422 || !strings.Contains(page, "subdomain of shop.example") {
		t.Errorf("a tracking host outside the domain: %d", r.StatusCode)
	}
	if r, _ := post(url.Values{"section": {"delivery"}, "mode": {"smtp"}, "host": {"smtp.relay.example"}, "user": {"u"}, "password": {"pw1"}, "tls": {"tls"}, "port": {"465"}}); r.StatusCode != 303 {
		t.Fatalf("relay settings: %d", r.StatusCode)
	}
	if r, _ := post(url.Values{"section": {"delivery"}, "mode": {"smtp"}, "host": {"smtp.relay.example"}, "user": {"u"}, "port": {"2525"}, "tls": {"tls"}}); r.StatusCode != 303 {
		t.Fatalf("relay port change: %d", r.StatusCode)
	}
	d, _ = env.App.Domains.Owned(ctx, alice.ID, "shop.example")
	if d.Delivery.Port != 2525 || d.Delivery.Password != "pw1" || string(d.DKIMPrivateKey) != string(d0.DKIMPrivateKey) {
		t.Errorf("after changing the port: %+v; want the password and the DKIM key kept", d.Delivery)
	}
	if r, page := post(url.Values{"section": {"delivery"}, "mode": {"smtp"}, "host": {"10.1.1.1"}}); r.StatusCode != 422 || !strings.Contains(page, "allowlist") {
		t.Errorf("a relay off the allowlist: %d", r.StatusCode)
	}
	if r, page := post(url.Values{"section": {"delivery"}, "mode": {"direct"}, "pool": {"nope"}}); r.StatusCode != 422 ||
		!strings.Contains(page, "delivery.pool") || !strings.Contains(page, "no egress pool named") {
		t.Errorf("an egress pool the server does not have: %d", r.StatusCode)
	}

	if err := env.App.Accounts.SetPassword(ctx, "alice", "correct horse alice"); err != nil {
		t.Fatal(err)
	}
	o := &browser{t: t, base: env.URL}
	for i := 0; i < 2; i++ {
		if r := o.signIn("alice", "wrong horse", "/"); r.StatusCode != 401 {
			t.Fatalf("failure %d: %d", i+1, r.StatusCode)
		}
	}
	if r := o.signIn("alice", "correct horse alice", "/"); r.StatusCode != 429 || o.cookie != nil {
		t.Errorf("the right password after 2 failures with a limit of 2: %d, want 429 and no session", r.StatusCode)
	}
}

// multipartForm builds a multipart body with a csrf field and one file.
func multipartForm(t *testing.T, csrf, field, filename, content string) ([]byte, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	mw.WriteField("csrf", csrf)
	fw, _ := mw.CreateFormFile(field, filename)
	io.WriteString(fw, content)
	mw.Close()
	return buf.Bytes(), mw.FormDataContentType()
}

// TestConsoleMore: suppressions import and export as CSV, the console
// password set in the console then used to sign in, the log's time range,
// the Secure __Host- cookie behind an https public URL, and a tracking
// host that never shows the console.
func TestConsoleMore(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, store.SQLite, func(c *config.Config) { c.PublicURL = "https://mail.example.com" })
	alice := env.NewUser("alice")
	dom := env.NewDomain(alice, "shop.example")
	b := &browser{t: t, base: env.URL}
	r := b.signIn("alice", alice.Key, "/")
	if b.cookie == nil || !b.cookie.Secure || b.cookie.Name != "__Host-postline" {
		t.Fatalf("behind an https public URL the cookie is %+v (%d), want Secure and __Host-", b.cookie, r.StatusCode)
	}
	// (Go's client sends a Secure cookie to http://127.0.0.1: a loopback host counts as secure.)
	_, page := b.do("GET", "/domains/shop.example/suppressions", nil, nil)
	csrf := csrfRE.FindStringSubmatch(page)[1]

	body, ct := multipartForm(t, csrf, "file", "list.csv", "recipient,type\na@x.example,bounce\nb@x.example,unsubscribe\n=cmd@x.example,bounce\n")
	req, _ := http.NewRequest("POST", env.URL+"/domains/shop.example/suppressions/import", bytes.NewReader(body))
	req.Header.Set("Content-Type", ct)
	req.AddCookie(b.cookie)
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil || resp.StatusCode != 303 {
		t.Fatalf("import: %v %v", err, resp)
	}
	resp.Body.Close()
	_, csvText := b.do("GET", "/domains/shop.example/suppressions/export?type=bounce", nil, nil)
	if !strings.HasPrefix(csvText, "recipient,type,source,created_at\n") || !strings.Contains(csvText, "a@x.example,bounce,console-import,") ||
		strings.Contains(csvText, "b@x.example") || !strings.Contains(csvText, "\n'=cmd@x.example,bounce,") {
		t.Errorf("export of the bounce list:\n%s", csvText)
	}

	// A console password, set here and then used.
	// The form states the rule the server checks, and a refusal quotes it (issue 32, defect 4).
	rule := "at least 12 characters, at most 256 bytes"
	if _, page = b.do("GET", "/keys", nil, nil); !strings.Contains(page, "New password ("+rule+")") || !strings.Contains(page, `minlength="12"`) {
		t.Errorf("the keys page does not state the password rule %q", rule)
	}
	if r, page := b.do("POST", "/password", url.Values{"csrf": {csrf}, "password": {"11 chars ok"}, "again": {"11 chars ok"}}, nil); r.StatusCode != 422 ||
		!strings.Contains(page, "password must be "+rule) {
		t.Errorf("an 11-character password: %d, want 422 quoting the rule", r.StatusCode)
	}
	if r, page := b.do("POST", "/password", url.Values{"csrf": {csrf}, "password": {"a long secret"}, "again": {"another"}}, nil); r.StatusCode != 422 || !strings.Contains(page, "differ") {
		t.Errorf("two different passwords: %d", r.StatusCode)
	}
	if r, _ := b.do("POST", "/password", url.Values{"csrf": {csrf}, "password": {"a long secret"}, "again": {"a long secret"}}, nil); r.StatusCode != 303 {
		t.Fatalf("set password: %d", r.StatusCode)
	}
	p := &browser{t: t, base: env.URL}
	if r := p.signIn("alice", "a long secret", "/"); r.StatusCode != 303 || p.cookie == nil {
		t.Errorf("sign-in with the password set in the console: %d", r.StatusCode)
	}

	// The log's time range.
	now := time.Now().UTC()
	env.App.Events.Record(context.Background(), event.Entry{DomainID: dom.ID, MessageID: "old@shop.example", Type: event.Queued,
		Sender: "a@shop.example", Recipient: "old@x.example", Subject: "old", CreatedAt: now.Add(-48 * time.Hour)},
		event.Entry{DomainID: dom.ID, MessageID: "new@shop.example", Type: event.Queued, Sender: "a@shop.example",
			Recipient: "new@x.example", Subject: "new", CreatedAt: now})
	q := url.Values{"start": {now.Add(-time.Hour).Format("2006-01-02T15:04")}}
	if _, page := b.do("GET", "/domains/shop.example/log?"+q.Encode(), nil, nil); !strings.Contains(page, "new@x.example") || strings.Contains(page, "old@x.example") {
		t.Errorf("the last hour shows the wrong entries")
	}
	if _, page := b.do("GET", "/domains/shop.example/log?start=yesterday", nil, nil); !strings.Contains(page, "must be a date and time") {
		t.Errorf("a bad start is not explained")
	}

	// A verified tracking host answers tracking only.
	d, _ := env.App.Domains.Owned(context.Background(), alice.ID, "shop.example")
	if _, err := env.App.Domains.SetTracking(context.Background(), d, "t.shop.example"); err != nil {
		t.Fatal(err)
	}
	req, _ = http.NewRequest("GET", env.URL+"/", nil)
	req.Host = "t.shop.example"
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 404 || strings.Contains(string(raw), "sign-in") || strings.Contains(string(raw), "Postline</title>") {
		t.Errorf("the console on a tracking host: %d %s", resp.StatusCode, raw)
	}
}

// TestConsoleTemplatesAndSchedule: a template created, previewed (a
// script in a variable stays text on the page) and given a new version in
// the console; a scheduled message's page shows it as scheduled and
// cancels it; another account's templates are a 404 page.
func TestConsoleTemplatesAndSchedule(t *testing.T) {
	t.Parallel()
	e := startSend(t, store.SQLite, false, nil)
	bob := e.NewUser("bob")
	e.NewDomain(bob, "bob.example.org")
	b := &browser{t: t, base: e.URL}
	b.signIn("alice", e.user.Key, "/")
	_, page := b.do("GET", "/domains/shop.example.com/templates", nil, nil)
	csrf := csrfRE.FindStringSubmatch(page)[1]
	r, _ := b.do("POST", "/domains/shop.example.com/templates", url.Values{"csrf": {csrf}, "name": {"welcome"},
		"subject": {"Hi {{name}}"}, "text": {"Hello {{name}}"}, "html": {"<p>Hello {{name}}</p>"}}, nil)
	if r.StatusCode != 303 || r.Header.Get("Location") != "/domains/shop.example.com/templates/welcome" {
		t.Fatalf("create: %d %s", r.StatusCode, r.Header.Get("Location"))
	}
	if r, page := b.do("POST", "/domains/shop.example.com/templates", url.Values{"csrf": {csrf}, "name": {"broken"},
		"subject": {"x"}, "text": {"{{#if a}}"}}, nil); r.StatusCode != 422 || !strings.Contains(page, "does not parse") {
		t.Errorf("a template that does not parse: %d", r.StatusCode)
	}
	// The preview is a GET (it changes nothing; a reload asks nothing).
	r, page = b.do("GET", "/domains/shop.example.com/templates/welcome?"+url.Values{"version": {"1"},
		"variables": {`{"name": "<script>alert(1)</script>"}`}}.Encode(), nil, nil)
	if r.StatusCode != 200 || strings.Contains(page, "<script>alert") || !strings.Contains(page, "&amp;lt;script&amp;gt;") ||
		!strings.Contains(page, `<form method="get" action="/domains/shop.example.com/templates/welcome">`) {
		t.Errorf("preview: %d\n%s", r.StatusCode, page)
	}
	if r, _ := b.do("POST", "/domains/shop.example.com/templates/welcome", url.Values{"csrf": {csrf}, "subject": {"Welcome {{name}}"},
		"text": {"Welcome {{name}}"}}, nil); r.StatusCode != 303 {
		t.Fatalf("new version: %d", r.StatusCode)
	}
	if _, page := b.do("GET", "/domains/shop.example.com/templates", nil, nil); !strings.Contains(page, "2 of 2") {
		t.Errorf("the list does not show version 2 of 2:\n%s", page)
	}
	if r, _ := b.do("GET", "/domains/bob.example.org/templates", nil, nil); r.StatusCode != 404 {
		t.Errorf("bob's templates: %d", r.StatusCode)
	}

	resp := e.send(t, append(basicParts("later@rcpt.example.net"), part{name: "deliver_at", value: time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}), nil)
	id := resp.JSON["data"].(map[string]any)["message_ids"].([]any)[0].(string)
	_, page = b.do("GET", "/domains/shop.example.com/messages/"+id, nil, nil)
	if !strings.Contains(page, `<span class="badge warn">scheduled</span>`) || !strings.Contains(page, "Cancel what is not sent yet") {
		t.Fatalf("the scheduled message's page:\n%s", page)
	}
	if r, _ := b.do("POST", "/domains/shop.example.com/messages/"+id+"/cancel", url.Values{"csrf": {csrf}}, nil); r.StatusCode != 303 {
		t.Fatalf("cancel: %d", r.StatusCode)
	}
	if _, page = b.do("GET", "/domains/shop.example.com/messages/"+id, nil, nil); !strings.Contains(page, `<span class="badge bad">cancelled</span>`) || strings.Contains(page, "Cancel what") {
		t.Errorf("after cancel:\n%s", page)
	}
}

// TestConsoleSignInBounded: anyone may post the sign-in form, so it is
// bounded: past 64 KiB, or multipart (which net/http would keep up to
// 32 MiB of in memory), it is refused with 400 before anything is checked;
// the ordinary form still signs in.
func TestConsoleSignInBounded(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, store.SQLite, nil)
	alice := env.NewUser("alice")
	post := func(ct string, body io.Reader) int {
		req, _ := http.NewRequest("POST", env.URL+"/sign-in", body)
		req.Header.Set("Content-Type", ct)
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	big := url.Values{"login": {strings.Repeat("a", 100<<10)}, "secret": {"x"}}.Encode() // read up to the bound, then refused
	if code := post("application/x-www-form-urlencoded", strings.NewReader(big)); code != 400 {
		t.Errorf("a 100 KiB sign-in form: %d, want 400", code)
	}
	body, ct := multipartForm(t, "", "file", "x.bin", strings.Repeat("x", 16<<10)) // small enough to be sent whole before the refusal
	if code := post(ct, bytes.NewReader(body)); code != 400 {
		t.Errorf("a multipart sign-in: %d, want 400", code)
	}
	form := url.Values{"login": {"alice"}, "secret": {alice.Key}, "next": {"/"}}.Encode()
	if code := post("application/x-www-form-urlencoded", strings.NewReader(form)); code != 303 {
		t.Errorf("the ordinary sign-in form: %d, want 303", code)
	}
}
