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
