package app_test

import (
	"html"
	"regexp"
	"strings"
	"testing"

	"github.com/postline/postline/internal/store"
)

// TestConsoleLogExportKeepsTheSearch: the log page's export link exports
// what the page shows, its search box included: a log searched by subject
// exported every entry of the domain.
func TestConsoleLogExportKeepsTheSearch(t *testing.T) {
	t.Parallel()
	e := startSend(t, store.SQLite, false, nil)
	for _, m := range [][2]string{{"wanted@rcpt.example.net", "Quarterly invoice"}, {"other@rcpt.example.net", "Password reset"}} {
		if r := e.send(t, []part{{name: "from", value: "news@shop.example.com"}, {name: "to", value: m[0]}, {name: "subject", value: m[1]}, {name: "text", value: "hi"}}, nil); r.StatusCode != 202 {
			t.Fatalf("send: %d %s", r.StatusCode, r.Body)
		}
	}
	b := &browser{t: t, base: e.URL}
	b.signIn("alice", e.user.Key, "/")
	for _, q := range []string{"invoice", "wanted@rcpt.example.net"} {
		_, page := b.do("GET", "/domains/shop.example.com/log?q="+q, nil, nil)
		if !strings.Contains(page, "wanted@rcpt.example.net") || strings.Contains(page, "other@rcpt.example.net") {
			t.Fatalf("the log searched for %q:\n%s", q, page)
		}
		m := regexp.MustCompile(`href="(/domains/shop\.example\.com/log/export\?[^"]*format=csv[^"]*)"`).FindStringSubmatch(page)
		if m == nil {
			t.Fatalf("no CSV export link on the searched log:\n%s", page)
		}
		r, csv := b.do("GET", html.UnescapeString(m[1]), nil, nil)
		if r.StatusCode != 200 || !strings.Contains(csv, "wanted@rcpt.example.net") || strings.Contains(csv, "other@rcpt.example.net") {
			t.Errorf("the export of the log searched for %q (%s): %d\n%s", q, m[1], r.StatusCode, csv)
		}
	}
}
