package app_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/store"
)

func TestSuppressionListsOverHTTP(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		env := apitest.Start(t, d, nil)
		alice, bob := env.NewUser("alice"), env.NewUser("bob")
		dom := env.NewDomain(alice, "alice.example")
		env.NewDomain(bob, "bob.example")
		ctx := context.Background()
		for i := 1; i <= 23; i++ {
			if _, err := env.App.Suppressions.AddUnsubscribe(ctx, dom.ID, fmt.Sprintf("user%02d@list.example", i), "unsubscribe:link"); err != nil {
				t.Fatal(err)
			}
		}
		env.App.Suppressions.AddBounce(ctx, dom.ID, "gone@x.example", "bounce:5.1.1")
		get := func(path string, u apitest.User) *apitest.Response {
			return env.Do(apitest.Request{Method: "GET", Path: path, Auth: u.Auth()})
		}

		resp := get("/api/domains/alice.example/suppressions", alice)
		if resp.StatusCode != 200 {
			t.Fatalf("default list: %d %s", resp.StatusCode, resp.Body)
		}
		checkPage(t, "default (unsubscribe, page 1, 10 per page)", resp, 10, map[string]any{"total": 23.0, "per_page": 10.0, "current_page": 1.0, "last_page": 3.0, "from": 1.0, "to": 10.0})
		if first := resp.JSON["data"].([]any)[0].(map[string]any); first["recipient"] != "user23@list.example" || first["type"] != "unsubscribe" {
			t.Errorf("first entry %v, want the newest (user23)", first)
		}
		if f := resp.JSON["filters"].(map[string]any); f["type"] != "unsubscribe" || f["search"] != nil {
			t.Errorf("filters = %v", f)
		}
		checkPage(t, "last page partial", get("/api/domains/alice.example/suppressions/unsubscribes?page=3", alice), 3,
			map[string]any{"total": 23.0, "current_page": 3.0, "last_page": 3.0, "from": 21.0, "to": 23.0})
		checkPage(t, "past the end", get("/api/domains/alice.example/suppressions?page=9&per_page=100", alice), 0,
			map[string]any{"total": 23.0, "last_page": 1.0, "from": nil, "to": nil})
		checkPage(t, "type bounce", get("/api/domains/alice.example/suppressions?type=bounce", alice), 1, map[string]any{"total": 1.0})
		checkPage(t, "empty whitelist", get("/api/domains/alice.example/suppressions?type=whitelist", alice), 0,
			map[string]any{"total": 0.0, "last_page": 1.0, "from": nil})
		resp = get("/api/domains/alice.example/suppressions?search=USER1&per_page=10", alice)
		checkPage(t, "search USER1", resp, 10, map[string]any{"total": 10.0})
		if f := resp.JSON["filters"].(map[string]any); f["search"] != "USER1" {
			t.Errorf("filters.search = %v", f["search"])
		}

		for _, c := range []struct{ query, field string }{
			{"type=spam", "type"}, {"per_page=5", "per_page"}, {"per_page=500", "per_page"}, {"page=0", "page"},
			{"page=abc", "page"}, {"per_page=1.5", "per_page"}, {"search=ab%00cd", "search"}, {"search=%00", "search"},
		} {
			resp := get("/api/domains/alice.example/suppressions?"+c.query, alice)
			errs, _ := resp.JSON["errors"].(map[string]any)
			if resp.StatusCode != 422 || resp.JSON["success"] != false || errs[c.field] == nil {
				t.Errorf("?%s: %d %s, want 422 naming %s", c.query, resp.StatusCode, resp.Body, c.field)
			}
		}
		if resp := get("/api/domains/alice.example/suppressions/unsubscribes?type=spam", alice); resp.StatusCode != 200 {
			t.Errorf("unsubscribes ignores type: %d %s", resp.StatusCode, resp.Body)
		}
		for _, path := range []string{"/api/domains/alice.example/suppressions", "/api/domains/alice.example/suppressions/unsubscribes"} {
			if resp := get(path, bob); resp.StatusCode != 404 || resp.JSON["message"] != "Domain not found or not owned by user" {
				t.Errorf("bob GET %s: %d %s, want 404", path, resp.StatusCode, resp.Body)
			}
		}
	})
}

func checkPage(t *testing.T, name string, resp *apitest.Response, n int, want map[string]any) {
	t.Helper()
	if resp.StatusCode != 200 {
		t.Errorf("%s: %d %s", name, resp.StatusCode, resp.Body)
		return
	}
	if got := len(resp.JSON["data"].([]any)); got != n {
		t.Errorf("%s: %d entries, want %d", name, got, n)
	}
	pg := resp.JSON["pagination"].(map[string]any)
	for k, v := range want {
		if pg[k] != v {
			t.Errorf("%s: pagination.%s = %v, want %v (%v)", name, k, pg[k], v, pg)
		}
	}
}

func TestWhitelistOverHTTP(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		env := apitest.Start(t, d, nil)
		alice, bob := env.NewUser("alice"), env.NewUser("bob")
		dom := env.NewDomain(alice, "alice.example")
		post := func(u apitest.User, body any) *apitest.Response {
			return env.Do(apitest.Request{Method: "POST", Path: "/api/domains/alice.example/suppressions/whitelist", Auth: u.Auth(), Body: body})
		}
		env.App.Suppressions.AddBounce(context.Background(), dom.ID, "vip@partner.example", "bounce:5.1.1")

		resp := post(alice, map[string]any{"recipient": "VIP@Partner.Example", "description": "our partner"})
		data, _ := resp.JSON["data"].(map[string]any)
		if resp.StatusCode != 201 || data["recipient"] != "vip@partner.example" || data["recipient_type"] != "email" ||
			data["type"] != "whitelist" || data["description"] != "our partner" || data["source"] != "api" {
			t.Fatalf("create: %d %s", resp.StatusCode, resp.Body)
		}
		v, _ := env.App.Suppressions.Check(context.Background(), dom.ID, "vip@partner.example")
		if v.Suppressed {
			t.Errorf("whitelisted after bounce is still suppressed: %+v", v)
		}
		again := post(alice, map[string]any{"recipient": "vip@partner.example"})
		if again.StatusCode != 200 || again.JSON["data"].(map[string]any)["id"] != data["id"] {
			t.Errorf("duplicate: %d %s, want 200 with the same entry", again.StatusCode, again.Body)
		}
		resp = post(alice, map[string]any{"recipient": "partner.example", "recipient_type": "domain"})
		if resp.StatusCode != 201 || resp.JSON["data"].(map[string]any)["recipient_type"] != "domain" {
			t.Errorf("domain whitelist: %d %s", resp.StatusCode, resp.Body)
		}
		for _, c := range []struct {
			body  any
			field string
		}{
			{map[string]any{}, "recipient"},
			{map[string]any{"recipient": "x@example.com", "description": "a\u0000b"}, "description"},
			{map[string]any{"recipient": ""}, "recipient"},
			{map[string]any{"recipient": 42}, "recipient"},
			{map[string]any{"recipient": "not an address@"}, "recipient"},
			{map[string]any{"recipient": "a@b.example", "recipient_type": "domain"}, "recipient_type"},
			{map[string]any{"recipient": "b.example", "recipient_type": "email"}, "recipient_type"},
			{map[string]any{"recipient": "b.example", "recipient_type": "phone"}, "recipient_type"},
			{map[string]any{"recipient": "b.example", "description": []int{1}}, "description"},
			{map[string]any{"recipient": "b.example", "description": string(make([]byte, 501))}, "description"},
			{"not json", "body"},
			{"[]", "body"},
		} {
			resp := post(alice, c.body)
			errs, _ := resp.JSON["errors"].(map[string]any)
			if resp.StatusCode != 422 || errs[c.field] == nil || resp.JSON["message"] != "Invalid request parameters" {
				t.Errorf("whitelist %v: %d %s, want 422 naming %s", c.body, resp.StatusCode, resp.Body, c.field)
			}
		}
		if resp := post(bob, map[string]any{"recipient": "x@y.example"}); resp.StatusCode != 404 {
			t.Errorf("bob whitelisting on alice's domain: %d %s", resp.StatusCode, resp.Body)
		}

		// Removing a wrong bounce: only through the owning domain.
		id := int(data["id"].(float64))
		del := func(u apitest.User, id string) *apitest.Response {
			return env.Do(apitest.Request{Method: "DELETE", Path: "/api/domains/alice.example/suppressions/" + id, Auth: u.Auth()})
		}
		if resp := del(bob, fmt.Sprint(id)); resp.StatusCode != 404 {
			t.Errorf("bob delete: %d", resp.StatusCode)
		}
		if resp := del(alice, "abc"); resp.StatusCode != 422 {
			t.Errorf("delete abc: %d %s", resp.StatusCode, resp.Body)
		}
		if resp := del(alice, fmt.Sprint(id)); resp.StatusCode != 200 {
			t.Errorf("delete: %d %s", resp.StatusCode, resp.Body)
		}
		if resp := del(alice, fmt.Sprint(id)); resp.StatusCode != 404 {
			t.Errorf("delete twice: %d %s, want 404", resp.StatusCode, resp.Body)
		}
		if v, _ := env.App.Suppressions.Check(context.Background(), dom.ID, "vip@partner.example"); v.Suppressed {
			t.Errorf("domain whitelist should still cover vip@partner.example: %+v", v)
		}
	})
}
