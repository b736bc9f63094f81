package storetest

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/postline/postline/internal/apperr"
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
