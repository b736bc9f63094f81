package app_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/store"
)

// TestConsoleLogSearch: the log page's one box goes to a message's page
// by its Message-ID (with or without angle brackets), filters by
// recipient for an address, and by subject for other text; another
// domain's Message-ID is not found.
func TestConsoleLogSearch(t *testing.T) {
	t.Parallel()
	e := startSend(t, store.SQLite, false, nil)
	send := func(to, subject string) string {
		t.Helper()
		ps := basicParts(to)
		ps[1].value = subject
		resp := e.send(t, ps, nil)
		if resp.StatusCode != 202 {
			t.Fatalf("send: %d %s", resp.StatusCode, resp.Body)
		}
		return resp.JSON["data"].(map[string]any)["message_ids"].([]any)[0].(string)
	}
	id := send("ann@rcpt.example.net", "Your order 42")
	send("bob@rcpt.example.net", "Invoice 7 is ready")
	waitFor(t, "both queued", func() bool { return len(e.entries(t, "bob@rcpt.example.net", event.Queued)) == 1 })
	b := &browser{t: t, base: e.URL}
	b.signIn("alice", e.user.Key, "/")
	search := func(q string) (int, string, string) {
		r, body := b.do("GET", "/domains/shop.example.com/log?q="+url.QueryEscape(q), nil, nil)
		return r.StatusCode, r.Header.Get("Location"), body
	}
	for _, q := range []string{id, "<" + id + ">", " " + id + " "} {
		if code, loc, _ := search(q); code != 303 || loc != "/domains/shop.example.com/messages/"+id {
			t.Errorf("q=%q: %d to %q, want the message's page", q, code, loc)
		}
	}
	code, _, body := search("ANN@rcpt.example.net")
	if code != 200 || !strings.Contains(body, "ann@rcpt.example.net") || strings.Contains(body, "bob@rcpt.example.net") ||
		!strings.Contains(body, "recipient is ANN@rcpt.example.net") {
		t.Errorf("q=an address: %d\n%s", code, body)
	}
	code, _, body = search("invoice 7")
	if code != 200 || !strings.Contains(body, "bob@rcpt.example.net") || strings.Contains(body, "ann@rcpt.example.net") ||
		!strings.Contains(body, "subject contains") || !strings.Contains(body, `value="invoice 7"`) {
		t.Errorf("q=words of a subject: %d\n%s", code, body)
	}
	code, _, body = search("<nope@shop.example.com>")
	if code != 200 || !strings.Contains(body, "No message has the Message-ID") || strings.Contains(body, "rcpt.example.net</td>") {
		t.Errorf("q=an unknown Message-ID: %d\n%s", code, body)
	}
	mallory := e.NewUser("mallory")
	e.NewDomain(mallory, "mallory.example")
	mb := &browser{t: t, base: e.URL}
	mb.signIn("mallory", mallory.Key, "/")
	if r, _ := mb.do("GET", "/domains/mallory.example/log?q="+url.QueryEscape(id), nil, nil); r.StatusCode != 200 || r.Header.Get("Location") != "" {
		t.Errorf("another domain's Message-ID: %d to %q", r.StatusCode, r.Header.Get("Location"))
	}
}
