package app_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/postline/postline/internal/store"
)

// TestMailgunSDKRoutes: mailgun.js's mg.routes against Postline, as an
// application with a Mailgun driver manages its routes: create (action
// repeated), list (skip, limit), get, update (the fields given), match an
// address, destroy; bad input and another account's route come back as
// the SDK's errors.
func TestMailgunSDKRoutes(t *testing.T) {
	t.Parallel()
	e := startSend(t, store.SQLite, false, nil)
	bob := e.NewUser("bob")
	bobRes := mailgunSDK(t, e, bob.Key, []map[string]any{
		{"call": "routes.create", "data": map[string]any{"expression": `match_recipient(".*@bob.example.org")`, "action": []string{"stop()"}}},
	})
	var bobs struct{ ID string }
	if !bobRes[0].OK || json.Unmarshal(bobRes[0].Result, &bobs) != nil || bobs.ID == "" {
		t.Fatalf("bob's route: %+v", bobRes[0])
	}

	res := mailgunSDK(t, e, e.user.Key, []map[string]any{
		{"call": "routes.create", "data": map[string]any{"priority": 1, "description": "Tickets",
			"expression": `match_recipient("^ticket-(?P<n>\d+)@shop\.example\.com$")`,
			"action":     []string{`forward("https://desk.example/in?ticket=\g<n>")`, `store(notify="https://desk.example/stored")`, "stop()"}}},
		{"call": "routes.create", "data": map[string]any{"priority": 9, "description": "Everything else",
			"expression": "catch_all()", "action": []string{"store()"}}},
		{"call": "routes.list", "query": map[string]any{"limit": 10}},
		{"call": "routes.list", "query": map[string]any{"skip": 1, "limit": 1}},
		{"call": "routes.create", "data": map[string]any{"expression": `match_recipient("a(?=b)")`, "action": []string{"stop()"}}},
		{"call": "routes.create", "data": map[string]any{"expression": "catch_all()", "action": []string{"stop()", `forward("ftp://x.example/")`}}},
		{"call": "routes.get", "id": bobs.ID},
		{"call": "routes.destroy", "id": bobs.ID},
		{"call": "routes.matchAddress", "address": "ticket-42@shop.example.com"},
		{"call": "routes.matchAddress", "address": "hello@shop.example.com"},
	})
	type route struct {
		ID          string   `json:"id"`
		Priority    int      `json:"priority"`
		Description string   `json:"description"`
		Expression  string   `json:"expression"`
		Actions     []string `json:"actions"`
		CreatedAt   string   `json:"created_at"`
		Message     string   `json:"message"`
	}
	one := func(i int) route {
		t.Helper()
		var r route
		if !res[i].OK || json.Unmarshal(res[i].Result, &r) != nil {
			t.Fatalf("step %d: %d %s %s", i, res[i].Status, res[i].Message, res[i].Result)
		}
		return r
	}
	list := func(i int) []route {
		t.Helper()
		var rs []route
		if !res[i].OK || json.Unmarshal(res[i].Result, &rs) != nil {
			t.Fatalf("step %d: %d %s %s", i, res[i].Status, res[i].Message, res[i].Result)
		}
		return rs
	}
	tickets, rest := one(0), one(1)
	if tickets.Priority != 1 || tickets.Description != "Tickets" || len(tickets.Actions) != 3 || tickets.Actions[2] != "stop()" ||
		!strings.HasSuffix(tickets.CreatedAt, " GMT") || len(tickets.ID) != 24 {
		t.Errorf("routes.create: %+v", tickets)
	}
	if l := list(2); len(l) != 2 || l[0].ID != tickets.ID || l[1].ID != rest.ID {
		t.Errorf("routes.list: %+v; want the tickets route, then the catch-all", l)
	}
	if l := list(3); len(l) != 1 || l[0].ID != rest.ID {
		t.Errorf("routes.list skip 1 limit 1: %+v", l)
	}
	if res[4].OK || res[4].Status != 400 || !strings.Contains(res[4].Message, "expression: match_recipient: lookahead") {
		t.Errorf("a lookahead: %+v", res[4])
	}
	if res[5].OK || res[5].Status != 400 || !strings.Contains(res[5].Message, "action[1]: forward: a forward destination is an absolute http or https URL") {
		t.Errorf("an ftp forward: %+v", res[5])
	}
	for _, i := range []int{6, 7} {
		if res[i].OK || res[i].Status != 404 {
			t.Errorf("step %d, bob's route: %+v; want 404", i, res[i])
		}
	}
	if m := one(8); m.ID != tickets.ID {
		t.Errorf("matchAddress ticket-42: %+v", m)
	}
	if m := one(9); m.ID != rest.ID {
		t.Errorf("matchAddress hello: %+v; want the catch-all", m)
	}

	// mailgun.js leaves falsy values out of its forms: priority 0 goes
	// as the string "0".
	res = mailgunSDK(t, e, e.user.Key, []map[string]any{
		{"call": "routes.update", "id": tickets.ID, "data": map[string]any{"priority": "0", "action": []string{`forward("desk@help.example.com")`}}},
		{"call": "routes.get", "id": tickets.ID},
		{"call": "routes.destroy", "id": rest.ID},
		{"call": "routes.list"},
		{"call": "routes.get", "id": rest.ID},
	})
	if u := one(0); u.Message != "Route has been updated" || u.Priority != 0 || u.Description != "Tickets" ||
		fmt.Sprint(u.Actions) != `[forward("desk@help.example.com")]` || u.Expression != tickets.Expression {
		t.Errorf("routes.update: %+v", u)
	}
	if g := one(1); g.Priority != 0 || len(g.Actions) != 1 || g.CreatedAt != tickets.CreatedAt {
		t.Errorf("routes.get after the update: %+v", g)
	}
	var del struct{ ID, Message string }
	if !res[2].OK || json.Unmarshal(res[2].Result, &del) != nil || del.ID != rest.ID || del.Message != "Route has been deleted" {
		t.Errorf("routes.destroy: %+v", res[2])
	}
	if l := list(3); len(l) != 1 || l[0].ID != tickets.ID {
		t.Errorf("routes.list after destroy: %+v", l)
	}
	if res[4].OK || res[4].Status != 404 {
		t.Errorf("routes.get of the destroyed route: %+v", res[4])
	}
	// Bob's route is untouched by Alice's attempts.
	if got, err := e.App.Routes.Get(t.Context(), bob.ID, bobs.ID); err != nil || got.Expression != `match_recipient(".*@bob.example.org")` {
		t.Errorf("bob's route: %+v, %v", got, err)
	}
}
