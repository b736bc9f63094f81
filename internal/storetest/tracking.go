package storetest

import (
	"context"
	"testing"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/secret"
	"github.com/postline/postline/internal/sending"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/suppression"
	"github.com/postline/postline/internal/tracking"
)

func testTracking(t *testing.T, db *store.DB) {
	ctx := context.Background()
	a, dom := NewDomainRow(t, db, "tracker", "track.example")
	snd := sending.Send{DomainID: dom.ID, AccountID: a.ID, From: "a@track.example", Subject: "Hello", Text: "t",
		HTML: `<a href="https://x.example/">x</a>`, Tags: "welcome", CreatedAt: now}
	ds := []sending.Delivery{{DomainID: dom.ID, MessageID: "m1@track.example", Recipient: "Bob@Example.org",
		NextAttemptAt: now, CreatedAt: now}}
	if err := store.NewSending(db).Enqueue(ctx, &snd, nil, ds, func([]sending.Delivery) []event.Entry { return nil }); err != nil {
		t.Fatal(err)
	}
	s := store.NewTracking(db)
	tg, err := s.Target(ctx, ds[0].ID)
	if err != nil || tg.DomainID != dom.ID || tg.MessageID != "m1@track.example" || tg.Sender != "a@track.example" ||
		tg.Subject != "Hello" || tg.Tags != "welcome" || tg.Recipient != "Bob@Example.org" {
		t.Fatalf("Target = %+v, %v", tg, err)
	}
	if _, err := s.Target(ctx, ds[0].ID+1000); apperr.CodeOf(err) != apperr.NotFound {
		t.Errorf("Target(missing) error = %v, want NotFound", err)
	}
	if html, err := s.SendHTML(ctx, snd.ID); err != nil || html != snd.HTML {
		t.Errorf("SendHTML = %q, %v", html, err)
	}

	record := func(col tracking.Column, typ event.Type, supp *suppression.Entry) bool {
		t.Helper()
		first, err := s.Record(ctx, tracking.Mark{DeliveryID: tg.DeliveryID, Column: col, At: now, Suppression: supp,
			Entries: func(first bool) []event.Entry {
				return []event.Entry{tg.Entry(typ, now, map[string]any{"first": first})}
			}})
		if err != nil {
			t.Fatalf("Record(%s): %v", col, err)
		}
		return first
	}
	if !record(tracking.OpenedAt, event.Opened, nil) || record(tracking.OpenedAt, event.Opened, nil) {
		t.Error("the first open was not first, or the second was")
	}
	if record(tracking.NoMark, event.Opened, nil) || !record(tracking.ClickedAt, event.Clicked, nil) {
		t.Error("an unmarked open was first, or the first click was not")
	}
	src, why := "link", "550 5.7.1 reported as spam"
	unsub := &suppression.Entry{DomainID: dom.ID, Type: suppression.Unsubscribe, RecipientType: suppression.Email,
		Recipient: "bob@example.org", Source: &src, Description: &why, CreatedAt: now}
	if !record(tracking.UnsubscribedAt, event.Unsubscribed, unsub) || record(tracking.UnsubscribedAt, event.Unsubscribed, unsub) {
		t.Error("unsubscribe first flags wrong")
	}
	got, err := store.NewSuppressions(db).Matching(ctx, dom.ID, []string{"bob@example.org"})
	if err != nil || len(got) != 1 || got[0].Type != suppression.Unsubscribe || *got[0].Source != "link" ||
		got[0].Description == nil || *got[0].Description != why {
		t.Errorf("suppressions after two unsubscribes = %+v, %v; want one unsubscribe", got, err)
	}
	list, err := store.NewEvents(db).List(ctx, event.Filter{DomainID: dom.ID, Limit: 100})
	if err != nil || len(list) != 6 {
		t.Fatalf("events = %d, %v; want 6", len(list), err)
	}
	for _, e := range list {
		if e.MessageID != "m1@track.example" || e.Recipient != "Bob@Example.org" {
			t.Errorf("entry %+v lost its delivery's fields", e)
		}
	}

	// A bounce report after delivery moves the delivery to bounced.
	if _, err := db.Writer().ExecContext(ctx, `UPDATE deliveries SET state = 'delivered' WHERE id = $1`, tg.DeliveryID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Record(ctx, tracking.Mark{DeliveryID: tg.DeliveryID, At: now, Bounced: true,
		Entries: func(bool) []event.Entry { return nil }}); err != nil {
		t.Fatal(err)
	}
	if tg, _ = s.Target(ctx, tg.DeliveryID); tg.State != sending.StateBounced {
		t.Errorf("state after bounce report = %s, want bounced", tg.State)
	}
	if _, err := s.Record(ctx, tracking.Mark{DeliveryID: tg.DeliveryID, Column: "state", At: now,
		Entries: func(bool) []event.Entry { return nil }}); err == nil {
		t.Error("Record wrote a marker to a column outside the allowed set")
	}

	// RecordAll is all or nothing: a bad mark in the batch undoes the others.
	before, _ := store.NewEvents(db).List(ctx, event.Filter{DomainID: dom.ID, Limit: 100})
	good := tracking.Mark{DeliveryID: tg.DeliveryID, At: now, Entries: func(bool) []event.Entry {
		return []event.Entry{tg.Entry(event.TemporaryFail, now, nil)}
	}}
	bad := good
	bad.Column = "state"
	if err := s.RecordAll(ctx, []tracking.Mark{good, bad}); err == nil {
		t.Error("RecordAll with a bad mark succeeded")
	}
	if after, _ := store.NewEvents(db).List(ctx, event.Filter{DomainID: dom.ID, Limit: 100}); len(after) != len(before) {
		t.Errorf("a failed RecordAll kept %d entries", len(after)-len(before))
	}
	if err := s.RecordAll(ctx, []tracking.Mark{good, good}); err != nil {
		t.Fatal(err)
	}
	if after, _ := store.NewEvents(db).List(ctx, event.Filter{DomainID: dom.ID, Limit: 100}); len(after) != len(before)+2 {
		t.Errorf("RecordAll of two marks wrote %d entries", len(after)-len(before))
	}

	if ok, err := s.IsTrackingHost(ctx, "t.track.example"); err != nil || ok {
		t.Errorf("IsTrackingHost before setting = %v, %v", ok, err)
	}
	dom.TrackingDomain = "t.track.example"
	dom.Tracking = domain.Tracking{Opens: true, Unsubscribe: true}
	box := testBox()
	if err := store.NewDomains(db, box).UpdateDomain(ctx, dom); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.IsTrackingHost(ctx, "t.track.example"); err != nil || ok {
		t.Errorf("IsTrackingHost of an unverified domain = %v, %v; want false", ok, err)
	}
	verified := now
	dom.VerifiedAt = &verified
	if err := store.NewDomains(db, box).UpdateDomain(ctx, dom); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.IsTrackingHost(ctx, "t.track.example"); err != nil || !ok {
		t.Errorf("IsTrackingHost after setting and verifying = %v, %v", ok, err)
	}
	back, err := store.NewDomains(db, box).DomainByID(ctx, dom.ID)
	if err != nil || back.Tracking != dom.Tracking {
		t.Errorf("tracking switches after a round trip = %+v, %v; want %+v", back.Tracking, err, dom.Tracking)
	}
}

// testBox is the key NewDomainRow sealed the domain's secrets with.
func testBox() *secret.Box {
	box, _ := secret.NewBox(make([]byte, 32))
	return box
}
