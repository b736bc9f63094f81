package app_test

import (
	"strings"
	"testing"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/store"
)

// TestDomainClaimsOverAPI: an unverified domain blocks nobody and says
// nothing about who else claimed it; the first account to publish its
// records and verify owns the name, the other claim's next read says it
// ended, and later claims are refused without naming the owner.
func TestDomainClaimsOverAPI(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		env := apitest.Start(t, d, nil)
		alice, bob, carol := env.NewUser("alice"), env.NewUser("bob"), env.NewUser("carol")
		add := func(u apitest.User, name string) *apitest.Response {
			return env.Do(apitest.Request{Method: "POST", Path: "/api/domains", Auth: u.Auth(),
				Body: map[string]any{"name": name, "delivery": map[string]any{"mode": "direct"}}})
		}
		dkimOf := func(resp *apitest.Response) (name, value string) {
			for _, r := range resp.JSON["data"].(map[string]any)["dns_records"].([]any) {
				rec := r.(map[string]any)
				if rec["purpose"] == "dkim" {
					return rec["name"].(string), rec["value"].(string)
				}
			}
			t.Fatalf("no dkim record in %s", resp.Body)
			return "", ""
		}
		ra := add(alice, "shared.example")
		rb := add(bob, "shared.example")
		if ra.StatusCode != 201 || rb.StatusCode != 201 {
			t.Fatalf("two accounts adding one unverified name: %d %s / %d %s, want 201 each", ra.StatusCode, ra.Body, rb.StatusCode, rb.Body)
		}
		claim := rb.JSON["data"].(map[string]any)["claim"].(map[string]any)
		if claim["status"] != "pending" || claim["expires_at"] == nil {
			t.Fatalf("new claim = %v, want pending with expires_at", claim)
		}
		_, va := dkimOf(ra)
		bn, vb := dkimOf(rb)
		if va == vb {
			t.Fatal("both claims ask for the same DKIM record: each needs its own")
		}

		// Bob controls the DNS: he publishes his records and verifies.
		env.DNS.AddTXT("shared.example", "v=spf1 a mx ~all")
		env.DNS.AddTXT(bn, vb)
		resp := env.Do(apitest.Request{Method: "POST", Path: "/api/domains/shared.example/verify", Auth: alice.Auth()})
		if resp.StatusCode != 200 || resp.JSON["data"].(map[string]any)["verified"] != false {
			t.Fatalf("alice verifying with bob's records published: %d %s, want 200 unverified", resp.StatusCode, resp.Body)
		}
		resp = env.Do(apitest.Request{Method: "POST", Path: "/api/domains/shared.example/verify", Auth: bob.Auth()})
		if resp.StatusCode != 200 || resp.JSON["data"].(map[string]any)["verified"] != true {
			t.Fatalf("bob verify: %d %s", resp.StatusCode, resp.Body)
		}

		resp = env.Do(apitest.Request{Method: "GET", Path: "/api/domains/shared.example", Auth: alice.Auth()})
		claim, _ = resp.JSON["data"].(map[string]any)["claim"].(map[string]any)
		if resp.StatusCode != 200 || claim["status"] != "ended" || strings.Contains(string(resp.Body), "bob") {
			t.Fatalf("alice's claim after bob verified: %d %s, want status ended naming no account", resp.StatusCode, resp.Body)
		}
		for _, r := range []apitest.Request{
			{Method: "POST", Path: "/api/domains/shared.example/verify"},
			{Method: "PUT", Path: "/api/domains/shared.example/tracklink", Body: map[string]string{"host": "t.shared.example"}},
		} {
			r.Auth = alice.Auth()
			resp := env.Do(r)
			if resp.StatusCode != 409 || !strings.Contains(string(resp.Body), "ended") || strings.Contains(string(resp.Body), "bob") {
				t.Errorf("alice %s %s on an ended claim: %d %s, want 409 saying it ended", r.Method, r.Path, resp.StatusCode, resp.Body)
			}
		}
		resp = add(carol, "shared.example")
		if resp.StatusCode != 409 || !strings.Contains(string(resp.Body), "verified by another account") || strings.Contains(string(resp.Body), "bob") {
			t.Errorf("carol adding a verified name: %d %s, want 409 naming no account", resp.StatusCode, resp.Body)
		}
		// Hosts follow the same rule.
		resp = env.Do(apitest.Request{Method: "PUT", Path: "/api/domains/shared.example/tracklink", Auth: bob.Auth(),
			Body: map[string]string{"host": "t.shared.example"}})
		if resp.StatusCode != 200 {
			t.Fatalf("bob tracklink: %d %s", resp.StatusCode, resp.Body)
		}
		resp = add(carol, "t.shared.example")
		if resp.StatusCode != 409 || strings.Contains(string(resp.Body), "bob") {
			t.Errorf("carol claiming bob's verified tracking host as a domain: %d %s, want 409", resp.StatusCode, resp.Body)
		}
		// Alice's ended claim can be deleted, and the list says what it is.
		resp = env.Do(apitest.Request{Method: "DELETE", Path: "/api/domains/shared.example", Auth: alice.Auth()})
		if resp.StatusCode != 200 {
			t.Errorf("alice deleting her ended claim: %d %s", resp.StatusCode, resp.Body)
		}
		resp = env.Do(apitest.Request{Method: "GET", Path: "/api/domains/shared.example", Auth: bob.Auth()})
		if resp.StatusCode != 200 || resp.JSON["data"].(map[string]any)["verified"] != true {
			t.Errorf("bob's domain after alice deleted her claim: %d %s", resp.StatusCode, resp.Body)
		}
	})
}
