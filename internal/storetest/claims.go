package storetest

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/secret"
	"github.com/postline/postline/internal/store"
)

// testDomainClaims: an unverified claim reserves nothing; the first
// account to verify owns the name, the other claims end, unverified claims
// expire, and nothing said to an account names another.
func testDomainClaims(t *testing.T, db *store.DB) {
	ctx := context.Background()
	box, _ := secret.NewBox(bytes.Repeat([]byte{7}, 32))
	clock := now
	svc := domain.NewService(store.NewDomains(db, box), nil, domain.Config{DKIMKeyBits: 1024, Now: func() time.Time { return clock }})
	accounts := store.NewAccounts(db)
	ids := map[string]int64{}
	for _, login := range []string{"alice", "bob", "carol", "dave"} {
		a, err := accounts.CreateAccount(ctx, login, now)
		if err != nil {
			t.Fatal(err)
		}
		ids[login] = a.ID
	}
	add := func(login, name string) (domain.Domain, error) {
		return svc.Add(ctx, domain.AddParams{AccountID: ids[login], Name: name, Delivery: domain.Delivery{Mode: domain.ModeDirect}})
	}
	da, err := add("alice", "example.org")
	if err != nil {
		t.Fatal(err)
	}
	db2, err := add("bob", "Example.org")
	if err != nil {
		t.Fatalf("a second account's claim on an unverified name: %v, want it accepted", err)
	}
	if string(da.DKIMPrivateKey) == string(db2.DKIMPrivateKey) {
		t.Fatal("two claims share a DKIM key: each must have its own verification record")
	}
	if _, err := add("bob", "example.org"); apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("the same account claiming twice: %v, want conflict", err)
	}
	if da.ClaimStatus() != domain.ClaimPending || da.ClaimExpiresAt == nil || !da.ClaimExpiresAt.Equal(now.Add(72*time.Hour)) {
		t.Fatalf("new claim: status %s, expires %v; want pending, 72 h from now", da.ClaimStatus(), da.ClaimExpiresAt)
	}

	// Bob verifies first: he owns the name, Alice's claim ends.
	db2, _, err = svc.Verify(ctx, db2, true)
	if err != nil {
		t.Fatal(err)
	}
	if db2.ClaimStatus() != domain.ClaimVerified || db2.ClaimExpiresAt != nil {
		t.Fatalf("after verify: %s, expires %v", db2.ClaimStatus(), db2.ClaimExpiresAt)
	}
	da, err = svc.Owned(ctx, ids["alice"], "example.org")
	if err != nil {
		t.Fatalf("Alice's ended claim: %v, want it readable (its next read says it ended)", err)
	}
	if da.ClaimStatus() != domain.ClaimEnded {
		t.Fatalf("Alice's claim after Bob verified: %s, want ended", da.ClaimStatus())
	}
	for what, err := range map[string]error{
		"verify":   second(svc.Verify(ctx, da, true)),
		"tracking": second2(svc.SetTrackingOptions(ctx, da, domain.Tracking{Opens: true})),
	} {
		if apperr.CodeOf(err) != apperr.Conflict || !strings.Contains(err.Error(), "ended") || strings.Contains(err.Error(), "bob") {
			t.Fatalf("%s on an ended claim: %v, want a conflict saying it ended, naming no account", what, err)
		}
	}
	_, err = add("carol", "example.org")
	if apperr.CodeOf(err) != apperr.Conflict || !strings.Contains(err.Error(), "verified by another account") || strings.Contains(err.Error(), "bob") {
		t.Fatalf("claiming a name another account verified: %v", err)
	}
	// Alice may replace her ended claim only once the name is free again.
	if _, err := add("alice", "example.org"); apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("re-adding while Bob holds it: %v", err)
	}

	// Hosts: a verified tracking host is Bob's alone.
	db2, err = svc.SetTracking(ctx, db2, "t.example.org")
	if err != nil {
		t.Fatal(err)
	}
	dc, err := add("carol", "shop.example.org")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.SetTracking(ctx, dc, "t.example.org"); err == nil {
		t.Fatal("a host outside the domain accepted")
	}
	dd, err := add("dave", "t.example.org")
	if apperr.CodeOf(err) != apperr.Conflict || strings.Contains(err.Error(), "bob") {
		t.Fatalf("claiming another account's verified tracking host as a domain: %v, %+v", err, dd)
	}

	// Two accounts verifying at once: exactly one wins.
	c1, err := add("carol", "race.example")
	if err != nil {
		t.Fatal(err)
	}
	c2, err := add("dave", "race.example")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, d := range []domain.Domain{c1, c2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, errs[i] = svc.Verify(ctx, d, true)
		}()
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		if err == nil {
			won++
		} else if apperr.CodeOf(err) != apperr.Conflict {
			t.Fatalf("the loser of a verify race: %v, want conflict", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d accounts verified race.example at once, want exactly 1 (%v)", won, errs)
	}

	// Expiry: past its time an unverified claim is gone, and swept.
	if _, err := add("dave", "slow.example"); err != nil {
		t.Fatal(err)
	}
	clock = now.Add(72 * time.Hour)
	if _, err := svc.Owned(ctx, ids["dave"], "slow.example"); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("an expired claim: %v, want not found", err)
	}
	n, err := svc.DeleteExpiredClaims(ctx)
	if err != nil || n < 1 {
		t.Fatalf("DeleteExpiredClaims = %d, %v", n, err)
	}
	if _, err := svc.Owned(ctx, ids["bob"], "example.org"); err != nil {
		t.Fatalf("a verified domain swept with the expired claims: %v", err)
	}
	if _, err := add("dave", "slow.example"); err != nil {
		t.Fatalf("claiming again after expiry: %v", err)
	}
}

func second[A, B any](_ A, _ B, err error) error { return err }
func second2[A any](_ A, err error) error        { return err }
