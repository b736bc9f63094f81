package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/smtptest"
	"github.com/postline/postline/internal/store"
)

// jsLib returns node and testdata/js when the client libraries are
// installed (CI installs them), skipping otherwise; the SDK tests run once,
// in the SQLite pass.
func jsLib(t *testing.T, pkg string) (node, dir string) {
	t.Helper()
	if os.Getenv("POSTLINE_TEST_DATABASE_URL") != "" {
		t.Skip("client libraries run once, in the SQLite pass")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not installed")
	}
	dir = filepath.Join("..", "..", "testdata", "js")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", pkg)); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("testdata/js/node_modules is missing (.ci/run runs npm ci there)")
		}
		t.Skipf("run npm ci in testdata/js to drive %s", pkg)
	}
	return node, dir
}

type sdkResult struct {
	OK      bool            `json:"ok"`
	Status  int             `json:"status"`
	Message string          `json:"message"`
	Result  json.RawMessage `json:"result"`
}

// mailgunSDK runs steps through mailgun.js against the server.
func mailgunSDK(t *testing.T, e *sendEnv, key string, steps []map[string]any) []sdkResult {
	t.Helper()
	node, dir := jsLib(t, "mailgun.js")
	in, _ := json.Marshal(steps)
	cmd := exec.Command(node, "mailgun-client.js", e.URL, key)
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("mailgun.js: %v\n%s", err, out)
	}
	var res []sdkResult
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var r sdkResult
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("mailgun.js printed %q", line)
		}
		res = append(res, r)
	}
	if len(res) != len(steps) {
		t.Fatalf("mailgun.js: %d results for %d steps:\n%s", len(res), len(steps), out)
	}
	return res
}

// TestMailgunSDK: the official Mailgun SDK for Node, pointed at Postline,
// sends a plain message, a batch of 100 with recipient-variables (each
// recipient's own values at the sink, per-recipient header), an attachment
// and a template with t:variables; a domain of another account is a 404
// and an unsupported parameter a 400 naming it.
func TestMailgunSDK(t *testing.T) {
	t.Parallel()
	e := startSend(t, store.SQLite, false, nil)
	bob := e.NewUser("bob")
	e.NewDomain(bob, "bob.example.org")
	if resp := e.Do(apitest.Request{Method: "POST", Path: "/api/domains/shop.example.com/templates", Auth: e.user.Auth(),
		Body: map[string]any{"name": "welcome", "subject": "Welcome {{name}}", "text": "Hi {{name}}", "html": "<p>Hi {{name}}</p>"}}); resp.StatusCode != 201 {
		t.Fatalf("template: %d %s", resp.StatusCode, resp.Body)
	}
	var to []string
	vars := map[string]any{}
	for i := 0; i < 100; i++ {
		addr := fmt.Sprintf("m%03d@rcpt.example.net", i)
		to = append(to, addr)
		vars[addr] = map[string]any{"name": fmt.Sprintf("Member %d", i), "id": i}
	}
	rv, _ := json.Marshal(vars)
	steps := []map[string]any{
		{"call": "messages.create", "domain": "shop.example.com", "data": map[string]any{"from": "Shop <news@shop.example.com>",
			"to": []string{"plain@rcpt.example.net"}, "subject": "Plain", "text": "Plain text", "html": "<p>Plain</p>",
			"o:tag": []string{"plain", "sdk"}, "h:X-Campaign": "spring", "v:email-id": "e-1"}},
		{"call": "messages.create", "domain": "shop.example.com", "data": map[string]any{"from": "news@shop.example.com",
			"to": to, "subject": "Hello %recipient.name%", "text": "Your id is %recipient.id%.", "recipient-variables": string(rv),
			"h:X-Member": "%recipient.id%"}},
		{"call": "messages.create", "domain": "shop.example.com", "data": map[string]any{"from": "news@shop.example.com",
			"to": "file@rcpt.example.net", "subject": "A file", "text": "Attached."},
			"attachment": map[string]any{"filename": "invoice.txt", "data": "INVOICE 42"}},
		{"call": "messages.create", "domain": "shop.example.com", "data": map[string]any{"from": "news@shop.example.com",
			"to": "tpl@rcpt.example.net", "template": "welcome", "t:variables": `{"name": "<Tina>"}`}},
		{"call": "messages.create", "domain": "bob.example.org", "data": map[string]any{"from": "x@bob.example.org",
			"to": "x@rcpt.example.net", "subject": "s", "text": "t"}},
		{"call": "messages.create", "domain": "shop.example.com", "data": map[string]any{"from": "news@shop.example.com",
			"to": "testmode@rcpt.example.net", "subject": "s", "text": "t", "o:testmode": "yes"}},
		{"call": "messages.create", "domain": "shop.example.com", "data": map[string]any{"from": "news@shop.example.com",
			"to": "x@rcpt.example.net", "subject": "s", "text": "t", "h:DKIM-Signature": "forged"}},
		{"call": "messages.create", "domain": "shop.example.com", "data": map[string]any{"from": "news@shop.example.com",
			"to": "inline@rcpt.example.net", "subject": "A picture", "text": "See the logo.", "html": `<p><img src="cid:logo.png"></p>`},
			"inline": map[string]any{"filename": "logo.png", "data": "PNGDATA"}},
		{"call": "messages.create", "domain": "shop.example.com", "data": map[string]any{"to": "mime@rcpt.example.net",
			"message": "From: Shop <news@shop.example.com>\r\nTo: mime@rcpt.example.net\r\nSubject: Built by the client\r\n\r\nRaw body\r\n"}},
		{"call": "domains.list"},
		{"call": "domains.get", "domain": "shop.example.com"},
		{"call": "domains.get", "domain": "bob.example.org"},
	}
	res := mailgunSDK(t, e, e.user.Key, steps)
	for i, r := range res[:4] {
		var body map[string]any
		json.Unmarshal(r.Result, &body)
		if !r.OK || body["message"] != "Queued. Thank you." || !strings.HasPrefix(fmt.Sprint(body["id"]), "<") {
			t.Fatalf("step %d: %+v", i, r)
		}
	}
	var batchAnswer struct{ ID string }
	json.Unmarshal(res[1].Result, &batchAnswer)
	if res[4].OK || res[4].Status != 404 {
		t.Errorf("another account's domain: %+v", res[4])
	}
	if !res[5].OK {
		t.Errorf("o:testmode: %+v", res[5])
	}
	if res[6].OK || res[6].Status != 400 || !strings.Contains(res[6].Message, "DKIM-Signature") {
		t.Errorf("a protected header: %+v", res[6])
	}
	if !res[7].OK || !res[8].OK {
		t.Errorf("inline, messages.mime: %+v %+v", res[7], res[8])
	}
	res = append(res[:7], res[9:]...)
	if !res[7].OK || !strings.Contains(string(res[7].Result), `"shop.example.com"`) || strings.Contains(string(res[7].Result), "bob.example.org") {
		t.Errorf("domains.list: %+v", res[7])
	}
	if !res[8].OK || !strings.Contains(string(res[8].Result), "_domainkey.shop.example.com") || !strings.Contains(string(res[8].Result), `"active"`) {
		t.Errorf("domains.get: %s", res[8].Result)
	}
	if res[9].OK || res[9].Status != 404 {
		t.Errorf("domains.get of bob's domain: %+v", res[9])
	}

	msgs, err := e.sink.WaitForMessages(ctxTimeout(t, 60*time.Second), 105)
	if err != nil {
		t.Fatal(err)
	}
	batch := 0
	for _, m := range msgs {
		if m.To[0] == "file@rcpt.example.net" {
			if name, data := onlyAttachment(t, m.Data); name != "invoice.txt" || string(data) != "INVOICE 42" {
				t.Errorf("attachment %q %q", name, data)
			}
			continue
		}
		if m.To[0] == "inline@rcpt.example.net" {
			raw := string(m.Data)
			if !strings.Contains(raw, "multipart/related") || !strings.Contains(raw, "Content-ID: <logo.png>") ||
				!strings.Contains(raw, `Content-Disposition: inline; filename=logo.png`) {
				t.Errorf("inline image:\n%s", raw)
			}
			continue
		}
		got := readReceived(t, m.Data)
		got.text = strings.TrimSpace(got.text)
		switch rcpt := m.To[0]; {
		case rcpt == "plain@rcpt.example.net":
			if got.text != "Plain text" || readReceivedHeader(t, m, "X-Campaign") != "spring" ||
				!strings.Contains(readReceivedHeader(t, m, "X-Mailgun-Variables"), `"email-id":"e-1"`) {
				t.Errorf("plain message: %q, headers %q", got.text, string(m.Data[:min(len(m.Data), 600)]))
			}
		case rcpt == "mime@rcpt.example.net":
			if subjectOf(t, m.Data) != "Built by the client" || got.text != "Raw body" || !strings.Contains(string(m.Data), "DKIM-Signature:") {
				t.Errorf("messages.mime: %q %q", subjectOf(t, m.Data), got.text)
			}
		case rcpt == "tpl@rcpt.example.net":
			if subjectOf(t, m.Data) != "Welcome <Tina>" || got.html != "<p>Hi &lt;Tina&gt;</p>" {
				t.Errorf("template: subject %q html %q", subjectOf(t, m.Data), got.html)
			}
		default:
			var i int
			fmt.Sscanf(rcpt, "m%03d@rcpt.example.net", &i)
			if subjectOf(t, m.Data) != fmt.Sprintf("Hello Member %d", i) || got.text != fmt.Sprintf("Your id is %d.", i) ||
				readReceivedHeader(t, m, "X-Member") != fmt.Sprint(i) {
				t.Errorf("%s: subject %q text %q X-Member %q", rcpt, subjectOf(t, m.Data), got.text, readReceivedHeader(t, m, "X-Member"))
			}
			if id := readReceivedHeader(t, m, "Message-ID"); id != batchAnswer.ID { // Mailgun's one id per batch
				t.Errorf("%s: Message-ID %q, want the batch answer's %q", rcpt, id, batchAnswer.ID)
			}
			batch++
		}
	}
	if batch != 100 {
		t.Errorf("%d batch messages, want 100", batch)
	}
	// o:testmode: accepted and logged, never delivered.
	if q := e.entries(t, "testmode@rcpt.example.net", event.Queued); len(q) != 1 || !strings.Contains(string(q[0].Details), `"testmode":true`) {
		t.Errorf("the test-mode message's log: %+v", q)
	}
	for _, m := range e.sink.Messages() {
		if m.To[0] == "testmode@rcpt.example.net" {
			t.Error("a test-mode message was delivered")
		}
	}
}

// TestMailgunAPI: Mailgun's auth (user api), urlencoded bodies, 401, scope,
// cross-account 404 and bad parameters, through the OpenAPI-checked client.
func TestMailgunAPI(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		e := startSend(t, d, false, nil)
		bob := e.NewUser("bob")
		e.NewDomain(bob, "bob.example.org")
		mg := func(key, domain string, form url.Values) *apitest.Response {
			return e.Do(apitest.Request{Method: "POST", Path: "/v3/" + domain + "/messages", Auth: apitest.User{Login: "api", Key: key}.Auth(),
				Body: form.Encode(), Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}})
		}
		ok := url.Values{"from": {"news@shop.example.com"}, "to": {"a@rcpt.example.net, b@rcpt.example.net"}, "subject": {"Hi"},
			"text": {"Hello"}, "o:deliverytime": {time.Now().Add(time.Hour).UTC().Format(time.RFC1123Z)}, "o:tracking": {"no"}}
		resp := mg(e.user.Key, "shop.example.com", ok)
		if resp.StatusCode != 200 || resp.JSON["message"] != "Queued. Thank you." {
			t.Fatalf("urlencoded send: %d %s", resp.StatusCode, resp.Body)
		}
		id := strings.Trim(resp.JSON["id"].(string), "<>")
		m := e.Do(apitest.Request{Method: "GET", Path: "/api/domains/shop.example.com/messages/" + id, Auth: e.user.Auth()})
		if m.StatusCode != 200 || m.JSON["data"].(map[string]any)["recipients"].([]any)[0].(map[string]any)["state"] != "scheduled" {
			t.Errorf("o:deliverytime: %d %s", m.StatusCode, m.Body)
		}
		if r := mg("pl_wrong", "shop.example.com", ok); r.StatusCode != 401 || r.JSON["message"] == nil {
			t.Errorf("a wrong key: %d %s", r.StatusCode, r.Body)
		}
		if r := e.Do(apitest.Request{Method: "POST", Path: "/v3/shop.example.com/messages", Auth: e.user.Auth(), Body: ok.Encode(),
			Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}}); r.StatusCode != 401 {
			t.Errorf("LOGIN:KEY on /v3/: %d, want 401 (Mailgun's user is api)", r.StatusCode)
		}
		if r := mg(bob.Key, "shop.example.com", ok); r.StatusCode != 404 {
			t.Errorf("bob on alice's domain: %d %s", r.StatusCode, r.Body)
		}
		get := func(key, path string) *apitest.Response {
			return e.Do(apitest.Request{Method: "GET", Path: path, Auth: apitest.User{Login: "api", Key: key}.Auth()})
		}
		for _, v := range []string{"v3", "v4"} {
			if r := get(e.user.Key, "/"+v+"/domains/shop.example.com"); r.StatusCode != 200 || len(r.JSON["sending_dns_records"].([]any)) == 0 ||
				r.JSON["domain"].(map[string]any)["state"] != "active" {
				t.Errorf("%s domain: %d %s", v, r.StatusCode, r.Body)
			}
			if r := get(e.user.Key, "/"+v+"/domains/bob.example.org"); r.StatusCode != 404 {
				t.Errorf("%s bob's domain: %d", v, r.StatusCode)
			}
			if r := get(bob.Key, "/"+v+"/domains"); r.StatusCode != 200 || r.JSON["total_count"] != 1.0 {
				t.Errorf("%s bob's list: %d %s", v, r.StatusCode, r.Body)
			}
		}
		mime := func(key, domain, to, msg string) *apitest.Response {
			var buf bytes.Buffer
			mw := multipart.NewWriter(&buf)
			mw.WriteField("to", to)
			if msg != "" {
				w, _ := mw.CreateFormFile("message", "message.mime")
				w.Write([]byte(msg))
			}
			mw.Close()
			return e.Do(apitest.Request{Method: "POST", Path: "/v3/" + domain + "/messages.mime", Auth: apitest.User{Login: "api", Key: key}.Auth(),
				Body: buf.Bytes(), Header: http.Header{"Content-Type": {mw.FormDataContentType()}}})
		}
		{ // an inline file whose name cannot be a Content-ID
			var buf bytes.Buffer
			mw := multipart.NewWriter(&buf)
			for k, v := range map[string]string{"from": "news@shop.example.com", "to": "i@rcpt.example.net", "subject": "s", "text": "t", "html": "<img src=x>"} {
				mw.WriteField(k, v)
			}
			w, _ := mw.CreateFormFile("inline", "my logo.png")
			w.Write([]byte("PNG"))
			mw.Close()
			r := e.Do(apitest.Request{Method: "POST", Path: "/v3/shop.example.com/messages", Auth: apitest.User{Login: "api", Key: e.user.Key}.Auth(),
				Body: buf.Bytes(), Header: http.Header{"Content-Type": {mw.FormDataContentType()}}})
			if r.StatusCode != 400 || !strings.Contains(fmt.Sprint(r.JSON["message"]), "Content-ID") {
				t.Errorf("an inline file named with a space: %d %s", r.StatusCode, r.Body)
			}
		}
		raw := "From: news@shop.example.com\r\nSubject: mime\r\n\r\nbody\r\n"
		if r := mime(e.user.Key, "shop.example.com", "m@rcpt.example.net", raw); r.StatusCode != 200 {
			t.Errorf("messages.mime: %d %s", r.StatusCode, r.Body)
		}
		if r := mime(e.user.Key, "shop.example.com", "m@rcpt.example.net", strings.Replace(raw, "shop.example.com", "bob.example.org", 1)); r.StatusCode != 400 || !strings.Contains(fmt.Sprint(r.JSON["message"]), "message") {
			t.Errorf("messages.mime from another domain: %d %s", r.StatusCode, r.Body)
		}
		if r := mime(e.user.Key, "shop.example.com", "m@rcpt.example.net", ""); r.StatusCode != 400 {
			t.Errorf("messages.mime without a message: %d %s", r.StatusCode, r.Body)
		}
		if r := mime(bob.Key, "shop.example.com", "m@rcpt.example.net", raw); r.StatusCode != 404 {
			t.Errorf("messages.mime on alice's domain by bob: %d", r.StatusCode)
		}
		validateOnly, _, err := e.App.Accounts.CreateKeyWith(t.Context(), "alice", account.KeyOptions{Scopes: []string{account.ScopeValidate}})
		if err != nil {
			t.Fatal(err)
		}
		if r := mg(validateOnly, "shop.example.com", ok); r.StatusCode != 403 || !strings.Contains(r.JSON["message"].(string), `"send"`) {
			t.Errorf("a key without send: %d %s", r.StatusCode, r.Body)
		}
		for param, form := range map[string]url.Values{
			"o:deliverytime": {"from": {"news@shop.example.com"}, "to": {"a@rcpt.example.net"}, "subject": {"s"}, "text": {"t"}, "o:deliverytime": {"tomorrow"}},
			"o:tracking":     {"from": {"news@shop.example.com"}, "to": {"a@rcpt.example.net"}, "subject": {"s"}, "text": {"t"}, "o:tracking": {"maybe"}},
			"bogus":          {"from": {"news@shop.example.com"}, "to": {"a@rcpt.example.net"}, "subject": {"s"}, "text": {"t"}, "bogus": {"1"}},
			"inline":         {"from": {"news@shop.example.com"}, "to": {"a@rcpt.example.net"}, "subject": {"s"}, "text": {"t"}, "inline": {"x"}},
			"subject":        {"from": {"news@shop.example.com"}, "to": {"a@rcpt.example.net"}, "text": {"t"}},
			"h:Received":     {"from": {"news@shop.example.com"}, "to": {"a@rcpt.example.net"}, "subject": {"s"}, "text": {"t"}, "h:Received": {"x"}},
			"h:Sender":       {"from": {"news@shop.example.com"}, "to": {"a@rcpt.example.net"}, "subject": {"s"}, "text": {"t"}, "h:Sender": {"x@bob.example.org"}},
			"h:List-Unsubscribe-Post": {"from": {"news@shop.example.com"}, "to": {"a@rcpt.example.net"}, "subject": {"s"}, "text": {"t"},
				"h:List-Unsubscribe-Post": {"List-Unsubscribe=One-Click"}},
		} {
			if r := mg(e.user.Key, "shop.example.com", form); r.StatusCode != 400 || !strings.Contains(fmt.Sprint(r.JSON["message"]), param) {
				t.Errorf("%s: %d %s, want 400 naming it", param, r.StatusCode, r.Body)
			}
		}
	})
}

// mgSend sends one message through /v3/ with Mailgun's parameters.
func mgSend(t *testing.T, e *sendEnv, to string, extra url.Values) {
	t.Helper()
	form := url.Values{"from": {"news@shop.example.com"}, "to": {to}, "subject": {"Hi"}, "text": {"Hello"}}
	for k, v := range extra {
		form[k] = v
	}
	r := e.Do(apitest.Request{Method: "POST", Path: "/v3/shop.example.com/messages", Auth: apitest.User{Login: "api", Key: e.user.Key}.Auth(),
		Body: form.Encode(), Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}})
	if r.StatusCode != 200 {
		t.Fatalf("/v3/ send: %d %s", r.StatusCode, r.Body)
	}
}

// TestMailgunSDKEvents: mailgun.js follows paging.next to the end and
// polls again while sends continue; it sees every accepted and delivered
// event exactly once, each with its message id and user variables.
func TestMailgunSDKEvents(t *testing.T) {
	t.Parallel()
	node, dir := jsLib(t, "mailgun.js")
	e := startSend(t, store.SQLite, false, nil)
	const first, more = 20, 20
	for i := 0; i < first; i++ {
		mgSend(t, e, fmt.Sprintf("p%02d@rcpt.example.net", i), url.Values{"v:email-id": {fmt.Sprintf("e-%d", i)}, "o:tag": {"news"}})
	}
	steps, _ := json.Marshal([]map[string]any{{"call": "events.follow", "domain": "shop.example.com", "want": 2 * (first + more),
		"rounds": 40, "pauseMs": 100, "query": map[string]any{"begin": time.Now().Add(-time.Minute).Unix(), "ascending": "yes",
			"limit": 7, "event": "accepted OR delivered"}}})
	cmd := exec.Command(node, "mailgun-client.js", e.URL, e.user.Key)
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(steps)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for i := first; i < first+more; i++ { // while the SDK pages
		mgSend(t, e, fmt.Sprintf("p%02d@rcpt.example.net", i), url.Values{"v:email-id": {fmt.Sprintf("e-%d", i)}, "o:tag": {"news"}})
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("mailgun.js: %v\n%s%s", err, out.String(), stderr.String())
	}
	var res sdkResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || !res.OK {
		t.Fatalf("mailgun.js: %s", out.String())
	}
	var seen []struct {
		ID, Event, Recipient, MessageID string
		UserVariables                   map[string]any
		Tags                            []string
	}
	json.Unmarshal(res.Result, &seen)
	ids := map[string]bool{}
	byKind := map[string]int{}
	for _, ev := range seen {
		if ids[ev.ID] {
			t.Errorf("event %s seen twice", ev.ID)
		}
		ids[ev.ID] = true
		byKind[ev.Event]++
		var i int
		fmt.Sscanf(ev.Recipient, "p%02d@rcpt.example.net", &i)
		if ev.MessageID == "" || ev.UserVariables["email-id"] != fmt.Sprintf("e-%d", i) || len(ev.Tags) != 1 || ev.Tags[0] != "news" {
			t.Errorf("event %+v", ev)
		}
	}
	if byKind["accepted"] != first+more || byKind["delivered"] != first+more {
		t.Errorf("seen %v, want %d accepted and %d delivered", byKind, first+more, first+more)
	}
}

// TestMailgunEventsAPI: pages, filters, orders and bad parameters of
// /v3/{domain}/events on both stores.
func TestMailgunEventsAPI(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		e := startSend(t, d, false, nil)
		bob := e.NewUser("bob")
		e.NewDomain(bob, "bob.example.org")
		e.sink.Script("gone@rcpt.example.net", smtptest.Reply{Code: 550, Enhanced: [3]int{5, 1, 1}, Message: "no such user"})
		for _, to := range []string{"a@rcpt.example.net", "b@rcpt.example.net", "gone@rcpt.example.net"} {
			mgSend(t, e, to, nil)
		}
		e.chain(t, "gone@rcpt.example.net", event.Bounced)
		e.chain(t, "b@rcpt.example.net", event.Delivered)
		e.chain(t, "a@rcpt.example.net", event.Delivered)
		get := func(u apitest.User, path string) *apitest.Response {
			return e.Do(apitest.Request{Method: "GET", Path: path, Auth: apitest.User{Login: "api", Key: u.Key}.Auth()})
		}
		items := func(r *apitest.Response) []map[string]any {
			var out []map[string]any
			for _, it := range r.JSON["items"].([]any) {
				out = append(out, it.(map[string]any))
			}
			return out
		}
		all := get(e.user, "/v3/shop.example.com/events?limit=300")
		list := items(all)
		if all.StatusCode != 200 || len(list) != 6 { // 3 accepted, 2 delivered, 1 failed permanent
			t.Fatalf("events: %d %s", all.StatusCode, all.Body)
		}
		if list[0]["timestamp"].(float64) < list[len(list)-1]["timestamp"].(float64) {
			t.Errorf("default order is not newest first")
		}
		failed := items(get(e.user, "/v3/shop.example.com/events?event=failed"))
		if len(failed) != 1 || failed[0]["severity"] != "permanent" || failed[0]["recipient"] != "gone@rcpt.example.net" ||
			failed[0]["delivery-status"].(map[string]any)["code"] != 550.0 {
			t.Errorf("failed events: %v", failed)
		}
		// Two per page, ascending, following next to the empty end.
		r := get(e.user, "/v3/shop.example.com/events?ascending=yes&limit=2")
		var got []string
		for n := 0; n < 10 && len(items(r)) > 0; n++ {
			for _, it := range items(r) {
				got = append(got, it["id"].(string))
			}
			next := r.JSON["paging"].(map[string]any)["next"].(string)
			if !strings.HasPrefix(next, e.URL+"/v3/shop.example.com/events/") {
				t.Fatalf("next URL %q is not absolute on this server", next)
			}
			r = get(e.user, strings.TrimPrefix(next, e.URL)+"?limit=300&ascending=no") // the SDK repeats parameters: the token wins
		}
		if want := []string{list[5]["id"].(string), list[4]["id"].(string), list[3]["id"].(string), list[2]["id"].(string),
			list[1]["id"].(string), list[0]["id"].(string)}; strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("paged ascending %v, want %v", got, want)
		}
		if r := get(e.user, "/v3/shop.example.com/events?recipient=a@rcpt.example.net"); len(items(r)) != 2 {
			t.Errorf("recipient filter: %s", r.Body)
		}
		for _, path := range []string{"/v3/shop.example.com/events?limit=301", "/v3/shop.example.com/events?event=bounced",
			"/v3/shop.example.com/events?begin=yesterday", "/v3/shop.example.com/events?severity=x", "/v3/shop.example.com/events/not-a-token"} {
			if r := get(e.user, path); r.StatusCode != 400 {
				t.Errorf("%s: %d %s", path, r.StatusCode, r.Body)
			}
		}
		if r := get(bob, "/v3/shop.example.com/events"); r.StatusCode != 404 {
			t.Errorf("bob reading alice's events: %d", r.StatusCode)
		}
		// A paging URL of alice's is no key to bob: the domain decides.
		next := all.JSON["paging"].(map[string]any)["next"].(string)
		if r := get(bob, strings.TrimPrefix(next, e.URL)); r.StatusCode != 404 {
			t.Errorf("bob following alice's paging URL: %d", r.StatusCode)
		}
		if r := get(bob, "/v3/bob.example.org/events/"+strings.TrimPrefix(next, e.URL+"/v3/shop.example.com/events/")); r.StatusCode != 200 || len(items(r)) != 0 {
			t.Errorf("alice's token on bob's domain: %d %s", r.StatusCode, r.Body)
		}
	})
}

// TestMailgunSDKSuppressions: mailgun.js adds, lists, reads and removes
// bounces, unsubscribes and complaints; a bounce it added stops a send;
// a JSON list is added at once.
func TestMailgunSDKSuppressions(t *testing.T) {
	t.Parallel()
	e := startSend(t, store.SQLite, false, nil)
	step := func(call, typ string, extra map[string]any) map[string]any {
		m := map[string]any{"call": call, "domain": "shop.example.com", "type": typ}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	res := mailgunSDK(t, e, e.user.Key, []map[string]any{
		step("suppressions.create", "bounces", map[string]any{"data": map[string]any{"address": "gone@rcpt.example.net", "code": 550, "error": "no such user"}}),
		step("suppressions.create", "unsubscribes", map[string]any{"data": map[string]any{"address": "bye@rcpt.example.net", "tag": "*"}}),
		step("suppressions.create", "complaints", map[string]any{"data": map[string]any{"address": "angry@rcpt.example.net"}}),
		step("suppressions.create", "bounces", map[string]any{"data": []map[string]any{{"address": "l1@rcpt.example.net"}, {"address": "l2@rcpt.example.net", "code": "554"}}}),
		step("suppressions.list", "bounces", nil),
		step("suppressions.get", "bounces", map[string]any{"address": "gone@rcpt.example.net"}),
		step("suppressions.list", "complaints", nil),
		step("suppressions.destroy", "unsubscribes", map[string]any{"address": "bye@rcpt.example.net"}),
		step("suppressions.destroy", "complaints", map[string]any{"address": "angry@rcpt.example.net"}),
		step("suppressions.get", "unsubscribes", map[string]any{"address": "bye@rcpt.example.net"}),
	})
	for i, r := range res[:9] {
		if !r.OK {
			t.Fatalf("step %d: %+v", i, r)
		}
	}
	var bounces struct {
		Items []map[string]any
		Pages []string
	}
	json.Unmarshal(res[4].Result, &bounces)
	if len(bounces.Items) != 3 || len(bounces.Pages) == 0 {
		t.Errorf("bounces list: %s", res[4].Result)
	}
	var one map[string]any
	json.Unmarshal(res[5].Result, &one)
	if one["address"] != "gone@rcpt.example.net" || fmt.Sprint(one["code"]) != "550" || one["error"] != "no such user" {
		t.Errorf("one bounce: %s", res[5].Result)
	}
	var complaints struct{ Items []map[string]any }
	json.Unmarshal(res[6].Result, &complaints)
	if len(complaints.Items) != 1 || complaints.Items[0]["address"] != "angry@rcpt.example.net" {
		t.Errorf("complaints: %s", res[6].Result)
	}
	if res[9].OK || res[9].Status != 404 {
		t.Errorf("a removed unsubscribe: %+v", res[9])
	}
	// The bounce added through the SDK suppresses a send.
	mgSend(t, e, "gone@rcpt.example.net", nil)
	if entries := e.entries(t, "gone@rcpt.example.net", event.Failed); len(entries) != 1 || !strings.Contains(string(entries[0].Details), "suppressed") {
		t.Errorf("send to a bounced address: %+v", entries)
	}
}

// TestMailgunSuppressionsAPI: the lists on both stores: paging object,
// delete all, bad input, an unknown list and another account's domain.
func TestMailgunSuppressionsAPI(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		e := startSend(t, d, false, nil)
		bob := e.NewUser("bob")
		e.NewDomain(bob, "bob.example.org")
		do := func(u apitest.User, method, path, ct, body string) *apitest.Response {
			req := apitest.Request{Method: method, Path: path, Auth: apitest.User{Login: "api", Key: u.Key}.Auth()}
			if body != "" {
				req.Body, req.Header = body, http.Header{"Content-Type": {ct}}
			}
			return e.Do(req)
		}
		form := "application/x-www-form-urlencoded"
		for i := 0; i < 5; i++ {
			if r := do(e.user, "POST", "/v3/shop.example.com/unsubscribes", form, fmt.Sprintf("address=u%d@rcpt.example.net&tag=news", i)); r.StatusCode != 200 {
				t.Fatalf("add: %d %s", r.StatusCode, r.Body)
			}
		}
		r := do(e.user, "GET", "/v3/shop.example.com/unsubscribes?limit=2", "", "")
		paging := r.JSON["paging"].(map[string]any)
		if len(r.JSON["items"].([]any)) != 2 || !strings.HasSuffix(paging["next"].(string), "?page=2&limit=2") || !strings.HasSuffix(paging["last"].(string), "?page=3&limit=2") {
			t.Errorf("page 1: %s", r.Body)
		}
		if r := do(e.user, "GET", "/v3/shop.example.com/unsubscribes?page=3&limit=2", "", ""); len(r.JSON["items"].([]any)) != 1 {
			t.Errorf("page 3: %s", r.Body)
		}
		if r := do(e.user, "POST", "/v3/shop.example.com/whitelists", form, "domain=partner.example"); r.StatusCode != 200 {
			t.Errorf("whitelist a domain: %d %s", r.StatusCode, r.Body)
		}
		if r := do(e.user, "GET", "/v3/shop.example.com/whitelists/partner.example", "", ""); r.JSON["type"] != "domain" {
			t.Errorf("whitelisted domain: %s", r.Body)
		}
		if r := do(e.user, "DELETE", "/v3/shop.example.com/unsubscribes", "", ""); r.StatusCode != 200 || !strings.HasPrefix(r.JSON["message"].(string), "5 ") {
			t.Errorf("delete all: %d %s", r.StatusCode, r.Body)
		}
		for _, c := range []struct {
			method, path, ct, body string
			status                 int
		}{
			{"POST", "/v3/shop.example.com/bounces", form, "code=550", 400},
			{"POST", "/v3/shop.example.com/bounces", form, "address=not-an-address@", 400},
			{"POST", "/v3/shop.example.com/bounces", "application/json", "[]", 400},
			{"GET", "/v3/shop.example.com/bounces?limit=5000", "", "", 400},
			{"GET", "/v3/shop.example.com/lists", "", "", 404},
			{"GET", "/v3/shop.example.com/bounces/nobody@rcpt.example.net", "", "", 404},
		} {
			if r := do(e.user, c.method, c.path, c.ct, c.body); r.StatusCode != c.status {
				t.Errorf("%s %s %s: %d %s, want %d", c.method, c.path, c.body, r.StatusCode, r.Body, c.status)
			}
		}
		do(e.user, "POST", "/v3/shop.example.com/bounces", form, "address=gone@rcpt.example.net")
		for _, c := range [][2]string{{"GET", "/v3/shop.example.com/bounces"}, {"DELETE", "/v3/shop.example.com/bounces"},
			{"GET", "/v3/shop.example.com/bounces/gone@rcpt.example.net"}, {"DELETE", "/v3/shop.example.com/bounces/gone@rcpt.example.net"}} {
			if r := do(bob, c[0], c[1], "", ""); r.StatusCode != 404 {
				t.Errorf("bob %s %s: %d", c[0], c[1], r.StatusCode)
			}
		}
		if r := do(bob, "POST", "/v3/shop.example.com/bounces", form, "address=x@rcpt.example.net"); r.StatusCode != 404 {
			t.Errorf("bob adding to alice's bounces: %d", r.StatusCode)
		}
		if r := do(e.user, "GET", "/v3/shop.example.com/bounces/gone@rcpt.example.net", "", ""); r.StatusCode != 200 {
			t.Errorf("alice's bounce after bob's attempts: %d %s", r.StatusCode, r.Body)
		}
	})
}

// TestMailgunGhostNewsletter is the flow Ghost's newsletter uses, with the
// SDK called as Ghost calls it: a batch of 1,000 with recipient-variables,
// h:Reply-To, h:Sender, h:Auto-Submitted, a per-recipient
// h:List-Unsubscribe with h:List-Unsubscribe-Post, v:email-id, two o:tag
// values, o:tracking-opens and o:deliverytime; then the events Ghost polls
// (delivered OR opened OR failed OR unsubscribed OR complained, limit 300,
// begin, ascending, following pages.next.page), each with its message id
// and email-id; then suppressions.destroy for a bounce, a complaint and an
// unsubscribe.
func TestMailgunGhostNewsletter(t *testing.T) {
	t.Parallel()
	jsLib(t, "mailgun.js")
	e := startSend(t, store.SQLite, false, nil)
	e.sink.Script("m0500@rcpt.example.net", smtptest.Reply{Code: 550, Enhanced: [3]int{5, 1, 1}, Message: "no such user"})
	var to []string
	vars := map[string]any{}
	for i := 0; i < 1000; i++ {
		addr := fmt.Sprintf("m%04d@rcpt.example.net", i)
		to = append(to, addr)
		vars[addr] = map[string]any{"uuid": fmt.Sprintf("u-%d", i), "list_unsubscribe": fmt.Sprintf("https://blog.example/unsubscribe/?uuid=u-%d&key=k%d", i, i)}
	}
	rv, _ := json.Marshal(vars)
	begin := time.Now().Add(-time.Minute)
	send := map[string]any{"call": "messages.create", "domain": "shop.example.com", "data": map[string]any{
		"from": "My Blog <noreply@shop.example.com>", "to": to, "subject": "Weekly issue",
		"html":                    `<p>Hello</p><a href="%recipient.list_unsubscribe%">Unsubscribe</a>`,
		"text":                    "Hello. Unsubscribe: %recipient.list_unsubscribe%",
		"recipient-variables":     string(rv),
		"h:Reply-To":              "editor@shop.example.com",
		"h:Sender":                "newsletter@shop.example.com",
		"h:Auto-Submitted":        "auto-generated",
		"h:List-Unsubscribe":      "<%recipient.list_unsubscribe%>, <%tag_unsubscribe_email%>",
		"h:List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
		"v:email-id":              "email-42",
		"o:tag":                   []string{"bulk-email", "ghost-email"},
		"o:tracking-opens":        "true",
		"o:deliverytime":          time.Now().UTC().Format(time.RFC1123),
	}}
	res := mailgunSDK(t, e, e.user.Key, []map[string]any{send})
	if !res[0].OK {
		t.Fatalf("the newsletter: %+v", res[0])
	}
	msgs, err := e.sink.WaitForMessages(ctxTimeout(t, 120*time.Second), 999)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		var i int
		fmt.Sscanf(m.To[0], "m%04d@rcpt.example.net", &i)
		want := map[string]string{"List-Unsubscribe": fmt.Sprintf("<https://blog.example/unsubscribe/?uuid=u-%d&key=k%d>", i, i),
			"List-Unsubscribe-Post": "List-Unsubscribe=One-Click", "Sender": "newsletter@shop.example.com",
			"Reply-To": "editor@shop.example.com", "Auto-Submitted": "auto-generated"}
		for h, v := range want {
			if got := readReceivedHeader(t, m, h); got != v && strings.Trim(got, "<>") != v {
				t.Fatalf("%s: %s %q, want %q", m.To[0], h, got, v)
			}
		}
		if !strings.Contains(readReceivedHeader(t, m, "X-Mailgun-Variables"), `"email-id":"email-42"`) {
			t.Fatalf("%s: no email-id in X-Mailgun-Variables", m.To[0])
		}
	}
	// One reader opens it (the pixel o:tracking-opens asked for).
	got := readReceived(t, msgs[0].Data)
	if got.pixel == "" {
		t.Fatal("no open-tracking pixel in the newsletter")
	}
	e.hit(t, "GET", got.pixel, "Mozilla/5.0", "")
	e.chain(t, "m0500@rcpt.example.net", event.Bounced)
	waitFor(t, "the open", func() bool { return len(e.entries(t, msgs[0].To[0], event.Opened)) == 1 })

	steps := []map[string]any{
		{"call": "events.follow", "domain": "shop.example.com", "want": 1001, "rounds": 3, "pauseMs": 100, "query": map[string]any{
			"begin": float64(begin.UnixMilli()) / 1000, "ascending": "yes", "limit": 300,
			"event": "delivered OR opened OR failed OR unsubscribed OR complained"}},
		{"call": "suppressions.create", "domain": "shop.example.com", "type": "complaints", "data": map[string]any{"address": "m0001@rcpt.example.net"}},
		{"call": "suppressions.create", "domain": "shop.example.com", "type": "unsubscribes", "data": map[string]any{"address": "m0002@rcpt.example.net"}},
		{"call": "suppressions.destroy", "domain": "shop.example.com", "type": "bounces", "address": "m0500@rcpt.example.net"},
		{"call": "suppressions.destroy", "domain": "shop.example.com", "type": "complaints", "address": "m0001@rcpt.example.net"},
		{"call": "suppressions.destroy", "domain": "shop.example.com", "type": "unsubscribes", "address": "m0002@rcpt.example.net"},
	}
	res = mailgunSDK(t, e, e.user.Key, steps)
	for i, r := range res {
		if !r.OK {
			t.Fatalf("step %d: %+v", i, r)
		}
	}
	var seen []struct {
		ID, Event, Recipient, MessageID string
		UserVariables                   map[string]any
	}
	json.Unmarshal(res[0].Result, &seen)
	kinds := map[string]int{}
	for _, ev := range seen {
		kinds[ev.Event]++
		if ev.MessageID == "" || ev.UserVariables["email-id"] != "email-42" {
			t.Fatalf("event without its message id or email-id: %+v", ev)
		}
	}
	if kinds["delivered"] != 999 || kinds["failed"] != 1 || kinds["opened"] != 1 || len(seen) != 1001 {
		t.Errorf("events seen: %v (%d)", kinds, len(seen))
	}
	for _, l := range []string{"bounces", "complaints", "unsubscribes"} {
		r := e.Do(apitest.Request{Method: "GET", Path: "/v3/shop.example.com/" + l, Auth: apitest.User{Login: "api", Key: e.user.Key}.Auth()})
		if n := len(r.JSON["items"].([]any)); n != 0 {
			t.Errorf("%s after destroy: %s", l, r.Body)
		}
	}
}

// TestMailgunUserVariablesInWebhooks: v: variables of a /v3/ send reach
// the webhook posts of its queued and delivered entries.
func TestMailgunUserVariablesInWebhooks(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		e := startSend(t, d, false, func(c *config.Config) { c.WebhookAllowPrivate = true })
		bodies := make(chan string, 20)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			bodies <- string(b)
		}))
		defer srv.Close()
		if r := e.Do(apitest.Request{Method: "POST", Path: "/api/domains/shop.example.com/webhooks", Auth: e.user.Auth(),
			Body: map[string]any{"url": srv.URL, "event_types": []string{"queued", "delivered"}}}); r.StatusCode != 201 {
			t.Fatalf("webhook: %d %s", r.StatusCode, r.Body)
		}
		mgSend(t, e, "v@rcpt.example.net", url.Values{"v:email-id": {"e-7"}, "v:batch": {`{"n": 1}`}})
		seen := map[string]bool{}
		deadline := time.After(20 * time.Second)
		for !(seen["queued"] && seen["delivered"]) {
			select {
			case b := <-bodies:
				for _, typ := range []string{"queued", "delivered"} {
					if strings.Contains(b, `"event_type":"`+typ+`"`) {
						if !strings.Contains(b, `"user_variables":{"batch":{"n":1},"email-id":"e-7"}`) {
							t.Fatalf("%s post without the user variables: %s", typ, b)
						}
						seen[typ] = true
					}
				}
			case <-deadline:
				t.Fatalf("webhook posts seen: %v", seen)
			}
		}
	})
}

// TestMailgunEventsFilteredPaging: a filter whose matches are far apart
// (one failed among 500 delivered, one complaint among 1,500 unsubscribes,
// four times) pages correctly with limit=1 in both orders: following
// paging.next until the first empty page collects every match exactly
// once, and next always moves.
func TestMailgunEventsFilteredPaging(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		e := startSend(t, d, false, nil)
		at := time.Now().Add(-time.Hour).UTC().Truncate(time.Millisecond)
		var entries []event.Entry
		var wantFailed []string
		for round := 0; round < 4; round++ {
			failed := fmt.Sprintf("gone%d@rcpt.example.net", round)
			wantFailed = append(wantFailed, failed)
			entries = append(entries, event.Entry{DomainID: e.dom.ID, MessageID: fmt.Sprintf("f%d@shop.example.com", round), Type: event.PermanentFail,
				Sender: "news@shop.example.com", Recipient: failed, CreatedAt: at, Details: event.NewDetails(map[string]any{"smtp_code": 550})})
			// A complaint among 1,500 unsubscribes: the same entry type, told
			// apart by its details, more than a page's first scans read.
			entries = append(entries, event.Entry{DomainID: e.dom.ID, MessageID: fmt.Sprintf("f%d@shop.example.com", round), Type: event.Unsubscribed,
				Sender: "news@shop.example.com", Recipient: failed, CreatedAt: at, Details: event.NewDetails(map[string]any{"source": "complaint"})})
			for i := 0; i < 500; i++ {
				at = at.Add(time.Millisecond)
				entries = append(entries, event.Entry{DomainID: e.dom.ID, MessageID: fmt.Sprintf("d%d-%d@shop.example.com", round, i), Type: event.Delivered,
					Sender: "news@shop.example.com", Recipient: fmt.Sprintf("ok%d-%d@rcpt.example.net", round, i), CreatedAt: at, Details: event.NewDetails(nil)})
				entries = append(entries, event.Entry{DomainID: e.dom.ID, MessageID: fmt.Sprintf("d%d-%d@shop.example.com", round, i), Type: event.Unsubscribed,
					Sender: "news@shop.example.com", Recipient: fmt.Sprintf("ok%d-%d@rcpt.example.net", round, i), CreatedAt: at, Details: event.NewDetails(map[string]any{"source": "link"})})
				entries = append(entries, event.Entry{DomainID: e.dom.ID, MessageID: fmt.Sprintf("d%d-%d@shop.example.com", round, i), Type: event.Unsubscribed,
					Sender: "news@shop.example.com", Recipient: fmt.Sprintf("ok%d-%d@rcpt.example.net", round, i), CreatedAt: at, Details: event.NewDetails(map[string]any{"source": "one-click"})})
				entries = append(entries, event.Entry{DomainID: e.dom.ID, MessageID: fmt.Sprintf("d%d-%d@shop.example.com", round, i), Type: event.Unsubscribed,
					Sender: "news@shop.example.com", Recipient: fmt.Sprintf("ok%d-%d@rcpt.example.net", round, i), CreatedAt: at, Details: event.NewDetails(map[string]any{"source": "link"})})
			}
			for i := 0; round == 2 && i < 8000; i++ { // once, a gap longer than a page's first ten scans
				entries = append(entries, event.Entry{DomainID: e.dom.ID, MessageID: fmt.Sprintf("g%d@shop.example.com", i), Type: event.Unsubscribed,
					Sender: "news@shop.example.com", Recipient: fmt.Sprintf("g%d@rcpt.example.net", i), CreatedAt: at, Details: event.NewDetails(map[string]any{"source": "link"})})
			}
			at = at.Add(time.Millisecond)
		}
		if err := e.App.Events.Record(t.Context(), entries...); err != nil {
			t.Fatal(err)
		}
		get := func(path string) *apitest.Response {
			r := e.Do(apitest.Request{Method: "GET", Path: path, Auth: apitest.User{Login: "api", Key: e.user.Key}.Auth()})
			if r.StatusCode != 200 {
				t.Fatalf("%s: %d %s", path, r.StatusCode, r.Body)
			}
			return r
		}
		for _, query := range []string{"event=failed&limit=1", "event=failed&limit=1&ascending=yes", "event=failed&limit=5",
			"event=failed&limit=3&ascending=yes", "event=delivered%20OR%20failed&limit=300", "event=complained&limit=1",
			"event=complained&limit=2&ascending=yes"} {
			path := "/v3/shop.example.com/events?" + query
			seen := map[string]int{}
			kinds := map[string]int{}
			for pages := 0; ; pages++ {
				if pages > 100 {
					t.Fatalf("%s: still paging after 100 pages (seen %v)", query, seen)
				}
				r := get(path)
				items := r.JSON["items"].([]any)
				if len(items) == 0 {
					break
				}
				for _, it := range items {
					m := it.(map[string]any)
					kinds[m["event"].(string)]++
					if m["event"] == "failed" || m["event"] == "complained" {
						seen[m["recipient"].(string)]++
					}
				}
				next := strings.TrimPrefix(r.JSON["paging"].(map[string]any)["next"].(string), e.URL)
				if next == path {
					t.Fatalf("%s: paging.next does not move from %s", query, path)
				}
				path = next
			}
			for _, rcpt := range wantFailed {
				if seen[rcpt] != 1 {
					t.Errorf("%s: the failed event of %s seen %d times, want once (all seen: %v)", query, rcpt, seen[rcpt], seen)
				}
			}
			if len(seen) != len(wantFailed) {
				t.Errorf("%s: failed events of %v, want exactly %v", query, seen, wantFailed)
			}
			if strings.Contains(query, "delivered") && kinds["delivered"] != 2000 {
				t.Errorf("%s: %d delivered events, want 2000", query, kinds["delivered"])
			}
		}
	})
}

// TestMailgunUnknownRoutesAnswerJSON: with the console on, a path under
// /v3/, /v4/ or /api/ that no route has answers JSON with a message,
// never the console's HTML: 401 for missing or bad Mailgun credentials,
// 404 for a path that does not exist, 405 with Allow for a known path
// asked with another method.
func TestMailgunUnknownRoutesAnswerJSON(t *testing.T) {
	t.Parallel()
	e := startSend(t, store.SQLite, false, nil)
	good := apitest.User{Login: "api", Key: e.user.Key}.Auth()
	bad := apitest.User{Login: "api", Key: "pl_wrong"}.Auth()
	cases := []struct {
		method, path, auth string
		status             int
		allow              string
	}{
		{"GET", "/v3/domains/shop.example.com/credentials", good, 404, ""},
		{"GET", "/v3/lists/pages?limit=10", good, 404, ""},
		{"POST", "/v4/address/parse", good, 404, ""},
		{"GET", "/v3/ips/127.0.0.1/domains", good, 404, ""},
		{"GET", "/v4/address/nothing?address=a@rcpt.example.net", good, 404, ""},
		{"POST", "/v4/address/validate/bulk/list1", good, 400, ""}, // no file: Mailgun's JSON 400
		{"POST", "/v4/address/nothing/list1", good, 404, ""},
		{"GET", "/v3", good, 404, ""},
		{"GET", "/v4/", good, 404, ""},
		{"GET", "/v3/domains/shop.example.com/credentials", bad, 401, ""},
		{"GET", "/v4/address/validate", "", 401, ""},
		{"GET", "/v3/shop.example.com/stats/total", bad, 401, ""},
		{"PUT", "/v3/shop.example.com/bounces", good, 405, "GET, HEAD, POST, DELETE"},
		{"DELETE", "/v3/domains", good, 405, "GET, HEAD"},
		{"GET", "/api/no/such/route", "", 404, ""},
		{"GET", "/api/domains/shop.example.com/nothing", e.user.Auth(), 404, ""},
		{"PUT", "/api/keys", e.user.Auth(), 405, "GET, HEAD, POST"},
	}
	for _, c := range cases {
		req, _ := http.NewRequest(c.method, e.URL+c.path, nil)
		req.Header.Set("Accept", "text/html,application/xhtml+xml,*/*")
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var m map[string]any
		jsonErr := json.Unmarshal(body, &m)
		msg, _ := m["message"].(string)
		if resp.StatusCode != c.status || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") || jsonErr != nil || msg == "" {
			t.Errorf("%s %s: %d %s %.200s; want %d JSON with a message", c.method, c.path, resp.StatusCode, resp.Header.Get("Content-Type"), body, c.status)
			continue
		}
		if c.allow != "" && resp.Header.Get("Allow") != c.allow {
			t.Errorf("%s %s: Allow %q, want %q", c.method, c.path, resp.Header.Get("Allow"), c.allow)
		}
		if strings.HasPrefix(c.path, "/v") && len(m) != 1 {
			t.Errorf("%s %s: %s, want Mailgun's {\"message\"} alone", c.method, c.path, body)
		}
	}
}
