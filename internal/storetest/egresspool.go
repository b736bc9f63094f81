package storetest

import (
	"context"
	"testing"

	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/secret"
	"github.com/postline/postline/internal/store"
)

// testDomainEgressPool: a domain's egress pool is kept by create and
// update and read back by every lookup.
func testDomainEgressPool(t *testing.T, db *store.DB) {
	ctx := context.Background()
	a, _ := NewDomainRow(t, db, "alice", "alice.example")
	box, _ := secret.NewBox(make([]byte, 32)) // NewDomainRow's
	s := store.NewDomains(db, box)
	d, err := s.CreateDomain(ctx, domain.Domain{AccountID: a.ID, Name: "pooled.example", CreatedAt: now,
		DKIMSelector: "s", DKIMPrivateKey: []byte("k"), DKIMPublicKey: "p",
		Delivery: domain.Delivery{Mode: domain.ModeDirect, Pool: "warm"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.DomainByID(ctx, d.ID); err != nil || got.Delivery.Pool != "warm" {
		t.Fatalf("pool after create = %q, %v; want warm", got.Delivery.Pool, err)
	}
	d.Delivery.Pool = "main"
	if err := s.UpdateDomain(ctx, d); err != nil {
		t.Fatal(err)
	}
	if got, err := s.AccountDomain(ctx, a.ID, "pooled.example"); err != nil || got.Delivery.Pool != "main" {
		t.Fatalf("pool after update = %q, %v; want main", got.Delivery.Pool, err)
	}
	if list, err := s.ListDomains(ctx, a.ID); err != nil || len(list) != 2 || list[0].Delivery.Pool != "" || list[1].Delivery.Pool != "main" {
		t.Fatalf("ListDomains = %+v, %v; want alice.example without a pool, pooled.example in main", list, err)
	}
}

// testAccountEgressPool: an account's egress pool is kept, read back by
// every account lookup, and read with each of its domains as their
// AccountPool (the default of those that name none).
func testAccountEgressPool(t *testing.T, db *store.DB) {
	ctx := context.Background()
	a, d := NewDomainRow(t, db, "alice", "alice.example")
	other, _ := NewDomainRow(t, db, "bob", "bob.example")
	accounts := store.NewAccounts(db)
	if a.Pool != "" {
		t.Fatalf("a new account's pool = %q, want none", a.Pool)
	}
	if err := accounts.SetAccountPool(ctx, a.ID, "main"); err != nil {
		t.Fatal(err)
	}
	if err := accounts.SetAccountPool(ctx, -1, "main"); err == nil {
		t.Error("SetAccountPool of a missing account succeeded")
	}
	if got, err := accounts.AccountByLogin(ctx, "alice"); err != nil || got.Pool != "main" {
		t.Fatalf("AccountByLogin pool = %q, %v; want main", got.Pool, err)
	}
	if got, _, err := accounts.PasswordHash(ctx, "alice"); err != nil || got.Pool != "main" {
		t.Fatalf("PasswordHash's account pool = %q, %v; want main", got.Pool, err)
	}
	list, err := accounts.ListAccounts(ctx)
	if err != nil || len(list) != 2 || list[0].Pool != "main" || list[1].Pool != "" {
		t.Fatalf("ListAccounts = %+v, %v; want alice in main, bob in none", list, err)
	}
	box, _ := secret.NewBox(make([]byte, 32)) // NewDomainRow's
	s := store.NewDomains(db, box)
	got, err := s.DomainByID(ctx, d.ID)
	if err != nil || got.AccountPool != "main" || got.Delivery.Pool != "" || got.EgressPool() != "main" {
		t.Fatalf("alice.example: account pool %q, own %q, effective %q, %v; want main, none, main",
			got.AccountPool, got.Delivery.Pool, got.EgressPool(), err)
	}
	got.Delivery.Pool = "warm" // the domain's own wins
	if err := s.UpdateDomain(ctx, got); err != nil {
		t.Fatal(err)
	}
	if got, err := s.AccountDomain(ctx, a.ID, "alice.example"); err != nil || got.AccountPool != "main" || got.EgressPool() != "warm" {
		t.Fatalf("after the domain names warm: account pool %q, effective %q, %v", got.AccountPool, got.EgressPool(), err)
	}
	if ds, err := s.DomainsByName(ctx, "bob.example"); err != nil || len(ds) != 1 || ds[0].AccountID != other.ID || ds[0].AccountPool != "" {
		t.Fatalf("bob.example = %+v, %v; want bob's, without a pool", ds, err)
	}
	if err := accounts.SetAccountPool(ctx, a.ID, ""); err != nil {
		t.Fatal(err)
	}
	if ds, err := s.ListDomains(ctx, a.ID); err != nil || len(ds) != 1 || ds[0].AccountPool != "" {
		t.Fatalf("ListDomains after clearing = %+v, %v; want no account pool", ds, err)
	}
}
