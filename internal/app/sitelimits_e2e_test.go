package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/sending"
	"github.com/postline/postline/internal/shaping"
	"github.com/postline/postline/internal/store"
)

// siteRules gives rcpt.example.net's MX hosts a provider with its own
// limits, and an automation rule that lowers the message rate.
const siteRules = `
[provider."rcptco"]
match = [{MXSuffix = ".rcpt.example.net"}]
connection_limit = 3
max_deliveries_per_connection = 20
max_message_rate = "100/h"

[["default".automation]]
regex = "4\\.7\\.28"
action = {SetConfig = {name = "max_message_rate", value = "10/min"}}
duration = "1 hour"
`

// startShapedQueue is startQueue with siteRules as its --shaping-file,
// whose path it returns.
func startShapedQueue(t *testing.T, d store.Dialect) (*queueEnv, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "shaping.toml")
	if err := os.WriteFile(path, []byte(siteRules), 0o600); err != nil {
		t.Fatal(err)
	}
	e := &queueEnv{sendEnv: startSend(t, d, false, func(c *config.Config) { c.ShapingFiles = []string{path} })}
	e.op = e.NewUser("operator")
	if err := e.App.Accounts.SetAdmin(context.Background(), "operator", true); err != nil {
		t.Fatal(err)
	}
	return e, path
}

// The listing by site, in the API and on the operator's console page,
// shows each site with its provider, the limits delivery enforces there
// (the rules', the defaults for the rest, an automation override in force
// marked as such), its ready, deferred and held counts and its
// suspension with the reason and end; the automation history keeps the
// override once it is resumed.
func TestQueueBySiteShowsLimits(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		e, path := startShapedQueue(t, d)
		// The automation rule fires on a throttling reply from the site.
		rules, err := shaping.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		auto := rules.For("rcpt.example.net", []string{"mx.rcpt.example.net"}, "").Automation
		e.App.Automation.Observe(context.Background(), sending.Reply{Site: "mx.rcpt.example.net", Rules: auto,
			Line: "421 4.7.28 slow down"})
		sp := e.suspend(t, map[string]any{"site": "mx.rcpt.example.net", "reason": "421 storm", "duration": "2 hours"})
		e.sendFrom(t, "shop.example.com", "a@rcpt.example.net", "b@rcpt.example.net")

		// Both deliveries are claimed, found suspended and put back held.
		var site map[string]any
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			q := e.admin("GET", "/api/admin/queue?by=site", nil)
			groups, _ := q.JSON["data"].(map[string]any)["groups"].([]any)
			if q.StatusCode != 200 || len(groups) != 1 {
				t.Fatalf("queue by site: %d %s", q.StatusCode, q.Body)
			}
			site = groups[0].(map[string]any)
			if site["held"] == 2.0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("queue by site: %v; want both deliveries held for the site", site)
			}
		}
		if site["name"] != "mx.rcpt.example.net" || site["provider"] != "rcptco" || site["pending"] != 2.0 {
			t.Errorf("site entry: %v; want mx.rcpt.example.net of provider rcptco with 2 ready", site)
		}
		limits, _ := json.Marshal(site["limits"])
		if want := `{"connection_limit":3,"max_connection_rate":null,"max_deliveries_per_connection":20,` +
			`"max_message_rate":"10/min","overridden":["max_message_rate"]}`; string(limits) != want {
			t.Errorf("limits = %s\nwant %s (the override over the rules' 100/h)", limits, want)
		}
		if s, _ := site["suspension"].(map[string]any); s == nil || s["reason"] != "421 storm" || s["until"] != sp["until"] {
			t.Errorf("the site's suspension: %v; want its reason and end", site["suspension"])
		}
		// Groupings other than by site have no limits.
		if q := e.admin("GET", "/api/admin/queue?by=domain", nil); strings.Contains(string(q.Body), `"limits"`) {
			t.Errorf("queue by domain carries limits: %s", q.Body)
		}

		b := &browser{t: t, base: e.URL}
		b.signIn("operator", e.op.Key, "/")
		r, page := b.do("GET", "/admin?by=site", nil, nil)
		for _, want := range []string{`<td data-label="Site">mx.rcpt.example.net</td>`, `<td data-label="Provider">rcptco</td>`,
			`<code>connection_limit</code> 3</li>`, `<code>max_connection_rate</code> none</li>`,
			`<code>max_message_rate</code> 10/min <strong>override</strong></li>`, `<code>max_deliveries_per_connection</code> 20</li>`,
			`<td data-label="Ready">2</td>`, `<td data-label="Deferred">0</td>`, `<td data-label="Held">2</td>`,
			fmt.Sprintf(`until <time datetime="%s">%[1]s</time>: 421 storm`, isoSeconds(t, sp["until"]))} {
			if !strings.Contains(page, want) {
				t.Errorf("/admin?by=site lacks %s", want)
			}
		}
		if r.StatusCode != 200 || t.Failed() {
			t.Fatalf("/admin?by=site: %d\n%s", r.StatusCode, page)
		}

		// The override, resumed, stays in the history as resumed.
		var override int64
		list, _ := e.App.Queue.Suspensions(context.Background())
		for _, s := range list {
			if s.Action == "SetConfig max_message_rate=10/min" {
				override = s.ID
			}
		}
		if r := e.admin("DELETE", fmt.Sprintf("/api/admin/queue/suspensions/%d", override), nil); override == 0 || r.StatusCode != 200 {
			t.Fatalf("resume the override %d: %d %s", override, r.StatusCode, r.Body)
		}
		var body struct {
			Data    []map[string]any
			History []map[string]any
		}
		if r := e.admin("GET", "/api/admin/shaping", nil); r.StatusCode != 200 || json.Unmarshal(r.Body, &body) != nil {
			t.Fatalf("GET /api/admin/shaping: %d %s", r.StatusCode, r.Body)
		}
		if len(body.Data) != 0 || len(body.History) != 1 || body.History[0]["ended"] != "resumed" || body.History[0]["ended_at"] == nil ||
			body.History[0]["reply"] != "421 4.7.28 slow down" || body.History[0]["site"] != "mx.rcpt.example.net" {
			t.Errorf("shaping after the resume: in force %v, history %v; want none in force and the override resumed", body.Data, body.History)
		}
		if _, page := b.do("GET", "/admin?by=site", nil, nil); !strings.Contains(page, `<code>max_message_rate</code> 100/h</li>`) ||
			!strings.Contains(page, `<td data-label="Ended">resumed <time`) {
			t.Errorf("/admin after the resume: want the rules' 100/h and the override's end in the history\n%s", page)
		}
	})
}

// isoSeconds is an API time as the console writes it (whole seconds).
func isoSeconds(t *testing.T, v any) string {
	t.Helper()
	at, err := time.Parse(time.RFC3339Nano, fmt.Sprint(v))
	if err != nil {
		t.Fatalf("not a time: %v", v)
	}
	return at.UTC().Format(time.RFC3339)
}
