package app_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/inboundroute"
	"github.com/postline/postline/internal/store"
)

var routeID = regexp.MustCompile(`^[0-9a-f]{24}$`)

// errorsOf is the errors object of a 422 (field → problems).
func errorsOf(resp *apitest.Response) map[string]any {
	errs, _ := resp.JSON["errors"].(map[string]any)
	return errs
}

// TestInboundRoutesAPI: /api/routes creates, lists (priority, then
// creation; paged), reads, changes (the fields given) and deletes the
// account's routes; bad input is 422 naming the field; another account's
// route is the same 404 as a missing one for every method; the scope and
// the domain limits of keys hold; the account's bound holds.
func TestInboundRoutesAPI(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		e := apitest.Start(t, d, nil)
		alice, bob := e.NewUser("alice"), e.NewUser("bob")
		e.NewDomain(alice, "alice.example")
		do := func(u apitest.User, method, path string, body any) *apitest.Response {
			t.Helper()
			return e.Do(apitest.Request{Method: method, Path: path, Auth: u.Auth(), Body: body})
		}
		create := func(u apitest.User, body map[string]any) map[string]any {
			t.Helper()
			resp := do(u, "POST", "/api/routes", body)
			if resp.StatusCode != 201 {
				t.Fatalf("POST /api/routes %v: %d %s", body, resp.StatusCode, resp.Body)
			}
			return resp.JSON["data"].(map[string]any)
		}

		support := create(alice, map[string]any{"priority": 5, "description": "Support desk",
			"expression": `match_recipient("^support-(?P<ticket>\d+)@alice\.example$")`,
			"actions":    []string{`forward("https://desk.alice.example/in?ticket=\g<ticket>")`, `store(notify="https://desk.alice.example/stored")`, "stop()"}})
		if !routeID.MatchString(support["id"].(string)) || support["priority"] != 5.0 || support["description"] != "Support desk" ||
			len(support["actions"].([]any)) != 3 || support["created_at"] == "" {
			t.Fatalf("created route: %v", support)
		}
		catchAll := create(alice, map[string]any{"expression": "catch_all()", "actions": []string{"store()"}, "priority": 10})
		first := create(alice, map[string]any{"expression": `match_header("Subject", ".*urgent")`, "actions": []string{`forward("pager@ops.example")`}})
		if first["priority"] != 0.0 || first["description"] != "" || first["format"] != "mailgun" {
			t.Errorf("defaults: %v; want priority 0, no description and the mailgun format", first)
		}
		bobs := create(bob, map[string]any{"expression": `match_recipient(".*@bob\.example")`, "actions": []string{"stop()"}})

		list := do(alice, "GET", "/api/routes", nil)
		ids := func(resp *apitest.Response) []string {
			var out []string
			for _, r := range resp.JSON["data"].([]any) {
				out = append(out, r.(map[string]any)["id"].(string))
			}
			return out
		}
		if got := ids(list); list.StatusCode != 200 || list.JSON["count"] != 3.0 ||
			fmt.Sprint(got) != fmt.Sprint([]string{first["id"].(string), support["id"].(string), catchAll["id"].(string)}) {
			t.Fatalf("list: %d %s; want the priority-0 route, the support route, the catch-all", list.StatusCode, list.Body)
		}
		if page := do(alice, "GET", "/api/routes?offset=1&limit=1", nil); fmt.Sprint(ids(page)) != fmt.Sprint([]string{support["id"].(string)}) ||
			page.JSON["count"] != 3.0 || page.JSON["offset"] != 1.0 || page.JSON["limit"] != 1.0 {
			t.Errorf("offset 1, limit 1: %s", page.Body)
		}
		for _, q := range []string{"limit=0", "limit=1001", "offset=-1", "offset=x"} {
			resp := do(alice, "GET", "/api/routes?"+q, nil)
			field, _, _ := strings.Cut(q, "=")
			if resp.StatusCode != 422 || errorsOf(resp)[field] == nil {
				t.Errorf("GET /api/routes?%s: %d %s; want 422 naming %s", q, resp.StatusCode, resp.Body, field)
			}
		}

		path := "/api/routes/" + support["id"].(string)
		if got := do(alice, "GET", path, nil); got.StatusCode != 200 || got.JSON["data"].(map[string]any)["expression"] != support["expression"] {
			t.Errorf("GET one: %d %s", got.StatusCode, got.Body)
		}
		// PUT replaces the fields given and keeps the others.
		upd := do(alice, "PUT", path, map[string]any{"priority": 1})
		if data, _ := upd.JSON["data"].(map[string]any); upd.StatusCode != 200 || data["priority"] != 1.0 || data["description"] != "Support desk" ||
			data["expression"] != support["expression"] || len(data["actions"].([]any)) != 3 || data["created_at"] != support["created_at"] {
			t.Errorf("PUT priority: %d %s", upd.StatusCode, upd.Body)
		}
		upd = do(alice, "PUT", path, map[string]any{"format": "json"})
		if data, _ := upd.JSON["data"].(map[string]any); upd.StatusCode != 200 || data["format"] != "json" || data["priority"] != 1.0 {
			t.Errorf("PUT format: %d %s", upd.StatusCode, upd.Body)
		}
		upd = do(alice, "PUT", path, map[string]any{"description": "", "actions": []string{`forward("desk@alice.example")`}})
		if data, _ := upd.JSON["data"].(map[string]any); upd.StatusCode != 200 || data["description"] != "" || len(data["actions"].([]any)) != 1 || data["priority"] != 1.0 {
			t.Errorf("PUT description and actions: %d %s", upd.StatusCode, upd.Body)
		}

		// Bad input names its field; nothing is stored.
		for _, c := range []struct {
			method, path string
			body         any
			field, want  string
		}{
			{"POST", "/api/routes", map[string]any{"actions": []string{"stop()"}}, "expression", "required"},
			{"POST", "/api/routes", map[string]any{"expression": "catch_all()"}, "actions", "required"},
			{"POST", "/api/routes", map[string]any{"expression": "catch_all()", "actions": []string{}}, "actions", "At least one action"},
			{"POST", "/api/routes", map[string]any{"expression": `match_recipient("x(?=y)")`, "actions": []string{"stop()"}}, "expression", "lookahead"},
			{"POST", "/api/routes", map[string]any{"expression": `match_recipient("(a)\1")`, "actions": []string{"stop()"}}, "expression", "backreference"},
			{"POST", "/api/routes", map[string]any{"expression": `match_recipient("a") or catch_all()`, "actions": []string{"stop()"}}, "expression", `"or" is not supported`},
			{"POST", "/api/routes", map[string]any{"expression": "catch_all()", "actions": []string{"stop()", `forward("ftp://x.example/")`}}, "actions[1]", "http or https URL"},
			{"POST", "/api/routes", map[string]any{"expression": `match_recipient("(.*)@alice\.example")`, "actions": []string{`forward("https://\1.example/")`}}, "actions[0]", "scheme or host"},
			{"POST", "/api/routes", map[string]any{"expression": "catch_all()", "actions": []string{"stop()"}, "priority": -1}, "priority", "from 0 to"},
			{"POST", "/api/routes", map[string]any{"expression": "catch_all()", "actions": []string{"stop()"}, "format": "xml"}, "format", "mailgun, json, raw"},
			{"POST", "/api/routes", map[string]any{"expression": "catch_all()", "actions": []string{"stop()"}, "priority": "high"}, "priority", "number"},
			{"POST", "/api/routes", map[string]any{"expression": "catch_all()", "actions": []string{"stop()"}, "description": strings.Repeat("d", 1001)}, "description", "at most 1000"},
			{"POST", "/api/routes", map[string]any{"expression": strings.Repeat(" ", 4001) + "catch_all()", "actions": []string{"stop()"}}, "expression", "at most 4000 bytes"},
			{"POST", "/api/routes", map[string]any{"expression": "catch_all()", "actions": strings.Split(strings.Repeat("stop(),", 11)[:6*11+10], ",")}, "actions", "at most 10 actions"},
			{"PUT", path, map[string]any{"expression": `match_header("Subject")`}, "expression", "takes a header name and a pattern"},
			{"PUT", path, map[string]any{"actions": []string{"stop()", "drop()"}}, "actions[1]", `unknown action "drop"`},
			{"PUT", path, "[]", "body", "JSON object"},
		} {
			resp := do(alice, c.method, c.path, c.body)
			problems, _ := errorsOf(resp)[c.field].([]any)
			if resp.StatusCode != 422 || len(problems) == 0 || !strings.Contains(fmt.Sprint(problems), c.want) {
				t.Errorf("%s %s %v: %d %s; want 422 naming %s with %q", c.method, c.path, c.body, resp.StatusCode, resp.Body, c.field, c.want)
			}
		}
		if list := do(alice, "GET", "/api/routes", nil); list.JSON["count"] != 3.0 {
			t.Errorf("refused input was stored: %s", list.Body)
		}

		// Another account's route answers as a missing one, for every
		// method, and stays as it was.
		bobPath := "/api/routes/" + bobs["id"].(string)
		for _, p := range []string{bobPath, "/api/routes/ffffffffffffffffffffffff", "/api/routes/not-an-id"} {
			for _, m := range []string{"GET", "PUT", "DELETE"} {
				var body any
				if m == "PUT" {
					body = map[string]any{"priority": 9}
				}
				resp := do(alice, m, p, body)
				if resp.StatusCode != 404 || resp.JSON["success"] != false || resp.JSON["message"] != "route not found" {
					t.Errorf("alice %s %s: %d %s; want the 404 of a missing route", m, p, resp.StatusCode, resp.Body)
				}
			}
		}
		if got := do(bob, "GET", bobPath, nil); got.StatusCode != 200 || got.JSON["data"].(map[string]any)["priority"] != 0.0 {
			t.Errorf("bob's route after alice's attempts: %d %s", got.StatusCode, got.Body)
		}
		if l := do(bob, "GET", "/api/routes", nil); l.JSON["count"] != 1.0 {
			t.Errorf("bob lists %s; want his one route", l.Body)
		}

		// Scope domains; a key limited to domains is refused (routes
		// apply to every domain of the account).
		ctx := context.Background()
		sendOnly, _, err := e.App.Accounts.CreateKeyWith(ctx, "alice", account.KeyOptions{Name: "send", Scopes: []string{account.ScopeSend}})
		if err != nil {
			t.Fatal(err)
		}
		oneDomain, _, err := e.App.Accounts.CreateKeyWith(ctx, "alice", account.KeyOptions{Name: "dom", Domains: []string{"alice.example"}})
		if err != nil {
			t.Fatal(err)
		}
		for key, want := range map[string]string{sendOnly: `"domains" scope`, oneDomain: "not limited to domains"} {
			u := apitest.User{Login: "alice", Key: key}
			for _, m := range []string{"GET", "POST"} {
				resp := do(u, m, "/api/routes", map[string]any{"expression": "catch_all()", "actions": []string{"stop()"}})
				if resp.StatusCode != 403 || !strings.Contains(resp.JSON["message"].(string), want) {
					t.Errorf("%s /api/routes with a limited key: %d %s; want 403 with %q", m, resp.StatusCode, resp.Body, want)
				}
			}
		}

		// Delete: gone, and a second delete is a 404.
		if resp := do(alice, "DELETE", path, nil); resp.StatusCode != 200 || resp.JSON["success"] != true {
			t.Fatalf("DELETE: %d %s", resp.StatusCode, resp.Body)
		}
		if resp := do(alice, "GET", path, nil); resp.StatusCode != 404 {
			t.Errorf("GET after DELETE: %d", resp.StatusCode)
		}
		if resp := do(alice, "DELETE", path, nil); resp.StatusCode != 404 {
			t.Errorf("second DELETE: %d", resp.StatusCode)
		}

		// The account's bound: the route past it is a 422 naming it.
		for i := 0; i < inboundroute.MaxPerAccount-1; i++ {
			expr := fmt.Sprintf(`match_recipient("r%d@bob\.example")`, i)
			if _, err := e.App.Routes.Create(ctx, bob.ID, inboundroute.Change{Expression: &expr, Actions: []string{"stop()"}}); err != nil {
				t.Fatal(err)
			}
		}
		resp := do(bob, "POST", "/api/routes", map[string]any{"expression": "catch_all()", "actions": []string{"stop()"}})
		if resp.StatusCode != 422 || !strings.Contains(resp.JSON["message"].(string), "at most 1000 routes") {
			t.Errorf("route 1001: %d %s; want 422 naming the bound", resp.StatusCode, resp.Body)
		}
		if l := do(bob, "GET", "/api/routes?limit=1000&offset=999", nil); l.JSON["count"] != 1000.0 || len(l.JSON["data"].([]any)) != 1 {
			t.Errorf("bob's last page: count %v, %d routes", l.JSON["count"], len(l.JSON["data"].([]any)))
		}
	})
}

// TestMailgunRoutes: /v3/routes in Mailgun's shapes (form in, total_count
// and items out, RFC 2822 created_at, skip and limit), GET and DELETE of
// an id served through the patterns they overlap (an id that is the name
// of a domain list, events or templates, is a route id, not a domain's
// list), /v3/routes/match, 400s naming Mailgun's parameters, and another
// account's route as a 404.
func TestMailgunRoutes(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		e := apitest.Start(t, d, nil)
		alice, bob := e.NewUser("alice"), e.NewUser("bob")
		e.NewDomain(alice, "alice.example")
		do := func(u apitest.User, method, path string, form url.Values) *apitest.Response {
			t.Helper()
			r := apitest.Request{Method: method, Path: path, Auth: apitest.User{Login: "api", Key: u.Key}.Auth()}
			if form != nil {
				r.Body, r.Header = form.Encode(), http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
			}
			return e.Do(r)
		}
		resp := do(alice, "POST", "/v3/routes", url.Values{"priority": {"2"}, "description": {"Sample route"},
			"expression": {`match_recipient(".*@alice.example")`}, "action": {`forward("http://myhost.example/messages/")`, "stop()"}})
		route, _ := resp.JSON["route"].(map[string]any)
		if resp.StatusCode != 200 || resp.JSON["message"] != "Route has been created" || !routeID.MatchString(fmt.Sprint(route["id"])) ||
			route["priority"] != 2.0 || fmt.Sprint(route["actions"]) != `[forward("http://myhost.example/messages/") stop()]` {
			t.Fatalf("create: %d %s", resp.StatusCode, resp.Body)
		}
		id := route["id"].(string)
		if !regexp.MustCompile(`^[A-Z][a-z]{2}, \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d GMT$`).MatchString(route["created_at"].(string)) {
			t.Errorf("created_at %q is not Mailgun's RFC 2822", route["created_at"])
		}
		other := do(alice, "POST", "/v3/routes", url.Values{"expression": {"catch_all()"}, "action": {"store()"}}).JSON["route"].(map[string]any)
		bobs := do(bob, "POST", "/v3/routes", url.Values{"expression": {`match_recipient("b@bob.example")`}, "action": {"stop()"}}).JSON["route"].(map[string]any)

		list := do(alice, "GET", "/v3/routes", nil)
		items, _ := list.JSON["items"].([]any)
		if list.StatusCode != 200 || list.JSON["total_count"] != 2.0 || len(items) != 2 || items[0].(map[string]any)["id"] != other["id"] {
			t.Fatalf("list: %d %s; want the priority-0 catch-all first", list.StatusCode, list.Body)
		}
		if page := do(alice, "GET", "/v3/routes?skip=1&limit=1", nil); len(page.JSON["items"].([]any)) != 1 ||
			page.JSON["items"].([]any)[0].(map[string]any)["id"] != id || page.JSON["total_count"] != 2.0 {
			t.Errorf("skip 1, limit 1: %s", page.Body)
		}
		if resp := do(alice, "GET", "/v3/routes?limit=5000", nil); resp.StatusCode != 400 || !strings.Contains(resp.JSON["message"].(string), "limit") {
			t.Errorf("limit 5000: %d %s", resp.StatusCode, resp.Body)
		}

		if got := do(alice, "GET", "/v3/routes/"+id, nil); got.StatusCode != 200 || got.JSON["route"].(map[string]any)["description"] != "Sample route" {
			t.Errorf("get: %d %s", got.StatusCode, got.Body)
		}
		// The ids that are names of a domain's lists are route ids here.
		for _, m := range []string{"GET", "DELETE"} {
			for _, seg := range []string{"events", "templates", "bounces", "ffffffffffffffffffffffff"} {
				if resp := do(alice, m, "/v3/routes/"+seg, nil); resp.StatusCode != 404 || resp.JSON["message"] != "route not found" {
					t.Errorf("%s /v3/routes/%s: %d %s; want the route's 404", m, seg, resp.StatusCode, resp.Body)
				}
			}
		}
		upd := do(alice, "PUT", "/v3/routes/"+id, url.Values{"id": {id}, "description": {"Changed"}, "action": {`forward("ops@alice.example")`}})
		if upd.StatusCode != 200 || upd.JSON["message"] != "Route has been updated" || upd.JSON["description"] != "Changed" ||
			upd.JSON["priority"] != 2.0 || fmt.Sprint(upd.JSON["actions"]) != `[forward("ops@alice.example")]` ||
			upd.JSON["route"].(map[string]any)["description"] != "Changed" {
			t.Errorf("update: %d %s", upd.StatusCode, upd.Body)
		}

		// Bad input: 400 naming Mailgun's parameters.
		for _, c := range []struct {
			method, path string
			form         url.Values
			want         string
		}{
			{"POST", "/v3/routes", url.Values{"action": {"stop()"}}, "expression: The expression is required."},
			{"POST", "/v3/routes", url.Values{"expression": {"catch_all()"}}, "action: At least one action is required."},
			{"POST", "/v3/routes", url.Values{"expression": {"catch_all()"}, "action": {"stop()", "forward()"}}, "action[1]: forward takes one destination"},
			{"POST", "/v3/routes", url.Values{"expression": {`match_recipient("(?<=a)b")`}, "action": {"stop()"}}, "expression: match_recipient: lookbehind"},
			{"POST", "/v3/routes", url.Values{"expression": {"catch_all()"}, "action": {"stop()"}, "priority": {"first"}}, "priority: The priority must be an integer"},
			{"POST", "/v3/routes", url.Values{"expression": {"catch_all()"}, "action": {"stop()"}, "actions": {"stop()"}}, `actions: Unknown parameter "actions"`},
			{"PUT", "/v3/routes/" + id, url.Values{"id": {other["id"].(string)}}, "id: The id of the form must be the path's"},
			{"PUT", "/v3/routes/" + id, url.Values{"expression": {"catch_all() and catch_all()"}}, "expression: catch_all()"},
			{"GET", "/v3/routes/match", nil, "address: The address is required."},
		} {
			resp := do(alice, c.method, c.path, c.form)
			if resp.StatusCode != 400 || !strings.Contains(fmt.Sprint(resp.JSON["message"]), c.want) {
				t.Errorf("%s %s %v: %d %s; want 400 with %q", c.method, c.path, c.form, resp.StatusCode, resp.Body, c.want)
			}
		}

		// match: the first route whose recipient filters take the address,
		// else the catch-all.
		if m := do(alice, "GET", "/v3/routes/match?address=sales@alice.example", nil); m.StatusCode != 200 || m.JSON["route"].(map[string]any)["id"] != other["id"] {
			t.Errorf("match with the catch-all first: %d %s", m.StatusCode, m.Body)
		}
		do(alice, "DELETE", "/v3/routes/"+other["id"].(string), nil)
		do(alice, "PUT", "/v3/routes/"+id, url.Values{"expression": {`match_recipient("sales@alice\.example$")`}})
		if m := do(alice, "GET", "/v3/routes/match?address=Sales@Alice.example", nil); m.StatusCode != 200 || m.JSON["route"].(map[string]any)["id"] != id {
			t.Errorf("match: %d %s", m.StatusCode, m.Body)
		}
		if m := do(alice, "GET", "/v3/routes/match?address=nobody@alice.example", nil); m.StatusCode != 404 {
			t.Errorf("match of nothing: %d %s", m.StatusCode, m.Body)
		}

		// Bob's route is a 404 to Alice for every method; it stays.
		bobID := bobs["id"].(string)
		for _, m := range []string{"GET", "PUT", "DELETE"} {
			var form url.Values
			if m == "PUT" {
				form = url.Values{"priority": {"7"}}
			}
			if resp := do(alice, m, "/v3/routes/"+bobID, form); resp.StatusCode != 404 || resp.JSON["message"] != "route not found" {
				t.Errorf("alice %s bob's route: %d %s", m, resp.StatusCode, resp.Body)
			}
		}
		if got := do(bob, "GET", "/v3/routes/"+bobID, nil); got.StatusCode != 200 || got.JSON["route"].(map[string]any)["priority"] != 0.0 {
			t.Errorf("bob's route: %d %s", got.StatusCode, got.Body)
		}

		del := do(alice, "DELETE", "/v3/routes/"+id, nil)
		if del.StatusCode != 200 || del.JSON["message"] != "Route has been deleted" || del.JSON["id"] != id {
			t.Errorf("delete: %d %s", del.StatusCode, del.Body)
		}
		if l := do(alice, "GET", "/v3/routes", nil); l.JSON["total_count"] != 0.0 || len(l.JSON["items"].([]any)) != 0 {
			t.Errorf("after deleting both: %s", l.Body)
		}

		// The patterns the route ids hang under still serve their own.
		if resp := do(alice, "GET", "/v3/domains/alice.example", nil); resp.StatusCode != 200 {
			t.Errorf("GET /v3/domains/alice.example: %d %s", resp.StatusCode, resp.Body)
		}
		for _, p := range []string{"/v3/alice.example/bounces", "/v3/alice.example/events", "/v3/alice.example/templates"} {
			if resp := e.Do(apitest.Request{Method: "GET", Path: p, Auth: apitest.User{Login: "api", Key: alice.Key}.Auth()}); resp.StatusCode != 200 {
				t.Errorf("GET %s: %d %s", p, resp.StatusCode, resp.Body)
			}
		}
	})
}
