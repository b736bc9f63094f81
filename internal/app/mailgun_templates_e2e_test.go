package app_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/store"
)

// TestMailgunSDKTemplates: mg.domains.domainTemplates of the official SDK
// creates a template, pages the list, adds versions, makes one active,
// changes and deletes versions; sends with template and t:version render
// the version asked for; another account's domain is a 404 and bad input
// a 400.
func TestMailgunSDKTemplates(t *testing.T) {
	t.Parallel()
	e := startSend(t, store.SQLite, false, nil)
	bob := e.NewUser("bob")
	e.NewDomain(bob, "bob.example.org")
	const d = "shop.example.com"
	steps := []map[string]any{
		{"call": "templates.create", "domain": d, "data": map[string]any{"name": "welcome", "description": "Welcome mail",
			"template": "<p>Hi {{name}}</p>", "comment": "first", "headers": `{"Subject": "Welcome {{name}}"}`}},
		{"call": "templates.create", "domain": d, "data": map[string]any{"name": "alpha", "description": "a", "template": "<b>A</b>"}},
		{"call": "templates.create", "domain": d, "data": map[string]any{"name": "zeta", "description": "z", "template": "<b>Z</b>"}},
		{"call": "templates.list", "domain": d, "query": map[string]any{"limit": 2}},
		{"call": "templates.createVersion", "domain": d, "name": "welcome", "data": map[string]any{"template": "<p>Hello again {{name}}</p>",
			"tag": "v2", "comment": "second"}},
		{"call": "templates.get", "domain": d, "name": "welcome", "query": map[string]any{"active": "yes"}},
		{"call": "templates.updateVersion", "domain": d, "name": "welcome", "tag": "v2", "data": map[string]any{"active": "yes",
			"template": "<p>Hello again, {{name}}!</p>"}},
		{"call": "templates.get", "domain": d, "name": "welcome", "query": map[string]any{"active": "yes"}},
		{"call": "templates.listVersions", "domain": d, "name": "welcome"},
		{"call": "templates.getVersion", "domain": d, "name": "welcome", "tag": "initial"},
		{"call": "templates.update", "domain": d, "name": "welcome", "data": map[string]any{"description": "Changed"}},
		// 11: sends with the active version and with t:version initial.
		{"call": "messages.create", "domain": d, "data": map[string]any{"from": "news@shop.example.com", "to": "active@rcpt.example.net",
			"subject": "Hey {{name}}", "template": "welcome", "t:variables": `{"name": "Ann"}`}},
		{"call": "messages.create", "domain": d, "data": map[string]any{"from": "news@shop.example.com", "to": "initial@rcpt.example.net",
			"template": "welcome", "t:version": "initial", "t:variables": `{"name": "Ben"}`}},
		// 13: bad input and another account's domain.
		{"call": "templates.get", "domain": "bob.example.org", "name": "welcome"},
		{"call": "templates.get", "domain": d, "name": "nosuch"},
		{"call": "templates.create", "domain": d, "data": map[string]any{"name": "bad name!", "description": "x", "template": "x"}},
		{"call": "templates.create", "domain": d, "data": map[string]any{"name": "welcome", "description": "x", "template": "x"}},
		{"call": "templates.createVersion", "domain": d, "name": "welcome", "data": map[string]any{"template": "<p>{{#if}}</p>", "tag": "broken"}},
		{"call": "templates.destroyVersion", "domain": d, "name": "welcome", "tag": "v2"},
		{"call": "templates.create", "domain": d, "data": map[string]any{"name": "goer", "description": "x", "template": "x", "engine": "go"}},
		// 20: deleting a version and a template.
		{"call": "templates.destroyVersion", "domain": d, "name": "welcome", "tag": "initial"},
		{"call": "templates.destroy", "domain": d, "name": "alpha"},
		{"call": "templates.list", "domain": d},
	}
	res := mailgunSDK(t, e, e.user.Key, steps)
	for i, r := range res[:13] {
		if !r.OK {
			t.Fatalf("step %d %v: %+v", i, steps[i]["call"], r)
		}
	}
	var created struct {
		Name, Description string
		Version           struct {
			Tag, Template string
			Active        bool
			Headers       map[string]string
		}
	}
	json.Unmarshal(res[0].Result, &created)
	if created.Name != "welcome" || created.Description != "Welcome mail" || created.Version.Tag != "initial" ||
		!created.Version.Active || created.Version.Headers["Subject"] != "Welcome {{name}}" {
		t.Errorf("create: %s", res[0].Result)
	}
	var page struct {
		Items []struct{ Name string }
		Pages map[string]struct{ Page, IteratorPosition string }
	}
	json.Unmarshal(res[3].Result, &page)
	if len(page.Items) != 2 || page.Items[0].Name != "alpha" || page.Items[1].Name != "welcome" || page.Pages["next"].IteratorPosition != "welcome" {
		t.Errorf("list limit 2: %s", res[3].Result)
	}
	activeTag := func(i int) (string, string) {
		var g struct {
			Version struct{ Tag, Template string }
		}
		json.Unmarshal(res[i].Result, &g)
		return g.Version.Tag, g.Version.Template
	}
	if tag, _ := activeTag(5); tag != "initial" {
		t.Errorf("a version added without active=yes became active: %s", res[5].Result)
	}
	if tag, tpl := activeTag(7); tag != "v2" || tpl != "<p>Hello again, {{name}}!</p>" {
		t.Errorf("after updateVersion active=yes: %s", res[7].Result)
	}
	var versions struct {
		Template struct {
			Versions []struct {
				Tag    string
				Active bool
			}
		}
	}
	json.Unmarshal(res[8].Result, &versions)
	if v := versions.Template.Versions; len(v) != 2 || v[0].Tag != "initial" || v[0].Active || v[1].Tag != "v2" || !v[1].Active {
		t.Errorf("listVersions: %s", res[8].Result)
	}
	if tag, tpl := activeTag(9); tag != "initial" || tpl != "<p>Hi {{name}}</p>" {
		t.Errorf("getVersion initial: %s", res[9].Result)
	}
	for i, want := range map[int]int{13: 404, 14: 404, 15: 400, 16: 409, 17: 400, 18: 400, 19: 400} {
		if res[i].OK || res[i].Status != want {
			t.Errorf("step %d %v: %+v, want %d", i, steps[i], res[i], want)
		}
	}
	if !res[20].OK || !res[21].OK {
		t.Errorf("destroyVersion initial / destroy alpha: %+v %+v", res[20], res[21])
	}
	var after struct{ Items []struct{ Name string } }
	json.Unmarshal(res[22].Result, &after)
	if len(after.Items) != 2 || after.Items[0].Name != "welcome" || after.Items[1].Name != "zeta" {
		t.Errorf("list after deletes: %s", res[22].Result)
	}

	msgs, err := e.sink.WaitForMessages(ctxTimeout(t, 60*time.Second), 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		got := readReceived(t, m.Data)
		switch m.To[0] {
		case "active@rcpt.example.net":
			if subjectOf(t, m.Data) != "Hey Ann" || got.html != "<p>Hello again, Ann!</p>" || !strings.Contains(got.text, "Hello again, Ann!") {
				t.Errorf("active version send: subject %q html %q text %q", subjectOf(t, m.Data), got.html, got.text)
			}
		case "initial@rcpt.example.net":
			if subjectOf(t, m.Data) != "Welcome Ben" || got.html != "<p>Hi Ben</p>" {
				t.Errorf("t:version initial send: subject %q html %q", subjectOf(t, m.Data), got.html)
			}
		}
	}
}
