package app_test

import (
	"context"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/mail"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/app"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/store"
)

// TestConsoleMessagePage: a sent message's page shows its copy as
// rebuilt for a recipient (text, HTML in a sandboxed frame whose policy
// blocks remote images until asked and every script, attachments with
// sizes, headers); the raw copy downloads from the console and the API
// (scope send, another account's 404) and parses with the recipient's To
// and the text; a message with several recipients shows each one's copy;
// once the log's retention pruned it, raw is 404 "no longer kept".
func TestConsoleMessagePage(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		clock := &testClock{}
		e := startSendWith(t, d, false, nil, app.Options{Now: clock.now})
		remote := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			t.Error("the remote image was fetched")
		}))
		t.Cleanup(remote.Close)
		img := remote.URL + "/remote.png"
		resp := e.send(t, append(basicParts("ann@rcpt.example.net"),
			part{name: "html", value: `<p>Hello Ann</p><img src="` + img + `"><script>document.title="ran"</script>`},
			part{name: "attachments", filename: "notes.txt", contentType: "text/plain", value: "sixteen bytes!!!"}), nil)
		if resp.StatusCode != 202 {
			t.Fatalf("send: %d %s", resp.StatusCode, resp.Body)
		}
		id := resp.JSON["data"].(map[string]any)["message_ids"].([]any)[0].(string)
		waitFor(t, "the delivered entry", func() bool { return len(e.entries(t, "ann@rcpt.example.net", event.Delivered)) == 1 })
		b := &browser{t: t, base: e.URL}
		b.signIn("alice", e.user.Key, "/")
		page := "/domains/shop.example.com/messages/" + id
		r, body := b.do("GET", page, nil, nil)
		frame := `<iframe class="mailhtml" sandbox src="` + page + `/html?recipient=ann%40rcpt.example.net"`
		for _, want := range []string{frame, `<pre class="wrap" id="text-part">Thanks!</pre>`, "notes.txt</a> · text/plain · 16 bytes",
			`<td data-label="Field">Subject</td><td data-label="Value"><code class="wrap">Your order</code>`, "the DKIM signature, made at sending, is not kept",
			`href="` + page + `/raw?recipient=ann%40rcpt.example.net"`, "Load remote images", "<td>delivered</td>"} {
			if r.StatusCode != 200 || !strings.Contains(body, want) {
				t.Fatalf("message page: %d, no %q\n%s", r.StatusCode, want, body)
			}
		}
		if _, body := b.do("GET", page+"?remote=1", nil, nil); !strings.Contains(body, `sandbox src="`+page+`/html?recipient=ann%40rcpt.example.net&amp;remote=1"`) {
			t.Errorf("the page with remote images does not frame /html?remote=1:\n%s", body)
		}
		// The frame's policy: no script, no remote image until asked.
		r, body = b.do("GET", page+"/html?recipient=ann%40rcpt.example.net", nil, nil)
		csp := r.Header.Get("Content-Security-Policy")
		if r.StatusCode != 200 || !strings.Contains(body, img) || !strings.Contains(csp, "img-src data:;") ||
			!strings.Contains(csp, "script-src 'none'") || !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "sandbox") {
			t.Errorf("/html: %d, policy %q\n%s", r.StatusCode, csp, body)
		}
		r, _ = b.do("GET", page+"/html?remote=1", nil, nil)
		if csp := r.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "img-src data: https:;") || !strings.Contains(csp, "script-src 'none'") {
			t.Errorf("/html?remote=1: policy %q, want https images and still no script", csp)
		}
		// The raw copy, from the console and the API.
		r, raw := b.do("GET", page+"/raw", nil, nil)
		checkCopy(t, "console raw", r, raw, "ann@rcpt.example.net", "Thanks!")
		if r, _ := b.do("GET", page+"/attachments/1?recipient=ann%40rcpt.example.net", nil, nil); r.StatusCode != 200 ||
			!strings.Contains(r.Header.Get("Content-Disposition"), "notes.txt") {
			t.Errorf("attachment download: %d %q", r.StatusCode, r.Header.Get("Content-Disposition"))
		}
		apiRaw := "/api/domains/shop.example.com/messages/" + id + "/raw"
		ar := e.Do(apitest.Request{Method: "GET", Path: apiRaw, Auth: e.user.Auth()})
		checkCopy(t, "API raw", &http.Response{StatusCode: ar.StatusCode, Header: ar.Header}, string(ar.Body), "ann@rcpt.example.net", "Thanks!")
		mallory := e.NewUser("mallory")
		e.NewDomain(mallory, "mallory.example")
		logOnly, _ := newKey(t, e, e.user, map[string]any{"name": "ro", "scopes": []string{"log:read"}})
		for _, c := range []struct {
			who  apitest.User
			path string
			want int
		}{
			{mallory, apiRaw, 404},
			{mallory, "/api/domains/mallory.example/messages/" + id + "/raw", 404},
			{e.user, "/api/domains/shop.example.com/messages/nope@shop.example.com/raw", 404},
			{e.user, apiRaw + "?recipient=nobody@rcpt.example.net", 404},
			{logOnly, apiRaw, 403},
		} {
			if r := e.Do(apitest.Request{Method: "GET", Path: c.path, Auth: c.who.Auth()}); r.StatusCode != c.want {
				t.Errorf("GET %s as %s: %d, want %d", c.path, c.who.Login, r.StatusCode, c.want)
			}
		}
		if r, _ := b.do("GET", "/domains/mallory.example/messages/"+id+"/raw", nil, nil); r.StatusCode != 404 {
			t.Errorf("another domain's raw in the console: %d", r.StatusCode)
		}

		// Several recipients, one Message-ID (/v3/): a copy each.
		form := url.Values{"from": {"news@shop.example.com"}, "to": {"bea@rcpt.example.net", "cy@rcpt.example.net"}, "subject": {"Hi"},
			"text": {"Hello both"}}
		mr := e.Do(apitest.Request{Method: "POST", Path: "/v3/shop.example.com/messages", Auth: apitest.User{Login: "api", Key: e.user.Key}.Auth(),
			Body: form.Encode(), Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}})
		if mr.StatusCode != 200 {
			t.Fatalf("/v3/ send: %d %s", mr.StatusCode, mr.Body)
		}
		both := strings.Trim(mr.JSON["id"].(string), "<>")
		waitFor(t, "both delivered", func() bool { return len(e.entries(t, "cy@rcpt.example.net", event.Delivered)) == 1 })
		bothPage := "/domains/shop.example.com/messages/" + both
		if _, body := b.do("GET", bothPage+"?recipient=cy%40rcpt.example.net", nil, nil); !strings.Contains(body, `<dd id="copy-recipient">cy@rcpt.example.net</dd>`) ||
			!strings.Contains(body, "<option>bea@rcpt.example.net</option>") || !strings.Contains(body, "<option selected>cy@rcpt.example.net</option>") {
			t.Errorf("the second recipient's copy:\n%s", body)
		}
		r, raw = b.do("GET", bothPage+"/raw?recipient=cy%40rcpt.example.net", nil, nil)
		checkCopy(t, "the second recipient's raw", r, raw, "cy@rcpt.example.net", "Hello both")

		// The log's retention prunes the content with the entries.
		clock.advance(31 * 24 * time.Hour)
		if _, err := e.App.PruneLog(context.Background()); err != nil {
			t.Fatal(err)
		}
		if r, body := b.do("GET", page+"/raw", nil, nil); r.StatusCode != 404 || !strings.Contains(body, "no longer kept") {
			t.Errorf("console raw after pruning: %d\n%s", r.StatusCode, body)
		}
		if ar := e.Do(apitest.Request{Method: "GET", Path: apiRaw, Auth: e.user.Auth()}); ar.StatusCode != 404 || !strings.Contains(string(ar.Body), "no longer kept") {
			t.Errorf("API raw after pruning: %d %s", ar.StatusCode, ar.Body)
		}
	})
}

// checkCopy: a raw answer is a rebuilt message/rfc822 copy addressed to
// to, unsigned, whose text part is text.
func checkCopy(t *testing.T, what string, r *http.Response, raw, to, text string) {
	t.Helper()
	if r.StatusCode != 200 || r.Header.Get("Content-Type") != "message/rfc822" || r.Header.Get("X-Postline-Rebuilt") != "true" {
		t.Fatalf("%s: %d %q rebuilt=%q\n%s", what, r.StatusCode, r.Header.Get("Content-Type"), r.Header.Get("X-Postline-Rebuilt"), raw)
	}
	m, err := mail.ReadMessage(strings.NewReader(raw))
	if err != nil {
		t.Fatalf("%s does not parse: %v", what, err)
	}
	if got := m.Header.Get("To"); !strings.Contains(got, to) || m.Header.Get("DKIM-Signature") != "" {
		t.Errorf("%s: To %q (want %s), DKIM-Signature %q (want none)", what, got, to, m.Header.Get("DKIM-Signature"))
	}
	if got := textPart(t, m); got != text {
		t.Errorf("%s: text part %q, want %q", what, got, text)
	}
}

// textPart is the first text/plain part of m (searched one multipart
// level down per level, as the builder nests them).
func textPart(t *testing.T, m *mail.Message) string {
	t.Helper()
	var find func(ct string, body io.Reader) string
	find = func(ct string, body io.Reader) string {
		mt, params, _ := mime.ParseMediaType(ct)
		if mt == "text/plain" {
			b, _ := io.ReadAll(body)
			return strings.TrimSpace(string(b))
		}
		if !strings.HasPrefix(mt, "multipart/") {
			return ""
		}
		mr := multipart.NewReader(body, params["boundary"])
		for {
			p, err := mr.NextPart()
			if err != nil {
				return ""
			}
			if s := find(p.Header.Get("Content-Type"), p); s != "" {
				return s
			}
		}
	}
	return find(m.Header.Get("Content-Type"), m.Body)
}
