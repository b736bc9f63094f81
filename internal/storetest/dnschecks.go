package storetest

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/secret"
	"github.com/postline/postline/internal/store"
)

// testDomainDNSChecks: a failed DNS check never unverifies a domain (it
// is stored and shown as records changed since verification), a claim
// never verified keeps its expiry, and the daily re-check takes verified
// domains the longest unchecked first, a few at a time.
func testDomainDNSChecks(t *testing.T, db *store.DB) {
	ctx := context.Background()
	box, _ := secret.NewBox(bytes.Repeat([]byte{7}, 32))
	clock := now
	var during func()
	st := store.NewDomains(db, box)
	svc := domain.NewService(st, noRecords{&during}, domain.Config{DKIMKeyBits: 1024, Now: func() time.Time { return clock }})
	acc, err := store.NewAccounts(db).CreateAccount(ctx, "dns-alice", now)
	if err != nil {
		t.Fatal(err)
	}
	add := func(name string) domain.Domain {
		t.Helper()
		d, err := svc.Add(ctx, domain.AddParams{AccountID: acc.ID, Name: name, Delivery: domain.Delivery{Mode: domain.ModeDirect}})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	forced := add("forced.example")
	if forced, _, err = svc.Verify(ctx, forced, true); err != nil || !forced.Verified() {
		t.Fatalf("forced verification: %v", err)
	}
	// Verify now with nothing published: it stays verified, the check is kept.
	clock = clock.Add(time.Hour)
	got, _, err := svc.Verify(ctx, forced, false)
	if err != nil || !got.Verified() || !got.RecordsChanged() {
		t.Fatalf("a failed check of a verified domain: verified %v, records changed %v, %v; want it still verified", got.Verified(), got.RecordsChanged(), err)
	}
	stored, err := svc.ByID(ctx, forced.ID)
	if err != nil || !stored.Verified() || stored.ClaimStatus() != domain.ClaimVerified || stored.ClaimExpiresAt != nil ||
		stored.DNSCheck == nil || stored.DNSCheck.OK || !stored.DNSCheck.At.Equal(clock) || stored.DNSCheck.Statuses["dkim"] != domain.StatusMissing {
		t.Fatalf("stored after the failed check: %+v check %+v, %v; want verified, no expiry, the failed check kept", stored, stored.DNSCheck, err)
	}
	for _, r := range svc.CheckedRecords(stored) {
		if r.Status != domain.StatusMissing {
			t.Errorf("record %s shown as %q after the check, want missing", r.Purpose, r.Status)
		}
	}
	// Forcing again clears the failed check.
	if _, _, err := svc.Verify(ctx, stored, true); err != nil {
		t.Fatal(err)
	}
	if stored, _ = svc.ByID(ctx, forced.ID); stored.DNSCheck != nil || stored.RecordsChanged() {
		t.Fatalf("after forcing again: check %+v, want none", stored.DNSCheck)
	}

	// A claim never verified stays pending with its expiry.
	pending := add("pending.example")
	got, _, err = svc.Verify(ctx, pending, false)
	if stored, _ := svc.ByID(ctx, pending.ID); err != nil || got.Verified() || stored.ClaimStatus() != domain.ClaimPending ||
		stored.ClaimExpiresAt == nil || !stored.ClaimExpiresAt.Equal(*pending.ClaimExpiresAt) || stored.DNSCheck == nil || stored.RecordsChanged() {
		t.Fatalf("a failed check of a new claim: %+v, %v; want pending, its expiry kept, the check kept", stored, err)
	}

	// The re-check: verified domains only, the longest unchecked first.
	other := add("other.example")
	clock = clock.Add(time.Minute)
	if _, _, err := svc.Verify(ctx, other, true); err != nil { // verified at clock, never checked
		t.Fatal(err)
	}
	clock = clock.Add(25 * time.Hour)
	due, err := st.DueForCheck(ctx, clock.Add(-24*time.Hour), 10)
	if err != nil || len(due) != 2 || due[0].Name != "forced.example" || due[1].Name != "other.example" {
		t.Fatalf("due for a check: %v, %v; want forced.example (verified longest ago), other.example", names(due), err)
	}
	if due, err := st.DueForCheck(ctx, clock.Add(-24*time.Hour), 1); err != nil || len(due) != 1 {
		t.Fatalf("due with limit 1: %v, %v", names(due), err)
	}
	n, err := svc.RecheckDue(ctx, 24*time.Hour)
	if err != nil || n != 2 {
		t.Fatalf("RecheckDue: %d, %v; want 2", n, err)
	}
	for _, id := range []int64{forced.ID, other.ID} {
		if d, _ := svc.ByID(ctx, id); !d.Verified() || !d.RecordsChanged() || !d.DNSCheck.At.Equal(clock) {
			t.Errorf("%s after the re-check: verified %v, records changed %v, check %+v", d.Name, d.Verified(), d.RecordsChanged(), d.DNSCheck)
		}
	}
	if due, err := st.DueForCheck(ctx, clock.Add(-24*time.Hour), 10); err != nil || len(due) != 0 {
		t.Fatalf("due right after the re-check: %v, %v; want none", names(due), err)
	}
	// A check cleared (a forced verification) leaves the verification's time.
	if err := st.SaveDNSCheck(ctx, other.ID, nil); err != nil {
		t.Fatal(err)
	}
	if due, err := st.DueForCheck(ctx, clock.Add(-24*time.Hour), 10); err != nil || len(due) != 1 || due[0].DNSCheck != nil {
		t.Fatalf("due after clearing other.example's check: %v, %v; want it alone, with no check", names(due), err)
	}
}

func names(ds []domain.Domain) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Name
	}
	return out
}
