package app_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/store"
)

// TestConsoleAnalytics: the analytics page (issue 32) shows, from the
// hourly counts, each domain's delivered, bounce, complaint, open and
// click rates over 24 hours, 7 days or 30 days, for all mail or one tag;
// a chart with a title, a legend, axes in messages and UTC time, and each
// bar's figures on hover; "no mail yet" for a domain without any; a
// warning once the complaint rate passes what Gmail and Yahoo enforce;
// another account's domain is a 404.
func TestConsoleAnalytics(t *testing.T) {
	t.Parallel()
	e := startSend(t, store.SQLite, false, nil)
	other := e.NewUser("mallory")
	e.NewDomain(other, "mallory.example")
	for _, to := range []string{"ann@rcpt.example.net", "bob@rcpt.example.net"} {
		parts := append(basicParts(to), part{name: "tags", value: "welcome"})
		if resp := e.send(t, parts, nil); resp.StatusCode != 202 {
			t.Fatalf("send: %d %s", resp.StatusCode, resp.Body)
		}
	}
	waitFor(t, "two delivered", func() bool {
		return len(e.entries(t, "ann@rcpt.example.net", event.Delivered))+len(e.entries(t, "bob@rcpt.example.net", event.Delivered)) == 2
	})
	b := &browser{t: t, base: e.URL}
	b.signIn("alice", e.user.Key, "/")
	_, page := b.do("GET", "/analytics", nil, nil)
	for _, want := range []string{
		`<th scope="row">shop.example.com</th><td>2</td><td>2 (100%)</td><td>0%</td><td>0%</td><td>0%</td><td>0%</td>`,
		`<svg class="chart outcomes"`, "shop.example.com: messages by outcome per hour, last 24 hours (UTC)",
		">delivered</text>", ">bounced</text>", `class="unit">messages</text>`, `class="unit">hour (UTC)</text>`,
		": 2 delivered, 0 bounced, 0 failed otherwise; 0 complained</title>",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the analytics page lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, `role="alert"`) {
		t.Errorf("a warning without complaints or bounces:\n%s", page)
	}

	// A complaint on one of two delivered: 50%, past the 0.3% enforced.
	if err := e.App.Events.Record(context.Background(), event.Entry{DomainID: e.dom.ID, MessageID: "c1@shop.example.com",
		Type: event.Unsubscribed, Sender: "a@shop.example.com", Recipient: "ann@rcpt.example.net", CreatedAt: time.Now().UTC(),
		Details: event.NewDetails(map[string]any{"source": "complaint"})}); err != nil {
		t.Fatal(err)
	}
	_, page = b.do("GET", "/analytics?window=7d", nil, nil)
	if !strings.Contains(page, "<td>50.0%</td>") || !strings.Contains(page, "at or over the 0.3% Gmail and Yahoo enforce") ||
		!strings.Contains(page, "per day, last 7 days (UTC)") {
		t.Errorf("7 days with a complaint:\n%s", page)
	}
	if _, page := b.do("GET", "/analytics?window=30d&tag=welcome", nil, nil); !strings.Contains(page, "<td>2 (100%)</td>") || !strings.Contains(page, "· tag welcome") {
		t.Errorf("the tag welcome over 30 days:\n%s", page)
	}
	if _, page := b.do("GET", "/analytics?domain=shop.example.com", nil, nil); !strings.Contains(page, `id="by-tag"`) ||
		!strings.Contains(page, `tag=welcome">welcome</a></th><td>2</td><td>2 (100%)</td>`) {
		t.Errorf("shop.example.com by tag:\n%s", page)
	}
	if _, page := b.do("GET", "/analytics?tag=none-such", nil, nil); !strings.Contains(page, `id="no-mail"`) {
		t.Errorf("a tag without mail:\n%s", page)
	}
	if r, _ := b.do("GET", "/analytics?domain=mallory.example", nil, nil); r.StatusCode != 404 {
		t.Errorf("another account's domain: %d, want 404", r.StatusCode)
	}
	if r, _ := b.do("GET", "/analytics?tag="+url.QueryEscape(strings.Repeat("x", 256)), nil, nil); r.StatusCode < 400 || r.StatusCode >= 500 {
		t.Errorf("a 256-character tag: %d, want a 4xx", r.StatusCode)
	}

	// An account with a domain and no mail.
	m := &browser{t: t, base: e.URL}
	m.signIn("mallory", other.Key, "/")
	if _, page := m.do("GET", "/analytics", nil, nil); !strings.Contains(page, `id="no-mail"`) || strings.Contains(page, "shop.example.com") ||
		strings.Contains(page, "<svg") {
		t.Errorf("an account without mail:\n%s", page)
	}
}
