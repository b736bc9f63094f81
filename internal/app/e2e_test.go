package app_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/testutil"
)

// forEachDialect runs fn against SQLite, and PostgreSQL when configured.
func forEachDialect(t *testing.T, fn func(t *testing.T, d store.Dialect)) {
	for _, d := range testutil.Dialects() {
		t.Run(string(d), func(t *testing.T) { t.Parallel(); fn(t, d) })
	}
}

func TestAuthErrorsInEachShape(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		env := apitest.Start(t, d, nil)
		alice := env.NewUser("alice")
		env.NewDomain(alice, "alice.example")
		wrongKey := apitest.User{Login: "alice", Key: "pl_wrong"}.Auth()
		wrongLogin := apitest.User{Login: "bob", Key: alice.Key}.Auth()
		cases := []struct {
			name, method, path, auth string
			want                     map[string]any
		}{
			{"delete, no header", "DELETE", "/api/domains/alice.example/tracklink", "",
				map[string]any{"error": "Unauthorized", "message": "Authorization header is required"}},
			{"delete, not basic", "DELETE", "/api/domains/alice.example/auth-domain", "Bearer abc",
				map[string]any{"error": "Unauthorized", "message": "Authorization header is invalid: use Basic authentication with LOGIN:API_KEY (curl -u LOGIN:API_KEY)"}},
			{"domains, bearer", "GET", "/api/domains", "Bearer pl_abc",
				map[string]any{"success": false, "message": "Authorization header is invalid: use Basic authentication with LOGIN:API_KEY (curl -u LOGIN:API_KEY)"}},
			{"delete, bad base64", "DELETE", "/api/domains/alice.example/auth-domain", "Basic !!!",
				map[string]any{"error": "Unauthorized", "message": "Authorization header is invalid"}},
			{"delete, wrong key", "DELETE", "/api/domains/alice.example/tracklink", wrongKey,
				map[string]any{"error": "Unauthorized", "message": "Invalid credentials"}},
			{"domains, no header", "GET", "/api/domains", "",
				map[string]any{"success": false, "message": "Authorization header is required"}},
			{"domains, right key wrong login", "GET", "/api/domains/alice.example", wrongLogin,
				map[string]any{"success": false, "message": "Invalid credentials"}},
		}
		for _, c := range cases {
			resp := env.Do(apitest.Request{Method: c.method, Path: c.path, Auth: c.auth})
			if resp.StatusCode != 401 {
				t.Errorf("%s: status %d, want 401; body %s", c.name, resp.StatusCode, resp.Body)
			}
			if !sameJSON(resp.JSON, c.want) {
				t.Errorf("%s: body %s, want %v", c.name, resp.Body, c.want)
			}
			if !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic") {
				t.Errorf("%s: WWW-Authenticate = %q", c.name, resp.Header.Get("WWW-Authenticate"))
			}
		}
		// A disabled account's key stops working.
		if err := env.App.Accounts.DisableUser(context.Background(), "alice"); err != nil {
			t.Fatal(err)
		}
		resp := env.Do(apitest.Request{Method: "GET", Path: "/api/domains", Auth: alice.Auth()})
		if resp.StatusCode != 401 || resp.JSON["message"] != "User authentication missing" {
			t.Errorf("disabled account: %d %s, want 401 User authentication missing", resp.StatusCode, resp.Body)
		}
	})
}

func TestOtherAccountsDomainIs404(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		env := apitest.Start(t, d, nil)
		alice, bob := env.NewUser("alice"), env.NewUser("bob")
		env.NewDomain(alice, "alice.example")
		for _, r := range []apitest.Request{
			{Method: "DELETE", Path: "/api/domains/alice.example/tracklink"},
			{Method: "DELETE", Path: "/api/domains/alice.example/auth-domain"},
			{Method: "GET", Path: "/api/domains/alice.example"},
			{Method: "PUT", Path: "/api/domains/alice.example/tracklink", Body: map[string]string{"host": "t.alice.example"}},
			{Method: "POST", Path: "/api/domains/alice.example/verify"},
			{Method: "DELETE", Path: "/api/domains/alice.example"},
			{Method: "GET", Path: "/api/domains/nonexistent.example"},
		} {
			r.Auth = bob.Auth()
			resp := env.Do(r)
			if resp.StatusCode != 404 || resp.JSON["success"] != false || !strings.Contains(resp.JSON["message"].(string), "not found") {
				t.Errorf("bob %s %s: %d %s, want 404 {success:false, message: ...not found}", r.Method, r.Path, resp.StatusCode, resp.Body)
			}
		}
		// Alice's domain is untouched.
		resp := env.Do(apitest.Request{Method: "GET", Path: "/api/domains/alice.example", Auth: alice.Auth()})
		if resp.StatusCode != 200 {
			t.Fatalf("alice GET own domain: %d %s", resp.StatusCode, resp.Body)
		}
	})
}

func TestRemoveTrackingAndAuthDomain(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		env := apitest.Start(t, d, nil)
		alice := env.NewUser("alice")
		env.NewDomain(alice, "alice.example")
		for _, kind := range []struct{ path, field, host string }{
			{"tracklink", "tracking_domain", "track.alice.example"},
			{"auth-domain", "auth_domain", "bounce.alice.example"},
		} {
			path := "/api/domains/alice.example/" + kind.path
			resp := env.Do(apitest.Request{Method: "PUT", Path: path, Auth: alice.Auth(), Body: map[string]string{"host": kind.host}})
			data, _ := resp.JSON["data"].(map[string]any)
			if resp.StatusCode != 200 || data[kind.field] != kind.host {
				t.Fatalf("PUT %s: %d %s", path, resp.StatusCode, resp.Body)
			}
			resp = env.Do(apitest.Request{Method: "DELETE", Path: path, Auth: alice.Auth()})
			if resp.StatusCode != 200 || resp.JSON["success"] != true || !strings.Contains(resp.JSON["message"].(string), "removed") {
				t.Fatalf("DELETE %s: %d %s", path, resp.StatusCode, resp.Body)
			}
			if resp.Header.Get("X-RateLimit-Limit") == "" || resp.Header.Get("X-RateLimit-Remaining") == "" {
				t.Errorf("DELETE %s: missing X-RateLimit headers: %v", path, resp.Header)
			}
			got, err := env.App.Domains.Get(context.Background(), "alice.example")
			if err != nil || got.TrackingDomain != "" || got.AuthDomain != "" {
				t.Fatalf("after DELETE %s: %+v %v; want no %s", path, got, err, kind.field)
			}
			// Idempotent: removing again is still 200.
			resp = env.Do(apitest.Request{Method: "DELETE", Path: path, Auth: alice.Auth()})
			if resp.StatusCode != 200 || resp.JSON["success"] != true {
				t.Fatalf("second DELETE %s: %d %s", path, resp.StatusCode, resp.Body)
			}
		}
	})
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		env := apitest.Start(t, d, func(c *config.Config) { c.RateDomainPerMinute = 3 })
		alice, bob := env.NewUser("alice"), env.NewUser("bob")
		env.NewDomain(alice, "alice.example")
		var last *apitest.Response
		for i := 0; i < 4; i++ {
			last = env.Do(apitest.Request{Method: "DELETE", Path: "/api/domains/alice.example/tracklink", Auth: alice.Auth()})
			if i < 3 {
				if last.StatusCode != 200 || last.Header.Get("X-RateLimit-Remaining") != strconv.Itoa(2-i) {
					t.Fatalf("request %d: %d remaining=%q, want 200 remaining=%d", i+1, last.StatusCode, last.Header.Get("X-RateLimit-Remaining"), 2-i)
				}
			}
		}
		if last.StatusCode != 429 || last.JSON["success"] != false || last.JSON["message"] == "" {
			t.Fatalf("4th request: %d %s, want 429 {success:false,message}", last.StatusCode, last.Body)
		}
		ra, err := strconv.Atoi(last.Header.Get("Retry-After"))
		if err != nil || ra < 1 || ra > 60 {
			t.Errorf("Retry-After = %q, want 1..60 seconds", last.Header.Get("Retry-After"))
		}
		if last.Header.Get("X-RateLimit-Limit") != "3" || last.Header.Get("X-RateLimit-Remaining") != "0" {
			t.Errorf("429 headers: limit=%q remaining=%q", last.Header.Get("X-RateLimit-Limit"), last.Header.Get("X-RateLimit-Remaining"))
		}
		if _, has := last.JSON["retry_after"]; has {
			t.Errorf("domain endpoint 429 has retry_after (validation endpoints only): %s", last.Body)
		}
		// Budgets are per account: bob is unaffected.
		resp := env.Do(apitest.Request{Method: "GET", Path: "/api/domains", Auth: bob.Auth()})
		if resp.StatusCode != 200 || resp.Header.Get("X-RateLimit-Remaining") != "2" {
			t.Errorf("bob: %d remaining=%q, want 200 remaining=2", resp.StatusCode, resp.Header.Get("X-RateLimit-Remaining"))
		}
	})
}

func TestDomainLifecycleOverAPI(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		env := apitest.Start(t, d, func(c *config.Config) { c.RelayAllowlist = []string{"*.relay.example"} })
		alice, bob := env.NewUser("alice"), env.NewUser("bob")
		create := func(body any) *apitest.Response {
			return env.Do(apitest.Request{Method: "POST", Path: "/api/domains", Auth: alice.Auth(), Body: body})
		}
		resp := create(map[string]any{"name": "Alice.Example", "delivery": map[string]any{
			"mode": "smtp", "host": "smtp.relay.example", "user": "u", "password": "hunter2"}})
		if resp.StatusCode != 201 {
			t.Fatalf("create: %d %s", resp.StatusCode, resp.Body)
		}
		if bytes.Contains(resp.Body, []byte("hunter2")) {
			t.Fatalf("create response leaks the SMTP password: %s", resp.Body)
		}
		data := resp.JSON["data"].(map[string]any)
		if data["name"] != "alice.example" || data["verified"] != false {
			t.Fatalf("created domain = %v", data)
		}
		for _, c := range []struct {
			body  any
			field string
		}{
			{map[string]any{"name": "other.example", "delivery": map[string]any{"mode": "smtp", "host": "10.0.0.1"}}, "delivery.host"},
			{map[string]any{"name": "nodot", "delivery": map[string]any{"mode": "direct"}}, "name"},
			{map[string]any{"name": "x.example", "delivery": map[string]any{"mode": "carrier-pigeon"}}, "delivery.mode"},
			{map[string]any{"name": 42}, "name"},
			{"[1,2]", "body"},
		} {
			resp := create(c.body)
			errs, _ := resp.JSON["errors"].(map[string]any)
			if resp.StatusCode != 422 || errs[c.field] == nil {
				t.Errorf("create %v: %d %s, want 422 naming %s", c.body, resp.StatusCode, resp.Body, c.field)
			}
		}
		resp = create(map[string]any{"name": "alice.example", "delivery": map[string]any{"mode": "direct"}})
		if resp.StatusCode != 409 {
			t.Errorf("duplicate create: %d %s, want 409", resp.StatusCode, resp.Body)
		}
		big := `{"name":"` + strings.Repeat("a", 2<<20) + `"}`
		resp = create(big)
		errs, _ := resp.JSON["errors"].(map[string]any)
		if resp.StatusCode != 413 || resp.JSON["success"] != false || !strings.Contains(fmt.Sprint(errs["body"]), "limit of 1048576 bytes") ||
			!strings.Contains(fmt.Sprint(resp.JSON["message"]), "limit of 1048576 bytes") {
			t.Errorf("2 MiB body: %d %s, want 413 naming the limit in message and errors.body", resp.StatusCode, resp.Body[:min(len(resp.Body), 200)])
		}

		// Verify through the local DNS server: nothing published, then SPF and DKIM.
		resp = env.Do(apitest.Request{Method: "POST", Path: "/api/domains/alice.example/verify", Auth: alice.Auth()})
		if resp.StatusCode != 200 || resp.JSON["data"].(map[string]any)["verified"] != false {
			t.Fatalf("verify before publishing: %d %s", resp.StatusCode, resp.Body)
		}
		dom, _ := env.App.Domains.Get(context.Background(), "alice.example")
		env.DNS.AddTXT("alice.example", "v=spf1 a mx ~all")
		env.DNS.AddTXT(dom.DKIMSelector+"._domainkey.alice.example", dom.DKIMRecordValue())
		resp = env.Do(apitest.Request{Method: "POST", Path: "/api/domains/alice.example/verify", Auth: alice.Auth()})
		data = resp.JSON["data"].(map[string]any)
		if resp.StatusCode != 200 || data["verified"] != true {
			t.Fatalf("verify after publishing: %d %s", resp.StatusCode, resp.Body)
		}
		statuses := map[string]string{}
		for _, r := range data["dns_records"].([]any) {
			rec := r.(map[string]any)
			statuses[rec["purpose"].(string)] = rec["status"].(string)
		}
		if statuses["spf"] != "ok" || statuses["dkim"] != "ok" || statuses["dmarc"] != "missing" {
			t.Errorf("record statuses = %v, want spf ok, dkim ok, dmarc missing", statuses)
		}

		resp = env.Do(apitest.Request{Method: "GET", Path: "/api/domains", Auth: bob.Auth()})
		if list := resp.JSON["data"].([]any); len(list) != 0 {
			t.Errorf("bob's list shows %d domains, want 0", len(list))
		}
		resp = env.Do(apitest.Request{Method: "DELETE", Path: "/api/domains/alice.example", Auth: alice.Auth()})
		if resp.StatusCode != 200 {
			t.Fatalf("delete: %d %s", resp.StatusCode, resp.Body)
		}
		resp = env.Do(apitest.Request{Method: "GET", Path: "/api/domains/alice.example", Auth: alice.Auth()})
		if resp.StatusCode != 404 {
			t.Errorf("after delete: %d, want 404", resp.StatusCode)
		}
	})
}

func TestOperationsEndpoints(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, store.SQLite, nil)
	for path, want := range map[string]string{"/healthz": `"status":"ok"`, "/readyz": `"database":"ok"`, "/api/openapi.json": `"openapi":"3.1.0"`} {
		resp := env.Do(apitest.Request{Method: "GET", Path: path})
		if resp.StatusCode != 200 || !bytes.Contains(resp.Body, []byte(want)) {
			t.Errorf("GET %s: %d %.200s, want 200 containing %s", path, resp.StatusCode, resp.Body, want)
		}
	}
	env.Do(apitest.Request{Method: "GET", Path: "/api/domains"})
	resp := env.Do(apitest.Request{Method: "GET", Path: "/metrics"})
	if !bytes.Contains(resp.Body, []byte(`postline_http_requests_total{method="GET",route="/api/domains",status="401"} 1`)) {
		t.Errorf("metrics lack the 401 on /api/domains:\n%.2000s", resp.Body)
	}
	for _, want := range []string{`go_sql_open_connections{db_name="writer"}`, `go_sql_max_idle_closed_total{db_name="reader"} 0`} {
		if !bytes.Contains(resp.Body, []byte(want)) {
			t.Errorf("metrics lack the pool statistic %s", want)
		}
	}
	resp = env.Do(apitest.Request{Method: "GET", Path: "/api/nope", Header: http.Header{"X-Request-Id": {"abc-123"}}})
	if resp.StatusCode != 404 || resp.Header.Get("X-Request-ID") != "abc-123" {
		t.Errorf("unknown route: %d request id %q", resp.StatusCode, resp.Header.Get("X-Request-ID"))
	}
}

func sameJSON(got map[string]any, want map[string]any) bool {
	if len(got) != len(want) {
		return false
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

// A known path with the wrong method is a 405 naming the allowed methods
// (in the path's error shape), not a 404 claiming the route is missing.
func TestWrongMethodIs405(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, store.SQLite, nil)
	alice := env.NewUser("alice")
	env.NewDomain(alice, "alice.example")
	cases := []struct {
		method, path, allow, field string
	}{
		{"GET", "/api/email/validate", "POST", "message"},
		{"DELETE", "/api/domains/alice.example/log", "GET, HEAD", "error"},
		{"PATCH", "/api/domains/alice.example/tracklink", "PUT, DELETE", "message"},
		{"GET", "/api/domains/alice.example/message", "POST", "error"},
	}
	for _, c := range cases {
		resp := env.Do(apitest.Request{Method: c.method, Path: c.path, Auth: alice.Auth()})
		msg, _ := resp.JSON[c.field].(string)
		if resp.StatusCode != 405 || resp.Header.Get("Allow") != c.allow || !strings.Contains(msg, "use "+strings.ReplaceAll(c.allow, ", ", " or ")) {
			t.Errorf("%s %s: %d Allow %q %s; want 405, Allow %q and %s naming it", c.method, c.path, resp.StatusCode,
				resp.Header.Get("Allow"), resp.Body, c.allow, c.field)
		}
	}
	if resp := env.Do(apitest.Request{Method: "GET", Path: "/api/nothing-here", Auth: alice.Auth()}); resp.StatusCode != 404 {
		t.Errorf("unknown path: %d, want 404", resp.StatusCode)
	}
}
