package app_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/sending"
	"github.com/postline/postline/internal/shaping"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/testutil"
)

// GET /api/admin/shaping lists, for operators only, the automation action
// a matching reply put in force (site, action, rule, reply, until), and
// no longer once it ended; postline_shaping_actions_total counts it.
func TestAdminShapingListsActions(t *testing.T) {
	t.Parallel()
	for _, d := range testutil.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			e := startQueue(t, d)
			path := filepath.Join(t.TempDir(), "shaping.toml")
			os.WriteFile(path, []byte("[[\"default\".automation]]\nregex = \"4\\\\.7\\\\.28\"\naction = \"Suspend\"\nduration = \"1s\"\n"), 0o600)
			rules, err := shaping.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			auto := rules.For("slow.example", []string{"mx.slow.example"}, "").Automation
			e.App.Automation.Observe(context.Background(), sending.Reply{Site: "mx.slow.example", Rules: auto,
				Line: "421 4.7.28 rate limited"})

			if r := e.Do(apitest.Request{Method: "GET", Path: "/api/admin/shaping", Auth: e.user.Auth()}); r.StatusCode != 403 {
				t.Errorf("a non-operator's GET /api/admin/shaping: %d", r.StatusCode)
			}
			list := func() []map[string]any {
				r := e.admin("GET", "/api/admin/shaping", nil)
				var body struct{ Data []map[string]any }
				if r.StatusCode != 200 || json.Unmarshal(r.Body, &body) != nil {
					t.Fatalf("GET /api/admin/shaping: %d %s", r.StatusCode, r.Body)
				}
				return body.Data
			}
			got := list()
			if len(got) != 1 || got[0]["site"] != "mx.slow.example" || got[0]["action"] != "Suspend" ||
				got[0]["rule"] != auto[0].ID || got[0]["reply"] != "421 4.7.28 rate limited" || got[0]["until"] == nil {
				t.Fatalf("actions in force = %v", got)
			}
			b := &browser{t: t, base: e.URL}
			b.signIn("operator", e.op.Key, "/")
			if r, page := b.do("GET", "/admin", nil, nil); r.StatusCode != 200 || !strings.Contains(page, "Automation actions") ||
				!strings.Contains(page, `<td data-label="Site">mx.slow.example</td><td data-label="Action">Suspend</td>`) || !strings.Contains(page, "421 4.7.28 rate limited") {
				t.Errorf("the operator page does not list the action: %d\n%s", r.StatusCode, page)
			}
			metrics := string(e.Do(apitest.Request{Method: "GET", Path: "/metrics"}).Body)
			if !strings.Contains(metrics, `postline_shaping_actions_total{action="Suspend"} 1`) {
				t.Errorf("metrics do not count the action:\n%s", grepLines(metrics, "postline_shaping"))
			}
			time.Sleep(1100 * time.Millisecond)
			if got := list(); len(got) != 0 {
				t.Errorf("actions in force after their end = %v", got)
			}
			// Its activation and its expiry stay visible: in the API's
			// history, `ended` expired at its until, and on the console.
			var body struct{ History []map[string]any }
			if r := e.admin("GET", "/api/admin/shaping", nil); json.Unmarshal(r.Body, &body) != nil || len(body.History) != 1 ||
				body.History[0]["ended"] != "expired" || body.History[0]["ended_at"] != got[0]["until"] ||
				body.History[0]["since"] != got[0]["since"] || body.History[0]["reply"] != "421 4.7.28 rate limited" {
				t.Errorf("history after the end = %s; want the Suspend, expired at its until", r.Body)
			}
			if _, page := b.do("GET", "/admin", nil, nil); !strings.Contains(page, `<td data-label="Ended">expired <time`) ||
				!strings.Contains(page, "No automation action in force") {
				t.Errorf("the operator page after the end lacks the expired action in the history:\n%s", page)
			}
		})
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// A SuspendTenant action holds the sending account's deliveries to the
// site (pending, not attempted), not its deliveries elsewhere, and they
// go once the duration ends.
func TestAutomationSuspendTenant(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		e := startQueue(t, d)
		path := filepath.Join(t.TempDir(), "shaping.toml")
		os.WriteFile(path, []byte("[[\"default\".automation]]\nregex = \"^421 \"\naction = \"SuspendTenant\"\nduration = \"3s\"\n"), 0o600)
		rules, err := shaping.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		auto := rules.For("rcpt.example.net", []string{"mx.rcpt.example.net"}, "").Automation
		e.App.Automation.Observe(context.Background(), sending.Reply{Site: "mx.rcpt.example.net", AccountID: e.news.AccountID,
			Rules: auto, Line: "421 4.7.0 too many messages from this sender"})
		start := time.Now()
		e.sendFrom(t, "shop.example.com", "a@rcpt.example.net", "b@other-rcpt.net")
		if _, err := e.sink.WaitForMessages(ctxTimeout(t, 15*time.Second), 1); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Until(start.Add(1500 * time.Millisecond)))
		if got := e.sinkHas(); !slices.Equal(got, []string{"b@other-rcpt.net"}) {
			t.Fatalf("the sink received %v during the tenant's suspension; want other-rcpt.net's alone", got)
		}
		if state, attempts := e.delivery(t, "a@rcpt.example.net"); state != "pending" || attempts != 0 {
			t.Errorf("delivery held for the tenant at its site: %s, attempt %d; want pending, 0", state, attempts)
		}
		if _, err := e.sink.WaitForMessages(ctxTimeout(t, 10*time.Second), 2); err != nil {
			t.Fatalf("after the suspension's end: %v", err)
		}
		if _, attempts := e.delivery(t, "a@rcpt.example.net"); attempts != 1 {
			t.Errorf("delivered at attempt %d; want 1", attempts)
		}
	})
}
