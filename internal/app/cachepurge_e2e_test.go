package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/app"
	"github.com/postline/postline/internal/store"
)

// A purge made by another process (the operator's `postline cache purge`)
// reaches a running server: within a few seconds its in-memory copy of the
// cached NXDOMAIN is gone and the API answers from DNS again.
func TestCachePurgeReachesRunningServer(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		env := apitest.Start(t, d, nil)
		env.DNS.SetNegativeTTL(0)
		u := env.NewUser("alice")
		validate := func() map[string]any {
			t.Helper()
			resp := env.Do(apitest.Request{Method: "POST", Path: "/api/email/validate", Auth: u.Auth(), Body: map[string]string{"email": "jane@late-corp.net"}})
			if resp.StatusCode != 200 {
				t.Fatalf("validate: %d %s", resp.StatusCode, resp.Body)
			}
			return resp.JSON["data"].(map[string]any)
		}
		if got := validate(); got["reason"] != "nxdomain" {
			t.Fatalf("before the domain exists: %v", got)
		}
		env.DNS.AddMX("late-corp.net", 10, "mx.late-corp.net")
		if got := validate(); got["cached"] != true || got["is_valid"] != false {
			t.Fatalf("the NXDOMAIN should be cached: %v", got)
		}
		// The operator's command: another App on the same database.
		cli, err := app.Open(context.Background(), env.Config, nil, app.Options{Command: "cache purge"})
		if err != nil {
			t.Fatal(err)
		}
		n, err := cli.PurgeValidationCache(context.Background(), "late-corp.net")
		cli.Close()
		if err != nil || n != 1 {
			t.Fatalf("purge: %d, %v; want 1 removed", n, err)
		}
		deadline := time.Now().Add(6 * time.Second)
		for {
			got := validate()
			if got["is_valid"] == true && got["cached"] == false {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the server still answers from memory 6 s after the purge: %v", got)
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
}
