package app_test

import (
	"fmt"
	"html"
	"strings"
	"testing"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/store"
)

// ed25519Record is the value of the domain's dkim_ed25519 record in an
// API answer's dns_records ("" when there is none).
func ed25519Record(data map[string]any) string {
	for _, r := range data["dns_records"].([]any) {
		if rec := r.(map[string]any); rec["purpose"] == "dkim_ed25519" {
			return fmt.Sprint(rec["value"])
		}
	}
	return ""
}

// dkim_ed25519 over the API: set at creation, read back, turned off and on
// with PATCH /api/domains/{domain} (the key kept), its record listed while
// on (also on the console's domain page); another account gets 404.
func TestDomainEd25519OverAPI(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		env := apitest.Start(t, d, nil)
		alice, bob := env.NewUser("alice"), env.NewUser("bob")
		resp := env.Do(apitest.Request{Method: "POST", Path: "/api/domains", Auth: alice.Auth(),
			Body: map[string]any{"name": "alice.example", "delivery": map[string]any{"mode": "direct"}, "dkim_ed25519": true}})
		if resp.StatusCode != 201 {
			t.Fatalf("create: %d %s", resp.StatusCode, resp.Body)
		}
		data := resp.JSON["data"].(map[string]any)
		first := ed25519Record(data)
		if data["dkim_ed25519"] != true || !strings.HasPrefix(first, "v=DKIM1; k=ed25519; p=") {
			t.Fatalf("created with dkim_ed25519: %s", resp.Body)
		}
		patch := func(u apitest.User, body any) *apitest.Response {
			return env.Do(apitest.Request{Method: "PATCH", Path: "/api/domains/alice.example", Auth: u.Auth(), Body: body})
		}
		resp = patch(alice, map[string]any{"dkim_ed25519": false})
		if data = resp.JSON["data"].(map[string]any); resp.StatusCode != 200 || data["dkim_ed25519"] != false || ed25519Record(data) != "" {
			t.Fatalf("PATCH false: %d %s", resp.StatusCode, resp.Body)
		}
		resp = env.Do(apitest.Request{Method: "GET", Path: "/api/domains/alice.example", Auth: alice.Auth()})
		if data = resp.JSON["data"].(map[string]any); data["dkim_ed25519"] != false {
			t.Errorf("GET after PATCH false: %s", resp.Body)
		}
		resp = patch(alice, map[string]any{"dkim_ed25519": true})
		if data = resp.JSON["data"].(map[string]any); resp.StatusCode != 200 || data["dkim_ed25519"] != true || ed25519Record(data) != first {
			t.Fatalf("PATCH true again: %d %s; want the first key's record %s", resp.StatusCode, resp.Body, first)
		}
		for _, body := range []any{map[string]any{}, map[string]any{"dkim_ed25519": "yes"}} {
			if r := patch(alice, body); r.StatusCode != 422 || !strings.Contains(string(r.Body), "dkim_ed25519") {
				t.Errorf("PATCH %v: %d %s, want 422 naming dkim_ed25519", body, r.StatusCode, r.Body)
			}
		}
		// Another account: 404, as for a domain that does not exist; nothing changes.
		for _, r := range []*apitest.Response{patch(bob, map[string]any{"dkim_ed25519": false}),
			env.Do(apitest.Request{Method: "PATCH", Path: "/api/domains/nope.example", Auth: alice.Auth(), Body: map[string]any{"dkim_ed25519": true}})} {
			if r.StatusCode != 404 {
				t.Errorf("PATCH another's or no domain: %d %s, want 404", r.StatusCode, r.Body)
			}
		}
		if r := env.Do(apitest.Request{Method: "GET", Path: "/api/domains/alice.example", Auth: alice.Auth()}); r.JSON["data"].(map[string]any)["dkim_ed25519"] != true {
			t.Errorf("bob's PATCH changed alice's domain: %s", r.Body)
		}
		// Created without the field: off.
		resp = env.Do(apitest.Request{Method: "POST", Path: "/api/domains", Auth: alice.Auth(),
			Body: map[string]any{"name": "plain.example", "delivery": map[string]any{"mode": "direct"}}})
		if data = resp.JSON["data"].(map[string]any); resp.StatusCode != 201 || data["dkim_ed25519"] != false || ed25519Record(data) != "" {
			t.Errorf("created without dkim_ed25519: %d %s", resp.StatusCode, resp.Body)
		}
		// The console's domain page lists the record with the others.
		b := &browser{t: t, base: env.URL}
		if r := b.signIn("alice", alice.Key, "/"); r.StatusCode != 303 {
			t.Fatalf("console sign-in: %d", r.StatusCode)
		}
		_, page := b.do("GET", "/domains/alice.example", nil, nil)
		page = html.UnescapeString(page) // base64's + is &#43; in the page
		if !strings.Contains(page, "<td>dkim_ed25519") || !strings.Contains(page, "-ed._domainkey.alice.example") ||
			!strings.Contains(page, first) || !strings.Contains(page, "Ed25519 DKIM</dt><dd>on") {
			t.Errorf("console domain page lacks the Ed25519 record:\n%s", page[max(0, strings.Index(page, "<h1>")):])
		}
	})
}
