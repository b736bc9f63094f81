package storetest

import (
	"context"
	"testing"

	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/suppression"
)

// testSuppressionFeeds: DeleteAll empties one list of one domain (of one
// source when named) and moves the removal counter only when it removed
// something; Bounces and SuppressionKeys page through the entries in id
// order, Bounces only email bounces, with their domain's account.
func testSuppressionFeeds(t *testing.T, db *store.DB) {
	ctx := context.Background()
	s := store.NewSuppressions(db)
	meta := store.NewMeta(db)
	alice, d := NewDomainRow(t, db, "alice", "alice.example")
	bob, other := NewDomainRow(t, db, "bob", "bob.example")
	api, bounce := "api", "bounce:5.1.1"
	add := func(dom int64, typ suppression.Type, rt suppression.RecipientType, r string, src *string) suppression.Entry {
		t.Helper()
		e, _, err := s.Add(ctx, suppression.Entry{DomainID: dom, Type: typ, RecipientType: rt, Recipient: r, Source: src, CreatedAt: now})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	e1 := add(d.ID, suppression.Bounce, suppression.Email, "a@x.example", &bounce)
	add(d.ID, suppression.Bounce, suppression.Domain, "x.example", &api)
	e3 := add(other.ID, suppression.Bounce, suppression.Email, "b@x.example", &bounce)
	add(d.ID, suppression.Unsubscribe, suppression.Email, "c@x.example", &api)
	e5 := add(d.ID, suppression.Bounce, suppression.Email, "d@x.example", &api)

	// Bounces: email bounces of every domain, with the account, in pages.
	page, err := s.Bounces(ctx, 0, 2)
	if err != nil || len(page) != 2 || page[0] != (store.BounceRow{ID: e1.ID, AccountID: alice.ID, Recipient: "a@x.example"}) ||
		page[1] != (store.BounceRow{ID: e3.ID, AccountID: bob.ID, Recipient: "b@x.example"}) {
		t.Fatalf("Bounces(0, 2) = %+v, %v; want a@ (Alice's) and b@ (Bob's), not the domain entry", page, err)
	}
	page, _ = s.Bounces(ctx, page[1].ID, 10)
	if len(page) != 1 || page[0].ID != e5.ID {
		t.Fatalf("Bounces after %d = %+v; want only d@ (no unsubscribe)", e3.ID, page)
	}
	keys, err := s.SuppressionKeys(ctx, e1.ID, 3)
	if err != nil || len(keys) != 3 || keys[0].Recipient != "x.example" || keys[1].DomainID != other.ID || keys[2].Recipient != "c@x.example" {
		t.Fatalf("SuppressionKeys(after %d, 3) = %+v, %v; want the next three of every type, in id order", e1.ID, keys, err)
	}

	// DeleteAll: Alice's bounces from one source, then all of them.
	before, _ := meta.Counter(ctx, store.MetaSuppressionsRemoved)
	n, err := s.DeleteAll(ctx, d.ID, suppression.Bounce, api)
	if err != nil || n != 2 {
		t.Fatalf("DeleteAll(alice, bounce, api) = %d, %v; want 2 (x.example, d@)", n, err)
	}
	if after, _ := meta.Counter(ctx, store.MetaSuppressionsRemoved); after != before+1 {
		t.Fatalf("removal counter %d after a DeleteAll, want %d", after, before+1)
	}
	if n, err := s.DeleteAll(ctx, d.ID, suppression.Whitelist, ""); err != nil || n != 0 {
		t.Fatalf("DeleteAll of an empty list = %d, %v", n, err)
	}
	if after, _ := meta.Counter(ctx, store.MetaSuppressionsRemoved); after != before+1 {
		t.Fatal("a DeleteAll that removed nothing moved the removal counter")
	}
	if n, _ := s.DeleteAll(ctx, d.ID, suppression.Bounce, ""); n != 1 {
		t.Fatalf("DeleteAll(alice, bounce) = %d; want the last one, a@", n)
	}
	left, _ := s.Matching(ctx, d.ID, []string{"a@x.example", "c@x.example"})
	if len(left) != 1 || left[0].Type != suppression.Unsubscribe {
		t.Fatalf("Alice's entries after DeleteAll(bounce) = %+v; want her unsubscribe alone", left)
	}
	if got, _ := s.Matching(ctx, other.ID, []string{"b@x.example"}); len(got) != 1 {
		t.Fatal("Alice's DeleteAll took Bob's bounce")
	}
}
