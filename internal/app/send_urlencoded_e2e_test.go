package app_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/store"
)

// The native send endpoint takes application/x-www-form-urlencoded as
// /v3/ does (issue 32, defect 11): the same fields and limits, no files.
func TestSendURLEncoded(t *testing.T) {
	t.Parallel()
	e := startSend(t, store.SQLite, false, nil)
	post := func(form url.Values, contentType string) *apitest.Response {
		t.Helper()
		return e.Do(apitest.Request{Method: "POST", Path: "/api/domains/shop.example.com/message", Auth: e.user.Auth(),
			Body: []byte(form.Encode()), Header: http.Header{"Content-Type": {contentType}}})
	}
	form := url.Values{"from": {"orders@shop.example.com"}, "from_name": {"Shop"}, "to": {"ann@rcpt.example.net"}, "to[]": {"ben@rcpt.example.net"},
		"subject": {"Your order ✓"}, "text": {"Thanks & see you"}, "html": {"<p>Thanks &amp; see you</p>"}, "tags": {"orders"}}
	resp := post(form, "application/x-www-form-urlencoded; charset=utf-8")
	if resp.StatusCode != 202 || resp.JSON["data"].(map[string]any)["queued"] != 2.0 {
		t.Fatalf("a urlencoded send: %d %s", resp.StatusCode, resp.Body)
	}
	msgs, err := e.sink.WaitForMessages(ctxTimeout(t, 15*time.Second), 2)
	if err != nil {
		t.Fatal(err)
	}
	m := readReceived(t, msgs[0].Data)
	if !strings.Contains(m.text, "Thanks & see you") || !strings.Contains(m.html, "<p>Thanks &amp; see you</p>") {
		t.Errorf("the message sent: text %q html %q", m.text, m.html)
	}
	for _, c := range []struct {
		name        string
		form        url.Values
		contentType string
		field       string
	}{
		{"a file field", url.Values{"from": {"orders@shop.example.com"}, "to": {"ann@rcpt.example.net"}, "subject": {"s"}, "text": {"t"},
			"attachments": {"not a file"}}, "application/x-www-form-urlencoded", "attachments"},
		{"an unknown field", url.Values{"from": {"orders@shop.example.com"}, "to": {"ann@rcpt.example.net"}, "subject": {"s"}, "text": {"t"},
			"subjcet": {"typo"}}, "application/x-www-form-urlencoded", "subjcet"},
		{"a subject past its part limit", url.Values{"from": {"orders@shop.example.com"}, "to": {"ann@rcpt.example.net"},
			"subject": {strings.Repeat("s", 65<<10)}, "text": {"t"}}, "application/x-www-form-urlencoded", "subject"},
		{"another type", url.Values{"from": {"x"}}, "text/plain", "body"},
	} {
		resp := post(c.form, c.contentType)
		errs, _ := resp.JSON["errors"].(map[string]any)
		if resp.StatusCode != 422 || errs[c.field] == nil {
			t.Errorf("%s: %d %s, want 422 naming %s", c.name, resp.StatusCode, resp.Body, c.field)
		}
	}
}
