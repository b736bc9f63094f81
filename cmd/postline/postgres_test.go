package main

import (
	"crypto/rand"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/testutil"
)

// Two `serve` processes on one PostgreSQL database must share one
// per-account budget: the limit holds for the account, not per process.
func TestTwoServeProcessesShareRateLimit(t *testing.T) {
	t.Parallel()
	if testutil.PostgresURL() == "" {
		t.Skip("POSTLINE_TEST_DATABASE_URL not set")
	}
	key := make([]byte, 32)
	rand.Read(key)
	vars := map[string]string{
		"POSTLINE_DATABASE_URL":           testutil.DatabaseURL(t, store.Postgres),
		"POSTLINE_SECRET_KEY":             base64.StdEncoding.EncodeToString(key),
		"POSTLINE_DATA_DIR":               t.TempDir(),
		"POSTLINE_RATE_DOMAIN_PER_MINUTE": "6",
	}
	if code, _, errs := cliEnv(t, vars, "user", "create", "alice"); code != 0 {
		t.Fatal(errs)
	}
	code, out, errs := cliEnv(t, vars, "key", "create", "alice")
	if code != 0 {
		t.Fatal(errs)
	}
	apiKey := strings.TrimSpace(out)
	var env []string
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	a, b := startServe(t, env), startServe(t, env)
	for attempt := 0; attempt < 2; attempt++ {
		// Stay inside one minute window, or the budget legitimately resets.
		if s := time.Now().Second(); s > 50 {
			time.Sleep(time.Duration(61-s) * time.Second)
		}
		minute := time.Now().Truncate(time.Minute)
		allowed, remaining := 0, []string{}
		for i := 0; i < 10; i++ {
			srv := a
			if i%2 == 1 {
				srv = b
			}
			resp := srv.get(t, "/api/domains", "alice", apiKey)
			remaining = append(remaining, resp.Header.Get("X-RateLimit-Remaining"))
			if resp.StatusCode == 200 {
				allowed++
			} else if resp.StatusCode != 429 {
				t.Fatalf("request %d: status %d", i, resp.StatusCode)
			}
		}
		if !time.Now().Truncate(time.Minute).Equal(minute) {
			continue // crossed a window boundary: try again
		}
		if allowed != 6 {
			t.Fatalf("allowed %d of 10 requests across two processes, want 6 (remaining headers %v)", allowed, remaining)
		}
		if want := "5 4 3 2 1 0 0 0 0 0"; strings.Join(remaining, " ") != want {
			t.Fatalf("X-RateLimit-Remaining sequence %v, want %s", remaining, want)
		}
		a.stop(t)
		b.stop(t)
		return
	}
	t.Fatal("could not stay within one minute window")
}
