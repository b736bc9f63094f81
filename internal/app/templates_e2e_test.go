package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-message/mail"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/store"
)

func subjectOf(t *testing.T, raw []byte) string {
	t.Helper()
	mr, err := mail.CreateReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	s, err := mr.Header.Subject()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

// TestTemplates: stored templates with versions, the preview, a send with
// a template whose variable tries HTML injection (escaped in the HTML part
// as delivered, as given in the subject and text), an older version by
// number, a strict template's missing variable, and another account's
// domain as a 404.
func TestTemplates(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		e := startSend(t, d, false, nil)
		bob := e.NewUser("bob")
		e.NewDomain(bob, "bob.example.org")
		do := func(u apitest.User, method, path string, body any) *apitest.Response {
			return e.Do(apitest.Request{Method: method, Path: path, Auth: u.Auth(), Body: body})
		}
		base := "/api/domains/shop.example.com/templates"
		resp := do(e.user, "POST", base, map[string]any{"name": "welcome", "subject": "Welcome {{name}}",
			"html": "<p>Hi {{name}}</p><ul>{{#each items}}<li>{{@index}} {{this}}</li>{{/each}}</ul>", "text": "Hi {{name}}, {{#each items}}{{this}} {{/each}}"})
		if resp.StatusCode != 201 || resp.JSON["data"].(map[string]any)["version"] != 1.0 {
			t.Fatalf("create: %d %s", resp.StatusCode, resp.Body)
		}
		if resp := do(e.user, "POST", base, map[string]any{"name": "welcome", "subject": "x", "text": "y"}); resp.StatusCode != 409 {
			t.Errorf("the same name again: %d", resp.StatusCode)
		}
		for _, c := range []struct {
			body  map[string]any
			field string
		}{
			{map[string]any{"name": "bad name!", "subject": "s", "text": "t"}, "name"},
			{map[string]any{"name": "x", "subject": "s", "text": "t", "html": "{{#each items}}"}, "html"},
			{map[string]any{"name": "x", "subject": "s", "html": "<p>h</p>"}, "text"},
			{map[string]any{"name": "x", "subject": strings.Repeat("s", 999), "text": "t"}, "subject"},
			{map[string]any{"name": "x", "subject": "s", "text": "{{> footer}}"}, "text"},
		} {
			resp := do(e.user, "POST", base, c.body)
			if errs, _ := resp.JSON["errors"].(map[string]any); resp.StatusCode != 422 || errs[c.field] == nil {
				t.Errorf("%v: %d %s, want 422 naming %s", c.body, resp.StatusCode, resp.Body, c.field)
			}
		}
		resp = do(e.user, "PUT", base+"/welcome", map[string]any{"subject": "Welcome back {{name}}", "text": "Hello again {{name}}",
			"html": "<p>Hello again {{name}}</p>"})
		if resp.StatusCode != 200 || resp.JSON["data"].(map[string]any)["version"] != 2.0 {
			t.Fatalf("new version: %d %s", resp.StatusCode, resp.Body)
		}
		list := do(e.user, "GET", base, nil).JSON["data"].([]any)
		if len(list) != 1 || list[0].(map[string]any)["version"] != 2.0 || list[0].(map[string]any)["versions"] != 2.0 {
			t.Errorf("list: %v", list)
		}
		if v1 := do(e.user, "GET", base+"/welcome?version=1", nil); v1.StatusCode != 200 || v1.JSON["data"].(map[string]any)["subject"] != "Welcome {{name}}" {
			t.Errorf("version 1: %d %s", v1.StatusCode, v1.Body)
		}
		if r := do(e.user, "GET", base+"/welcome?version=9", nil); r.StatusCode != 404 {
			t.Errorf("version 9: %d", r.StatusCode)
		}
		resp = do(e.user, "POST", base+"/welcome/render", map[string]any{"variables": map[string]any{"name": "<b>Ann</b>"}})
		if data := resp.JSON["data"].(map[string]any); resp.StatusCode != 200 || data["html"] != "<p>Hello again &lt;b&gt;Ann&lt;/b&gt;</p>" ||
			data["subject"] != "Welcome back <b>Ann</b>" || data["text"] != "Hello again <b>Ann</b>" {
			t.Errorf("preview: %d %s", resp.StatusCode, resp.Body)
		}

		// Another account's domain, and another account's template name.
		for _, r := range []*apitest.Response{do(e.user, "GET", "/api/domains/bob.example.org/templates", nil),
			do(e.user, "POST", "/api/domains/bob.example.org/templates", map[string]any{"name": "x", "subject": "s", "text": "t"}),
			do(bob, "GET", base+"/welcome", nil)} {
			if r.StatusCode != 404 {
				t.Errorf("cross-account: %d %s", r.StatusCode, r.Body)
			}
		}

		// A send with the template: the injection attempt is escaped in the
		// HTML the recipient gets.
		attack := `<img src=x onerror="alert(1)">`
		resp = e.send(t, []part{{name: "from", value: "orders@shop.example.com"}, {name: "to", value: "ann@rcpt.example.net"},
			{name: "template", value: "welcome"}, {name: "variables", value: mustJSON(map[string]any{"name": attack})}}, nil)
		if resp.StatusCode != 202 {
			t.Fatalf("send with a template: %d %s", resp.StatusCode, resp.Body)
		}
		got := e.lastMessage(t, 1)
		if strings.Contains(got.html, "<img") || !strings.Contains(got.html, "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;") {
			t.Errorf("delivered html: %q", got.html)
		}
		if got.text != "Hello again "+attack {
			t.Errorf("delivered text: %q", got.text)
		}
		if s := subjectOf(t, got.raw); s != "Welcome back "+attack {
			t.Errorf("delivered subject: %q", s)
		}
		// Version 1 by number, with a list.
		resp = e.send(t, []part{{name: "from", value: "orders@shop.example.com"}, {name: "to", value: "ben@rcpt.example.net"},
			{name: "template", value: "welcome"}, {name: "template_version", value: "1"},
			{name: "variables", value: `{"name": "Ben", "items": ["tea", "cups"]}`}}, nil)
		if resp.StatusCode != 202 {
			t.Fatalf("send version 1: %d %s", resp.StatusCode, resp.Body)
		}
		got = e.lastMessage(t, 2)
		if got.text != "Hi Ben, tea cups " || !strings.Contains(got.html, "<li>0 tea</li><li>1 cups</li>") || subjectOf(t, got.raw) != "Welcome Ben" {
			t.Errorf("version 1: text %q html %q", got.text, got.html)
		}

		// Bad sends.
		strict := do(e.user, "POST", base, map[string]any{"name": "receipt", "subject": "Receipt {{order.id}}", "text": "Total {{total}}", "strict": true})
		if strict.StatusCode != 201 {
			t.Fatalf("strict template: %d %s", strict.StatusCode, strict.Body)
		}
		for _, c := range []struct {
			parts []part
			field string
		}{
			{[]part{{name: "template", value: "receipt"}, {name: "variables", value: `{"order": {"id": 7}}`}}, "variables"},
			{[]part{{name: "template", value: "nope"}}, "template"},
			{[]part{{name: "template", value: "welcome"}, {name: "subject", value: "x"}}, "template"},
			{[]part{{name: "template", value: "welcome"}, {name: "template_version", value: "zero"}}, "template_version"},
			{[]part{{name: "template", value: "welcome"}, {name: "variables", value: `[1, 2]`}}, "variables"},
		} {
			parts := append([]part{{name: "from", value: "orders@shop.example.com"}, {name: "to", value: "x@rcpt.example.net"}}, c.parts...)
			resp := e.send(t, parts, nil)
			if errs, _ := resp.JSON["errors"].(map[string]any); resp.StatusCode != 422 || errs[c.field] == nil {
				t.Errorf("%v: %d %s, want 422 naming %s", c.parts, resp.StatusCode, resp.Body, c.field)
			}
		}
		if resp := do(e.user, "DELETE", base+"/welcome", nil); resp.StatusCode != 200 {
			t.Errorf("delete: %d", resp.StatusCode)
		}
		if resp := do(e.user, "GET", base+"/welcome", nil); resp.StatusCode != 404 {
			t.Errorf("after delete: %d", resp.StatusCode)
		}
	})
}

// TestBatchSend: 1,000 recipients with their own variables become 1,000
// messages, each with its own Message-ID and log chain, each with its own
// values at the sink; a batch where one recipient cannot be rendered
// queues nothing.
func TestBatchSend(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		e := startSend(t, d, false, nil)
		resp := e.send(t, batchParts(1000, nil), nil)
		if resp.StatusCode != 202 {
			t.Fatalf("batch: %d %s", resp.StatusCode, resp.Body)
		}
		ids := resp.JSON["data"].(map[string]any)["message_ids"].([]any)
		seen := map[any]bool{}
		for _, id := range ids {
			seen[id] = true
		}
		if len(ids) != 1000 || len(seen) != 1000 {
			t.Fatalf("message ids: %d, %d distinct", len(ids), len(seen))
		}
		msgs, err := e.sink.WaitForMessages(ctxTimeout(t, 120*time.Second), 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			var i int
			if len(m.To) != 1 {
				t.Fatalf("one message went to %v", m.To)
			}
			if _, err := fmt.Sscanf(m.To[0], "u%04d@rcpt.example.net", &i); err != nil {
				t.Fatalf("recipient %q", m.To[0])
			}
			got := readReceived(t, m.Data)
			if want := fmt.Sprintf("Code C-%04d for User %d (spring)", i, i); got.text != want {
				t.Errorf("%s got text %q, want %q", m.To[0], got.text, want)
			}
			if want := fmt.Sprintf("Your code, User %d", i); subjectOf(t, m.Data) != want {
				t.Errorf("%s got subject %q", m.To[0], subjectOf(t, m.Data))
			}
			if to := readReceivedHeader(t, m, "To"); !strings.Contains(to, m.To[0]) || strings.Contains(to, ",") {
				t.Errorf("%s: To header %q", m.To[0], to)
			}
		}
		if types := e.chain(t, "u0007@rcpt.example.net", event.Delivered); strings.Join(types, ",") != "queued,send,delivered" {
			t.Errorf("one recipient's chain: %v", types)
		}
		if len(e.sink.Messages()) != 1000 {
			t.Errorf("%d messages at the sink, want 1000", len(e.sink.Messages()))
		}

		// All or nothing: one recipient's text renders empty. (First every
		// outcome is recorded: the sink has them a moment before.)
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			pg, err := e.App.Events.List(context.Background(), event.Filter{DomainID: e.dom.ID, Type: event.Delivered, Limit: 1})
			if err == nil && pg.Total == 1000 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("delivered entries recorded: %d (%v), want 1000", pg.Total, err)
			}
		}
		before, err := e.App.Events.List(context.Background(), event.Filter{DomainID: e.dom.ID, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		bad := batchParts(300, map[string]map[string]any{"u0150@rcpt.example.net": {"name": ""}})
		for i := range bad {
			if bad[i].name == "text" {
				bad[i].value = "{{name}}"
			}
		}
		resp = e.send(t, bad, nil)
		if errs, _ := resp.JSON["errors"].(map[string]any); resp.StatusCode != 422 || errs["recipient_variables.u0150@rcpt.example.net"] == nil {
			t.Fatalf("a batch with one bad recipient: %d %s", resp.StatusCode, resp.Body)
		}
		after, _ := e.App.Events.List(context.Background(), event.Filter{DomainID: e.dom.ID, Limit: 1})
		if after.Total != before.Total {
			t.Errorf("log entries %d → %d after a refused batch", before.Total, after.Total)
		}
		for _, c := range []struct {
			parts []part
			field string
		}{
			{batchParts(2, map[string]map[string]any{"stranger@rcpt.example.net": {}}), "recipient_variables"},
			{append(batchParts(2, nil), part{name: "cc", value: "c@rcpt.example.net"}), "recipient_variables"},
			{append(batchParts(1, nil)[:5], part{name: "to", value: "x@rcpt.example.net"}, part{name: "recipient_variables", value: "[]"}), "recipient_variables"},
		} {
			resp := e.send(t, c.parts, nil)
			if errs, _ := resp.JSON["errors"].(map[string]any); resp.StatusCode != 422 || errs[c.field] == nil {
				t.Errorf("%d %s, want 422 naming %s", resp.StatusCode, resp.Body, c.field)
			}
		}
	})
}

func batchParts(n int, extra map[string]map[string]any) []part {
	ps := []part{{name: "from", value: "orders@shop.example.com"}, {name: "subject", value: "Your code, {{name}}"},
		{name: "text", value: "Code {{code}} for {{name}} ({{campaign}})"}, {name: "html", value: "<p>Code <b>{{code}}</b></p>"},
		{name: "variables", value: `{"campaign": "spring"}`}}
	vars := map[string]map[string]any{}
	for i := 0; i < n; i++ {
		addr := fmt.Sprintf("u%04d@rcpt.example.net", i)
		ps = append(ps, part{name: "to", value: addr})
		vars[addr] = map[string]any{"name": fmt.Sprintf("User %d", i), "code": fmt.Sprintf("C-%04d", i)}
	}
	for k, v := range extra {
		vars[k] = v
	}
	return append(ps, part{name: "recipient_variables", value: mustJSON(vars)})
}
