package storetest

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/dnsclient"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/secret"
	"github.com/postline/postline/internal/store"
)

// readCounter counts the reads of an account's domain that reach the store.
type readCounter struct {
	domain.Store
	reads atomic.Int64
}

func (r *readCounter) AccountDomain(ctx context.Context, accountID int64, name string) (domain.Domain, error) {
	r.reads.Add(1)
	return r.Store.AccountDomain(ctx, accountID, name)
}

// testOwnedCache: an account's domain read again comes from memory; a
// change made through the same service is seen at once, one made by
// another process (another service on the database) within the lifetime.
func testOwnedCache(t *testing.T, db *store.DB) {
	ctx := context.Background()
	box, _ := secret.NewBox(bytes.Repeat([]byte{7}, 32))
	const ttl = 300 * time.Millisecond
	rc := &readCounter{Store: store.NewDomains(db, box)}
	svc := domain.NewService(rc, nil, domain.Config{DKIMKeyBits: 1024, OwnedCacheTTL: ttl})
	other := domain.NewService(store.NewDomains(db, box), nil, domain.Config{DKIMKeyBits: 1024})
	a, err := store.NewAccounts(db).CreateAccount(ctx, "owner", now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Owned(ctx, a.ID, "cached.example"); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("before it exists: %v, want not found", err)
	}
	// Added by another process right after a miss: found at once (misses are not kept).
	if _, err := other.Add(ctx, domain.AddParams{AccountID: a.ID, Name: "cached.example", Delivery: domain.Delivery{Mode: domain.ModeDirect}}); err != nil {
		t.Fatal(err)
	}
	d, err := svc.Owned(ctx, a.ID, "Cached.Example")
	if err != nil {
		t.Fatalf("added by another process, then read: %v", err)
	}
	reads := rc.reads.Load()
	for range 5 {
		if _, err := svc.Owned(ctx, a.ID, "cached.example"); err != nil {
			t.Fatal(err)
		}
	}
	if got := rc.reads.Load(); got != reads {
		t.Fatalf("5 more reads reached the store %d times, want 0", got-reads)
	}

	// Changed through this service: the next read shows it.
	if _, err := svc.SetTrackingOptions(ctx, d, domain.Tracking{Opens: true}); err != nil {
		t.Fatal(err)
	}
	if got, err := svc.Owned(ctx, a.ID, "cached.example"); err != nil || !got.Tracking.Opens {
		t.Fatalf("after this service's change: opens %v, %v; want true at once", got.Tracking.Opens, err)
	}

	// Verified by another process while this one holds an unverified
	// copy: a change made here from that copy keeps the verification.
	stale, err := svc.Owned(ctx, a.ID, "cached.example")
	if err != nil || stale.Verified() {
		t.Fatalf("before verification: verified %v, %v", stale.Verified(), err)
	}
	fresh, err := other.Owned(ctx, a.ID, "cached.example")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := other.Verify(ctx, fresh, true); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.SetTrackingOptions(ctx, stale, domain.Tracking{Clicks: true}); err != nil {
		t.Fatal(err)
	}
	if got, err := other.Owned(ctx, a.ID, "cached.example"); err != nil || !got.Verified() || !got.Tracking.Clicks {
		t.Fatalf("after a change from a copy older than another process's verification: verified %v, clicks %v, %v; want both",
			got.Verified(), got.Tracking.Clicks, err)
	}

	// Removed by another process: gone within the lifetime.
	if err := other.Remove(ctx, d); err != nil {
		t.Fatal(err)
	}
	removed := time.Now()
	for {
		_, err := svc.Owned(ctx, a.ID, "cached.example")
		if apperr.CodeOf(err) == apperr.NotFound {
			break
		}
		if time.Since(removed) > ttl+200*time.Millisecond {
			t.Fatalf("still served %s after another process removed it (lifetime %s): %v", time.Since(removed), ttl, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// noRecords answers every DNS lookup with nothing (verification fails),
// running during, when set, at the first lookup: what happens elsewhere
// while a verification waits for DNS.
type noRecords struct{ during *func() }

func (r noRecords) LookupTXT(context.Context, string) ([]string, error) {
	if f := *r.during; f != nil {
		*r.during = nil
		f()
	}
	return nil, nil
}
func (r noRecords) LookupCNAME(ctx context.Context, name string) (string, error) {
	_, err := r.LookupTXT(ctx, name)
	return "", err
}
func (r noRecords) LookupMX(ctx context.Context, name string) ([]dnsclient.MX, error) {
	_, err := r.LookupTXT(ctx, name)
	return nil, err
}

// testVerifyWritesVerificationOnly: a verification that fails (or succeeds)
// writes the verification alone, from whatever copy it started: a claim
// another account ended meanwhile stays ended, and a setting changed
// meanwhile stays changed.
func testVerifyWritesVerificationOnly(t *testing.T, db *store.DB) {
	ctx := context.Background()
	box, _ := secret.NewBox(bytes.Repeat([]byte{7}, 32))
	var during func()
	svc := domain.NewService(store.NewDomains(db, box), noRecords{&during}, domain.Config{DKIMKeyBits: 1024})
	accounts := store.NewAccounts(db)
	alice, err := accounts.CreateAccount(ctx, "v-alice", now)
	if err != nil {
		t.Fatal(err)
	}
	bob, err := accounts.CreateAccount(ctx, "v-bob", now)
	if err != nil {
		t.Fatal(err)
	}
	add := func(accountID int64) domain.Domain {
		t.Helper()
		d, err := svc.Add(ctx, domain.AddParams{AccountID: accountID, Name: "contested.example", Delivery: domain.Delivery{Mode: domain.ModeDirect}})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	da, dbob := add(alice.ID), add(bob.ID)
	// While Alice's verification waits for DNS (which then fails), Bob
	// verifies: her claim ends.
	during = func() {
		if _, _, err := svc.Verify(ctx, dbob, true); err != nil {
			t.Error(err)
		}
	}
	if _, _, err := svc.Verify(ctx, da, false); err != nil {
		t.Fatalf("a failed verification: %v", err)
	}
	if got, err := svc.ByID(ctx, da.ID); err != nil || got.ClaimStatus() != domain.ClaimEnded {
		t.Fatalf("after a failed verification from an older copy: claim %s, %v; want it still ended", got.ClaimStatus(), err)
	}
	// A domain whose secrets did not open is not changed (503).
	unreadable := dbob
	unreadable.Unreadable = "the DKIM key cannot be decrypted"
	if err := store.NewDomains(db, box).VerifyDomain(ctx, unreadable, "x"); apperr.CodeOf(err) != apperr.Unavailable {
		t.Fatalf("verifying an unreadable domain: %v, want unavailable", err)
	}
	// Had her DNS checks passed, the store refuses to verify an ended claim.
	at := now
	da.VerifiedAt = &at
	if err := store.NewDomains(db, box).VerifyDomain(ctx, da, "x"); apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("verifying a claim that ended meanwhile: %v, want conflict", err)
	}

	// Bob changes a setting; his verification, from a copy before it, keeps it.
	old, _ := svc.ByID(ctx, dbob.ID)
	if _, err := svc.SetTrackingOptions(ctx, old, domain.Tracking{Clicks: true}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := svc.Verify(ctx, old, true); err != nil {
		t.Fatal(err)
	}
	if got, _ := svc.ByID(ctx, dbob.ID); !got.Tracking.Clicks || !got.Verified() {
		t.Fatalf("after verifying from a copy older than a settings change: clicks %v verified %v; want both", got.Tracking.Clicks, got.Verified())
	}
}
