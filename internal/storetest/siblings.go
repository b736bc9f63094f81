package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/postline/postline/internal/sending"
	"github.com/postline/postline/internal/store"
)

// testClaimSiblings: ClaimSiblings takes only due, waiting deliveries of
// the send and Message-ID, at the domain (in any case) or at any domain
// for "", oldest id first, up to the limit, leased to the owner with an
// attempt counted; a claimed one is not claimed again.
func testClaimSiblings(t *testing.T, db *store.DB) {
	ctx := context.Background()
	s := store.NewSending(db)
	a, d := NewDomainRow(t, db, "alice", "alice.example")
	m := time.Minute
	var ds []sending.Delivery
	for i, rcpt := range []string{"a@y.example", "b@Y.Example", "c@z.example", "d@y.example", "e@y.example", "f@y.example"} {
		at := now.Add(-m)
		if i == 4 {
			at = now.Add(time.Hour) // not due
		}
		msgID := "one@alice.example"
		if i == 5 {
			msgID = "other@alice.example" // another copy's Message-ID
		}
		ds = append(ds, sending.Delivery{DomainID: d.ID, MessageID: msgID, Recipient: rcpt, NextAttemptAt: at, CreatedAt: now})
	}
	snd := &sending.Send{DomainID: d.ID, AccountID: a.ID, From: "a@alice.example", Subject: "hi", CreatedAt: now}
	if err := s.Enqueue(ctx, snd, nil, ds, noEntries); err != nil {
		t.Fatal(err)
	}
	other := enqueue(t, db, a.ID, d.ID, now, now.Add(-m)) // another send, at y.example too

	f := sending.Siblings{SendID: snd.ID, MessageID: "one@alice.example", Domain: "y.example"}
	got, err := s.ClaimSiblings(ctx, "w1", now, now.Add(m), f, 1)
	if err != nil || len(got) != 1 || got[0].ID != ds[0].ID {
		t.Fatalf("ClaimSiblings(limit 1) = %+v, %v; want a@y.example alone", got, err)
	}
	if got[0].State != sending.StateSending || got[0].Attempts != 1 || got[0].SendID != snd.ID || got[0].Sender != "a@alice.example" {
		t.Errorf("claimed %+v, want sending, attempt 1, with its send's fields", got[0])
	}
	got, err = s.ClaimSiblings(ctx, "w1", now, now.Add(m), f, 10)
	if err != nil || fmt.Sprint(deliveryIDs(got)) != fmt.Sprint([]int64{ds[1].ID, ds[3].ID}) {
		t.Fatalf("ClaimSiblings at y.example = %+v, %v; want b@Y.Example and d@y.example (due, same message)", got, err)
	}
	got, err = s.ClaimSiblings(ctx, "w1", now, now.Add(m), sending.Siblings{SendID: snd.ID, MessageID: "one@alice.example"}, 10)
	if err != nil || len(got) != 1 || got[0].ID != ds[2].ID {
		t.Fatalf("ClaimSiblings at any domain = %+v, %v; want only c@z.example left", got, err)
	}
	if got, err := s.Claim(ctx, "w2", now, now.Add(m), 10, noEntries); err != nil || len(got) != 2 ||
		fmt.Sprint(deliveryIDs(got)) != fmt.Sprint([]int64{ds[5].ID, other[0].ID}) {
		t.Errorf("Claim after the siblings = %+v, %v; want the other Message-ID's and the other send's only", got, err)
	} else if got[0].Later || got[1].Later {
		// f@y.example is its send's last delivery, the other send has one.
		t.Errorf("claimed %+v: Later set on a send's last delivery", got)
	}
	if got, err := s.ClaimSiblings(ctx, "w1", now.Add(2*time.Hour), now.Add(3*time.Hour), sending.Siblings{SendID: snd.ID, MessageID: "one@alice.example"}, 10); err != nil ||
		len(got) != 1 || got[0].ID != ds[4].ID || !got[0].Later {
		t.Errorf("ClaimSiblings of e@y.example (f@ comes after it in its send) = %+v, %v; want it with Later set", got, err)
	}
	if got, err := s.ClaimSiblings(ctx, "w1", now, now.Add(m), f, 0); err != nil || len(got) != 0 {
		t.Errorf("ClaimSiblings(limit 0) = %+v, %v; want nothing", got, err)
	}
}
