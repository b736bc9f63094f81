package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/app"
	"github.com/postline/postline/internal/store"
)

// TestRevocationReachesEveryProcess: keys are trusted from memory for a
// moment after a database check. A revocation or a disabled account takes
// effect at once in the process that made it, and within 5 s in another
// process sharing the database (here: a second App on the same database).
func TestRevocationReachesEveryProcess(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		env := apitest.Start(t, d, nil)
		alice, bob := env.NewUser("alice"), env.NewUser("bob")
		get := func(u apitest.User) int {
			return env.Do(apitest.Request{Method: "GET", Path: "/api/domains", Auth: u.Auth()}).StatusCode
		}
		if get(alice) != 200 || get(bob) != 200 {
			t.Fatal("keys do not work before any change")
		}
		// The same process: at once.
		keys, err := env.App.Accounts.Keys(context.Background(), "alice")
		if err != nil {
			t.Fatal(err)
		}
		if err := env.App.Accounts.RevokeKey(context.Background(), keys[0].ID); err != nil {
			t.Fatal(err)
		}
		if c := get(alice); c != 401 {
			t.Fatalf("alice's revoked key right after revoking in this process: %d, want 401", c)
		}

		// Another process: within 5 s.
		other, err := app.Open(context.Background(), env.Config, nil, app.Options{DKIMKeyBits: 1024, Command: "test"})
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		get(bob) // cached here now
		if err := other.Accounts.DisableUser(context.Background(), "bob"); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		for get(bob) == 200 {
			if time.Since(start) > 5*time.Second {
				t.Fatal("bob's key still works 5 s after another process disabled him")
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("disabled in another process: refused after %v", time.Since(start).Round(100*time.Millisecond))
	})
}
