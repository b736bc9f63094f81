package app_test

import (
	"strings"
	"testing"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/store"
)

func TestValidationOverHTTP(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		env := apitest.Start(t, d, nil)
		u := env.NewUser("alice")
		env.DNS.AddMX("acme-mail.com", 10, "mx.acme-mail.com")
		env.DNS.AddA("mx.acme-mail.com", "192.0.2.10")
		env.DNS.AddMX("nullmx-corp.net", 0, ".")
		env.DNS.AddA("aonly-corp.net", "192.0.2.20")
		env.DNS.AddMX("gmail.com", 5, "gmail-smtp-in.l.google.com")
		validate := func(path, email string) map[string]any {
			t.Helper()
			resp := env.Do(apitest.Request{Method: "POST", Path: path, Auth: u.Auth(), Body: map[string]string{"email": email}})
			if resp.StatusCode != 200 || resp.JSON["success"] != true {
				t.Fatalf("%s %q: %d %s", path, email, resp.StatusCode, resp.Body)
			}
			return resp.JSON["data"].(map[string]any)
		}
		cases := []struct {
			path, email string
			valid       bool
			reason      string
			warning     string
			suggestion  string
		}{
			{"/api/email/validate", "jane@acme-mail.com", true, "", "", ""},
			{"/api/email/validate", "jane@nullmx-corp.net", false, "null_mx", "", ""},
			{"/api/email/validate", "jane@nx-corp.net", false, "nxdomain", "", ""},
			{"/api/email/validate", "jane@aonly-corp.net", true, "", "implicit_mx", ""},
			{"/api/email/validate", "jane@mailinator.com", false, "disposable", "", ""},
			{"/api/email/validate", "jane@test.invalid", false, "reserved_domain", "", ""},
			{"/api/email/validate", "jane@gmail.con", false, "nxdomain", "", "jane@gmail.com"},
			{"/api/email/validate", "not-an-address", false, "syntax", "", ""},
			{"/api/email/validate", `"john doe"@acme-mail.com`, true, "", "quoted_string", ""},
			{"/api/email/validate/strict", `"john doe"@acme-mail.com`, false, "syntax", "quoted_string", ""},
			{"/api/email/validate/strict", "postmaster@acme-mail.com", true, "", "role_account", ""},
		}
		for _, c := range cases {
			got := validate(c.path, c.email)
			if got["is_valid"] != c.valid || (c.reason != "" && got["reason"] != c.reason) || got["email"] != c.email {
				t.Errorf("%s %q: is_valid=%v reason=%v, want %v %q (%v)", c.path, c.email, got["is_valid"], got["reason"], c.valid, c.reason, got)
			}
			if c.valid != (got["error"] == nil) {
				t.Errorf("%s %q: error = %v with is_valid %v", c.path, c.email, got["error"], c.valid)
			}
			if c.warning != "" && !contains(got["warnings"], c.warning) {
				t.Errorf("%s %q: warnings %v lack %s", c.path, c.email, got["warnings"], c.warning)
			}
			if c.suggestion != "" && got["suggestion"] != c.suggestion {
				t.Errorf("%s %q: suggestion %v, want %s", c.path, c.email, got["suggestion"], c.suggestion)
			}
		}

		// Cached on the second call, with the first call's timestamp.
		first := validate("/api/email/validate", "cache.me@acme-mail.com")
		queries := env.DNS.Queries()
		second := validate("/api/email/validate", "Cache.Me@ACME-Mail.com")
		if first["cached"] != false || second["cached"] != true || second["validated_at"] != first["validated_at"] {
			t.Errorf("second call: cached=%v validated_at=%v; first validated_at=%v", second["cached"], second["validated_at"], first["validated_at"])
		}
		if env.DNS.Queries() != queries {
			t.Errorf("cached answer made %d DNS queries", env.DNS.Queries()-queries)
		}
		if strict := validate("/api/email/validate/strict", "cache.me@acme-mail.com"); strict["cached"] != false {
			t.Errorf("strict mode served the standard-mode cache entry")
		}
	})
}

func TestBulkValidationOverHTTP(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, store.SQLite, nil)
	u := env.NewUser("alice")
	env.DNS.AddMX("acme-mail.com", 10, "mx.acme-mail.com")
	post := func(body any) *apitest.Response {
		return env.Do(apitest.Request{Method: "POST", Path: "/api/email/validate/bulk/strict", Auth: u.Auth(), Body: body})
	}
	// Warm the cache for one address.
	if resp := env.Do(apitest.Request{Method: "POST", Path: "/api/email/validate/strict", Auth: u.Auth(),
		Body: map[string]string{"email": "warm@acme-mail.com"}}); resp.StatusCode != 200 {
		t.Fatal(resp.StatusCode)
	}
	emails := []string{"a@acme-mail.com", "warm@acme-mail.com", "bad@@x", "a@acme-mail.com", `"q"@acme-mail.com`}
	for _, body := range []any{
		map[string]any{"emails": emails},
		map[string]any{"emails": map[string]any{"emails": emails}},
	} {
		resp := post(body)
		if resp.StatusCode != 200 {
			t.Fatalf("bulk: %d %s", resp.StatusCode, resp.Body)
		}
		data := resp.JSON["data"].(map[string]any)
		results := data["results"].([]any)
		if len(results) != len(emails) {
			t.Fatalf("%d results for %d entries", len(results), len(emails))
		}
		wantValid := []bool{true, true, false, true, false}
		for i, r := range results {
			r := r.(map[string]any)
			if r["email"] != emails[i] || r["is_valid"] != wantValid[i] {
				t.Errorf("result %d = %v, want %s valid=%v (input order kept)", i, r, emails[i], wantValid[i])
			}
		}
		sum := data["summary"].(map[string]any)
		if sum["total"] != 5.0 || sum["valid"] != 3.0 || sum["invalid"] != 2.0 || sum["cached"].(float64)+sum["validated"].(float64) != 5 {
			t.Errorf("summary %v", sum)
		}
		if results[1].(map[string]any)["cached"] != true {
			t.Errorf("warm entry not served from cache: %v", results[1])
		}
	}
	for _, c := range []struct {
		body  any
		field string
	}{
		{map[string]any{}, "emails"},
		{map[string]any{"emails": []string{}}, "emails"},
		{map[string]any{"emails": make([]string, 101)}, "emails"},
		{map[string]any{"emails": []any{"a@b.example", 7}}, "emails.1"},
		{map[string]any{"emails": "a@b.example"}, "emails"},
	} {
		resp := post(c.body)
		errs, _ := resp.JSON["errors"].(map[string]any)
		if resp.StatusCode != 422 || errs[c.field] == nil || resp.JSON["message"] != "Invalid request parameters" {
			t.Errorf("bulk %v: %d %s, want 422 naming %s", c.body, resp.StatusCode, resp.Body, c.field)
		}
	}
	for _, c := range []struct {
		path  string
		body  any
		field string
	}{
		{"/api/email/validate", map[string]any{}, "email"},
		{"/api/email/validate", map[string]any{"email": 5}, "email"},
		{"/api/email/validate/strict", map[string]any{"email": strings.Repeat("a", 250) + "@b.example"}, "email"},
		{"/api/email/validate/strict", "{", "body"},
	} {
		resp := env.Do(apitest.Request{Method: "POST", Path: c.path, Auth: u.Auth(), Body: c.body})
		errs, _ := resp.JSON["errors"].(map[string]any)
		if resp.StatusCode != 422 || errs[c.field] == nil {
			t.Errorf("%s %v: %d %s, want 422 naming %s", c.path, c.body, resp.StatusCode, resp.Body, c.field)
		}
	}
}

func TestValidationRateLimitIsHourly(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, store.SQLite, func(c *config.Config) { c.RateValidationPerHour = 2 })
	u := env.NewUser("alice")
	var last *apitest.Response
	for i := 0; i < 3; i++ {
		last = env.Do(apitest.Request{Method: "POST", Path: "/api/email/validate", Auth: u.Auth(), Body: map[string]string{"email": "x@test.invalid"}})
	}
	ra, ok := last.JSON["retry_after"].(float64)
	if last.StatusCode != 429 || !ok || ra < 1 || ra > 3600 || last.Header.Get("Retry-After") == "" {
		t.Fatalf("third request: %d %s (Retry-After %q), want 429 with retry_after within the hour", last.StatusCode, last.Body, last.Header.Get("Retry-After"))
	}
	if resp := env.Do(apitest.Request{Method: "POST", Path: "/api/email/validate", Body: map[string]string{"email": "x@y.z"}}); resp.StatusCode != 401 || resp.JSON["success"] != false {
		t.Errorf("no auth: %d %s", resp.StatusCode, resp.Body)
	}
}

func contains(list any, s string) bool {
	l, _ := list.([]any)
	for _, v := range l {
		if v == s {
			return true
		}
	}
	return false
}
