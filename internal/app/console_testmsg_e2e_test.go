package app_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/store"
)

// TestConsoleTestMessage: the domain page's "send a test message" button
// (issue 32) sends through the intake as the API does: the message
// arrives DKIM-signed from test@DOMAIN, is logged queued → delivered with
// the tag "test", and the button lands on the message's page. A bad
// address is refused with the reason and nothing sent; another account's
// domain is a 404; the requests count against the account's per-minute
// budget for domain endpoints.
func TestConsoleTestMessage(t *testing.T) {
	t.Parallel()
	e := startSend(t, store.SQLite, false, func(c *config.Config) { c.RateDomainPerMinute = 5 })
	other := e.NewUser("mallory")
	e.NewDomain(other, "mallory.example")
	b := &browser{t: t, base: e.URL}
	b.signIn("alice", e.user.Key, "/")
	_, page := b.do("GET", "/domains/shop.example.com", nil, nil)
	if !strings.Contains(page, `action="/domains/shop.example.com/test-message"`) {
		t.Fatalf("the domain page has no test-message form:\n%s", page)
	}
	csrf := csrfRE.FindStringSubmatch(page)[1]

	r, _ := b.do("POST", "/domains/shop.example.com/test-message", url.Values{"csrf": {csrf}, "to": {"ann@rcpt.example.net"}}, nil)
	loc := r.Header.Get("Location")
	if r.StatusCode != 303 || !strings.HasPrefix(loc, "/domains/shop.example.com/messages/") {
		t.Fatalf("send a test message: %d to %q, want 303 to the message's page", r.StatusCode, loc)
	}
	if _, page := b.do("GET", loc, nil, nil); !strings.Contains(page, "Test message queued for ann@rcpt.example.net") ||
		!strings.Contains(page, "<td>queued</td>") {
		t.Errorf("the message's page after the button:\n%s", page)
	}
	msgs, err := e.sink.WaitForMessages(ctxTimeout(t, 15*time.Second), 1)
	if err != nil {
		t.Fatal(err)
	}
	data := string(msgs[0].Data)
	if msgs[0].To[0] != "ann@rcpt.example.net" || !strings.Contains(data, "Subject: Test message from shop.example.com") ||
		!strings.Contains(data, "test@shop.example.com") || !strings.Contains(data, "DKIM-Signature:") {
		t.Errorf("the test message as received:\n%s", data)
	}
	waitFor(t, "the delivered entry", func() bool { return len(e.entries(t, "ann@rcpt.example.net", event.Delivered)) == 1 })
	if q := e.entries(t, "ann@rcpt.example.net", event.Queued); len(q) != 1 || q[0].Tags != "test" {
		t.Errorf("queued entries %+v, want one tagged test", q)
	}

	// A bad address: the reason, nothing queued.
	status, page := b.submit("/domains/shop.example.com/test-message", url.Values{"csrf": {csrf}, "to": {"not an address"}})
	if status != 303 || !strings.Contains(page, "The test message was not sent") {
		t.Errorf("a bad address: %d\n%s", status, page)
	}
	// One address: a list, or a display name of the sender's choosing,
	// would make the button a many-recipient send counted as one request.
	for _, to := range []string{"x1@rcpt.example.net, x2@rcpt.example.net", `"Click http://evil.example" <x3@rcpt.example.net>`} {
		status, page := b.submit("/domains/shop.example.com/test-message", url.Values{"csrf": {csrf}, "to": {to}})
		if status != 303 || !strings.Contains(page, "it goes to one address") {
			t.Errorf("to %q: %d\n%s", to, status, page)
		}
	}
	for _, rcpt := range []string{"x1@rcpt.example.net", "x2@rcpt.example.net", "x3@rcpt.example.net"} {
		if n := len(e.entries(t, rcpt, event.Queued)); n != 0 {
			t.Errorf("%d queued for %s from a list or a named address, want 0", n, rcpt)
		}
	}
	if status, page := b.submit("/domains/shop.example.com/test-message", url.Values{"csrf": {csrf}, "to": {" "}}); status != 303 ||
		!strings.Contains(page, "Type the address the test message goes to") {
		t.Errorf("no address: %d\n%s", status, page)
	}
	if r, _ := b.do("POST", "/domains/mallory.example/test-message", url.Values{"csrf": {csrf}, "to": {"ann@rcpt.example.net"}}, nil); r.StatusCode != 404 {
		t.Errorf("another account's domain: %d, want 404", r.StatusCode)
	}
	// Budget 5: four requests counted so far (the 404 is not the account's
	// domain); the fifth is allowed, the sixth waits.
	b.submit("/domains/shop.example.com/test-message", url.Values{"csrf": {csrf}, "to": {"bob@rcpt.example.net"}})
	if status, page := b.submit("/domains/shop.example.com/test-message", url.Values{"csrf": {csrf}, "to": {"cy@rcpt.example.net"}}); status != 303 ||
		!strings.Contains(page, "Too many requests") {
		t.Errorf("past the per-minute budget: %d\n%s", status, page)
	}
	if n := len(e.entries(t, "cy@rcpt.example.net", event.Queued)); n != 0 {
		t.Errorf("%d queued past the budget, want 0", n)
	}
}
