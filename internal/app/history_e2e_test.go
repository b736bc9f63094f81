package app_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/store"
)

// TestSpamtrapScoreUsesOnlyTheCallersBounces: a hard bounce on alice's
// domain raises the score alice gets for that address, not bob's (who
// would learn that some other customer mailed it); with
// --validation-shared-history it counts for everyone. Removing the
// bounce takes it back out, in every process's memory.
func TestSpamtrapScoreUsesOnlyTheCallersBounces(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		for _, shared := range []bool{false, true} {
			t.Run(fmt.Sprintf("shared=%v", shared), func(t *testing.T) {
				t.Parallel()
				env := apitest.Start(t, d, func(c *config.Config) { c.ValidationSharedHistory = shared })
				alice, bob := env.NewUser("alice"), env.NewUser("bob")
				dom := env.NewDomain(alice, "alice.example")
				env.DNS.AddMX("acme-mail.com", 10, "mx.acme-mail.com")
				env.DNS.AddA("mx.acme-mail.com", "192.0.2.10")
				score := func(u apitest.User) float64 {
					t.Helper()
					resp := env.Do(apitest.Request{Method: "POST", Path: "/api/email/validate", Auth: u.Auth(),
						Body: map[string]string{"email": "sales@acme-mail.com"}})
					if resp.StatusCode != 200 {
						t.Fatalf("validate: %d %s", resp.StatusCode, resp.Body)
					}
					return resp.JSON["data"].(map[string]any)["spamtrap_score"].(float64)
				}
				before := score(alice)
				if b := score(bob); b != before {
					t.Fatalf("before any bounce: alice %v, bob %v", before, b)
				}
				entry, err := env.App.Suppressions.AddBounce(context.Background(), dom.ID, "sales@acme-mail.com", "dsn:5.1.1")
				if err != nil {
					t.Fatal(err)
				}
				waitFor(t, "alice's score to rise after her bounce", func() bool { return score(alice) > before })
				raised := score(alice)
				if got := score(bob); shared != (got == raised) || (!shared && got != before) {
					t.Errorf("bob's score after alice's bounce: %v (alice %v, before %v), shared history %v", got, raised, before, shared)
				}
				if err := env.App.Suppressions.Remove(context.Background(), dom.ID, entry.ID); err != nil {
					t.Fatal(err)
				}
				waitFor(t, "alice's score to fall back after the bounce was removed", func() bool { return score(alice) == before })
			})
		}
	})
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
