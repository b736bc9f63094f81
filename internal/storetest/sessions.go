package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/store"
)

// testSessions: a session round trips with its own account's login and
// flags; the account's and the key's state are read fresh at each lookup
// (disabled, revoked, expiry); touch, delete and the idle sweep act on
// the sessions they name and no other.
func testSessions(t *testing.T, db *store.DB) {
	ctx := context.Background()
	s := store.NewSessions(db)
	accounts := store.NewAccounts(db)
	alice, bob := twoAccounts(t, accounts)
	if err := accounts.SetAdmin(ctx, alice.ID, true); err != nil {
		t.Fatal(err)
	}
	expires := now.Add(48 * time.Hour)
	key, err := accounts.CreateKey(ctx, account.Key{AccountID: bob.ID, Name: "console", Prefix: "pl_b", CreatedAt: now,
		ExpiresAt: &expires}, "keyhash")
	if err != nil {
		t.Fatal(err)
	}

	pw := account.Session{Principal: account.Principal{AccountID: alice.ID}, CSRF: "csrf-a", CreatedAt: now, LastSeen: now}
	if err := s.CreateSession(ctx, "hash-a", pw); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateSession(ctx, "hash-a", pw); err == nil {
		t.Fatal("a second session under the same hash was stored")
	}
	kb := account.Session{Principal: account.Principal{AccountID: bob.ID, KeyID: key.ID}, CSRF: "csrf-b",
		CreatedAt: now.Add(time.Minute), LastSeen: now.Add(time.Minute)}
	if err := s.CreateSession(ctx, "hash-b", kb); err != nil {
		t.Fatal(err)
	}

	r, err := s.SessionByHash(ctx, "hash-a")
	if err != nil || r.AccountID != alice.ID || r.Login != "alice" || !r.Admin || r.KeyID != 0 || r.CSRF != "csrf-a" ||
		!r.CreatedAt.Equal(now) || !r.LastSeen.Equal(now) || r.Disabled || r.KeyRevoked || r.ExpiresAt != nil {
		t.Fatalf("Alice's session = %+v, %v; want alice, admin, a password sign-in", r, err)
	}
	r, err = s.SessionByHash(ctx, "hash-b")
	if err != nil || r.AccountID != bob.ID || r.Login != "bob" || r.Admin || r.KeyID != key.ID || r.CSRF != "csrf-b" ||
		r.ExpiresAt == nil || !r.ExpiresAt.Equal(expires) || r.KeyRevoked {
		t.Fatalf("Bob's session = %+v, %v; want bob, signed in with his key, expiring with it", r, err)
	}
	if _, err := s.SessionByHash(ctx, "hash-x"); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("an unknown session = %v, want not_found", err)
	}

	// The account's and the key's state as they are now.
	if err := accounts.RevokeKey(ctx, key.ID, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := accounts.SetAdmin(ctx, bob.ID, true); err != nil { // the last enabled operator is never disabled
		t.Fatal(err)
	}
	if err := accounts.DisableAccount(ctx, alice.ID, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if r, _ := s.SessionByHash(ctx, "hash-b"); !r.KeyRevoked || r.Disabled {
		t.Fatalf("after revoking Bob's key: %+v; want key revoked, account not disabled", r)
	}
	if r, _ := s.SessionByHash(ctx, "hash-a"); !r.Disabled || r.KeyRevoked {
		t.Fatalf("after disabling Alice: %+v; want disabled", r)
	}

	// Touch moves one session's last use.
	if err := s.TouchSession(ctx, "hash-a", now.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.TouchSession(ctx, "hash-x", now); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("touching an unknown session = %v, want not_found", err)
	}
	if r, _ := s.SessionByHash(ctx, "hash-a"); !r.LastSeen.Equal(now.Add(2 * time.Hour)) {
		t.Fatalf("after Touch LastSeen = %v", r.LastSeen)
	}
	if r, _ := s.SessionByHash(ctx, "hash-b"); !r.LastSeen.Equal(now.Add(time.Minute)) {
		t.Fatalf("Touch of Alice's session moved Bob's: %v", r.LastSeen)
	}

	// The idle sweep: strictly before the cut.
	if err := s.CreateSession(ctx, "hash-c", account.Session{Principal: account.Principal{AccountID: bob.ID}, CSRF: "c",
		CreatedAt: now, LastSeen: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	n, err := s.DeleteIdleSessions(ctx, now.Add(time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("DeleteIdleSessions = %d, %v; want 1 (Bob's key session)", n, err)
	}
	if _, err := s.SessionByHash(ctx, "hash-b"); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("an idle session survived the sweep: %v", err)
	}
	for _, h := range []string{"hash-a", "hash-c"} {
		if _, err := s.SessionByHash(ctx, h); err != nil {
			t.Fatalf("the sweep took %s: %v", h, err)
		}
	}

	if err := s.DeleteSession(ctx, "hash-c"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SessionByHash(ctx, "hash-c"); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("a deleted session = %v, want not_found", err)
	}
	if err := s.DeleteSession(ctx, "hash-c"); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("deleting twice = %v, want not_found", err)
	}
	if _, err := s.SessionByHash(ctx, "hash-a"); err != nil {
		t.Fatalf("deleting one session took another: %v", err)
	}
}
