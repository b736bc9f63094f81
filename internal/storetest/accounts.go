package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/secret"
	"github.com/postline/postline/internal/store"
)

// testAccountSignIn: a password hash is one account's, read back by
// login with the account; enabling undoes disabling; the last enabled
// operator is not disabled; a key reads back by
// id with its limits.
func testAccountSignIn(t *testing.T, db *store.DB) {
	ctx := context.Background()
	s := store.NewAccounts(db)
	alice, err := s.CreateAccount(ctx, "alice", now)
	if err != nil {
		t.Fatal(err)
	}
	bob, err := s.CreateAccount(ctx, "bob", now)
	if err != nil {
		t.Fatal(err)
	}
	if a, hash, err := s.PasswordHash(ctx, "alice"); err != nil || hash != "" || a.PasswordSet || a.ID != alice.ID {
		t.Fatalf("PasswordHash before one is set = %+v, %q, %v; want none", a, hash, err)
	}
	if err := s.SetPasswordHash(ctx, alice.ID, "$argon2id$v=19$alice"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetPasswordHash(ctx, 9999, "x"); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("SetPasswordHash of a missing account = %v, want not_found", err)
	}
	a, hash, err := s.PasswordHash(ctx, "alice")
	if err != nil || hash != "$argon2id$v=19$alice" || !a.PasswordSet || a.Login != "alice" || !a.CreatedAt.Equal(now) {
		t.Fatalf("PasswordHash = %+v, %q, %v; want Alice's hash", a, hash, err)
	}
	if b, hash, err := s.PasswordHash(ctx, "bob"); err != nil || hash != "" || b.PasswordSet {
		t.Fatalf("Bob's PasswordHash = %+v, %q, %v; want none (Alice's is hers)", b, hash, err)
	}
	if _, _, err := s.PasswordHash(ctx, "carol"); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("PasswordHash of a missing login = %v, want not_found", err)
	}

	if err := s.DisableAccount(ctx, alice.ID, now); err != nil {
		t.Fatal(err)
	}
	if a, _, _ := s.PasswordHash(ctx, "alice"); a.DisabledAt == nil {
		t.Fatal("a disabled account reads as enabled")
	}
	if err := s.EnableAccount(ctx, alice.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.EnableAccount(ctx, 9999); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("EnableAccount of a missing account = %v, want not_found", err)
	}
	// The last enabled operator stays enabled; with another, it may go.
	if err := s.SetAdmin(ctx, alice.ID, true); err != nil {
		t.Fatal(err)
	}
	if err := s.DisableAccount(ctx, alice.ID, now); !errors.Is(err, account.ErrLastOperator) {
		t.Fatalf("disabling the last enabled operator = %v, want ErrLastOperator", err)
	}
	if a, _, _ := s.PasswordHash(ctx, "alice"); a.DisabledAt != nil {
		t.Fatal("the last enabled operator was disabled")
	}
	if err := s.DisableAccount(ctx, 9999, now); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("DisableAccount of a missing account = %v, want not_found", err)
	}
	if err := s.SetAdmin(ctx, bob.ID, true); err != nil {
		t.Fatal(err)
	}
	if err := s.DisableAccount(ctx, alice.ID, now); err != nil {
		t.Fatalf("disabling an operator while another is enabled: %v", err)
	}
	if err := s.DisableAccount(ctx, alice.ID, now); err != nil {
		t.Fatalf("disabling a disabled operator again: %v", err)
	}
	if err := s.EnableAccount(ctx, alice.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.SetAdmin(ctx, bob.ID, false); err != nil {
		t.Fatal(err)
	}
	if err := s.SetAdmin(ctx, alice.ID, false); err != nil {
		t.Fatal(err)
	}
	if a, err := s.AccountByLogin(ctx, "alice"); err != nil || a.DisabledAt != nil {
		t.Fatalf("after EnableAccount = %+v, %v; want enabled", a, err)
	}

	exp := now.Add(24 * time.Hour)
	k, err := s.CreateKey(ctx, account.Key{AccountID: alice.ID, Name: "ci", Prefix: "pl_k", CreatedAt: now,
		Scopes: []string{"send", "events:read"}, Domains: []string{"alice.example"}, ExpiresAt: &exp}, "khash")
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.KeyByID(ctx, k.ID)
	if err != nil || got.AccountID != alice.ID || got.Name != "ci" || got.Prefix != "pl_k" ||
		!slices.Equal(got.Scopes, []string{"send", "events:read"}) || !slices.Equal(got.Domains, []string{"alice.example"}) ||
		got.ExpiresAt == nil || !got.ExpiresAt.Equal(exp) || got.RevokedAt != nil {
		t.Fatalf("KeyByID = %+v, %v; want the key as created", got, err)
	}
	if _, err := s.KeyByID(ctx, k.ID+100); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("KeyByID of a missing key = %v, want not_found", err)
	}
}

// testDomainLookups: DomainsByName lists every account's claim on a name,
// oldest first; HostHolder names the account that verified a host (the
// domain, its tracking or its authentication host), and none for an
// unverified claim.
func testDomainLookups(t *testing.T, db *store.DB) {
	ctx := context.Background()
	a, d1 := NewDomainRow(t, db, "alice", "shared.example")
	b, d2 := NewDomainRow(t, db, "bob", "bob.example")
	box, _ := secret.NewBox(make([]byte, 32)) // NewDomainRow's
	s := store.NewDomains(db, box)
	d3, err := s.CreateDomain(ctx, domain.Domain{AccountID: b.ID, Name: "shared.example", CreatedAt: now,
		DKIMSelector: "s", DKIMPrivateKey: []byte("k"), DKIMPublicKey: "p", Delivery: domain.Delivery{Mode: domain.ModeDirect}})
	if err != nil {
		t.Fatal(err)
	}
	list, err := s.DomainsByName(ctx, "shared.example")
	if err != nil || len(list) != 2 || list[0].ID != d1.ID || list[0].AccountID != a.ID || list[1].ID != d3.ID || list[1].AccountID != b.ID {
		t.Fatalf("DomainsByName = %+v, %v; want Alice's claim then Bob's", list, err)
	}
	if list, err := s.DomainsByName(ctx, "nobody.example"); err != nil || len(list) != 0 {
		t.Fatalf("DomainsByName of an unclaimed name = %+v, %v", list, err)
	}

	for _, h := range []string{"shared.example", "t.bob.example"} {
		if id, err := s.HostHolder(ctx, h); err != nil || id != 0 {
			t.Fatalf("HostHolder(%s) with no verified domain = %d, %v; want 0", h, id, err)
		}
	}
	v := now
	d2.VerifiedAt, d2.TrackingDomain, d2.AuthDomain = &v, "t.bob.example", "a.bob.example"
	if err := s.UpdateDomain(ctx, d2); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"bob.example", "t.bob.example", "a.bob.example"} {
		if id, err := s.HostHolder(ctx, h); err != nil || id != b.ID {
			t.Fatalf("HostHolder(%s) = %d, %v; want Bob (%d)", h, id, err, b.ID)
		}
	}
	if id, _ := s.HostHolder(ctx, "shared.example"); id != 0 {
		t.Fatalf("HostHolder of a name only claimed = %d, want 0", id)
	}
}
