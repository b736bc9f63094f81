package storetest

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/message"
	"github.com/postline/postline/internal/sending"
	"github.com/postline/postline/internal/store"
)

// testSendingMessages: a send reads back whole; only the first
// SaveProcessed replaces its attachments; a message's deliveries, its
// headers and its cancellation are its own domain's alone, and a
// cancellation takes only deliveries not yet being sent.
func testSendingMessages(t *testing.T, db *store.DB) {
	ctx := context.Background()
	s := store.NewSending(db)
	a, d := NewDomainRow(t, db, "alice", "alice.example")
	b, other := NewDomainRow(t, db, "bob", "bob.example")
	snd := &sending.Send{DomainID: d.ID, AccountID: a.ID, From: "news@alice.example", FromName: "Alice", ReplyTo: "r@alice.example",
		Subject: "Hello", Text: "text", HTML: "<p>html</p>", Headers: map[string]string{"X-Campaign": "c1"},
		Options: `{"watermark":true}`, Tags: "t1,t2", CreatedAt: now, Raw: []byte("raw message"),
		Addressing: sending.Addressing{To: []message.Mailbox{{Name: "Carol", Addr: "carol@x.example"}}}}
	ds := []sending.Delivery{
		{DomainID: d.ID, MessageID: "m1@alice.example", Recipient: "carol@x.example", NextAttemptAt: now, CreatedAt: now},
		{DomainID: d.ID, MessageID: "m1@alice.example", Recipient: "dave@x.example", NextAttemptAt: now, CreatedAt: now},
		{DomainID: d.ID, MessageID: "m1@alice.example", Recipient: "erin@x.example", NextAttemptAt: now.Add(time.Hour), CreatedAt: now},
	}
	atts := []sending.Attachment{{Filename: "a.pdf", ContentType: "application/pdf", Data: []byte("A")},
		{Filename: "logo.png", ContentType: "image/png", Data: []byte("L"), ContentID: "logo"}}
	if err := s.Enqueue(ctx, snd, atts, ds, noEntries); err != nil {
		t.Fatal(err)
	}
	// Bob's message has the same Message-ID: nothing below may reach it.
	bobSnd := &sending.Send{DomainID: other.ID, AccountID: b.ID, From: "b@bob.example", Subject: "Bob's",
		Headers: map[string]string{"X-Campaign": "bob"}, CreatedAt: now}
	bobDs := []sending.Delivery{{DomainID: other.ID, MessageID: "m1@alice.example", Recipient: "z@x.example", NextAttemptAt: now, CreatedAt: now}}
	if err := s.Enqueue(ctx, bobSnd, nil, bobDs, noEntries); err != nil {
		t.Fatal(err)
	}

	got, gotAtts, err := s.LoadSend(ctx, snd.ID)
	if err != nil || got.From != snd.From || got.FromName != "Alice" || got.ReplyTo != snd.ReplyTo || got.Subject != "Hello" ||
		got.Text != "text" || got.HTML != "<p>html</p>" || got.Headers["X-Campaign"] != "c1" || got.Options != snd.Options ||
		got.Tags != "t1,t2" || got.Processed || !got.CreatedAt.Equal(now) || string(got.Raw) != "raw message" ||
		got.AccountID != a.ID || len(got.Addressing.To) != 1 || got.Addressing.To[0].Name != "Carol" {
		t.Fatalf("LoadSend = %+v, %v; want the send as enqueued", got, err)
	}
	if !slices.EqualFunc(gotAtts, atts, func(x, y sending.Attachment) bool {
		return x.Filename == y.Filename && x.ContentType == y.ContentType && string(x.Data) == string(y.Data) && x.ContentID == y.ContentID
	}) {
		t.Fatalf("LoadSend attachments = %+v; want %+v in order", gotAtts, atts)
	}
	if _, _, err := s.LoadSend(ctx, snd.ID+100); err == nil {
		t.Fatal("LoadSend of a missing send succeeded")
	}

	processed := []sending.Attachment{{Filename: "a.zip", ContentType: "application/zip", Data: []byte("Z")}}
	if won, err := s.SaveProcessed(ctx, snd.ID, processed); err != nil || !won {
		t.Fatalf("SaveProcessed = %v, %v; want the first to win", won, err)
	}
	if won, err := s.SaveProcessed(ctx, snd.ID, atts); err != nil || won {
		t.Fatalf("a second SaveProcessed = %v, %v; want it refused", won, err)
	}
	got, gotAtts, err = s.LoadSend(ctx, snd.ID)
	if err != nil || !got.Processed || got.Options != "" || len(gotAtts) != 1 || gotAtts[0].Filename != "a.zip" {
		t.Fatalf("after SaveProcessed: %+v with %+v, %v; want processed, options cleared, only a.zip", got, gotAtts, err)
	}

	// Claim one of Alice's due deliveries: it is being sent, not cancellable.
	claimed, err := s.Claim(ctx, "w1", now, now.Add(time.Minute), 1, noEntries)
	if err != nil || len(claimed) != 1 || claimed[0].DomainID != d.ID {
		t.Fatalf("Claim = %+v, %v", claimed, err)
	}
	md, err := s.MessageDeliveries(ctx, d.ID, "m1@alice.example")
	if err != nil || len(md) != 3 || md[0].Recipient != "carol@x.example" || md[0].Sender != snd.From || md[0].Subject != "Hello" {
		t.Fatalf("MessageDeliveries = %+v, %v; want Alice's three, in id order", md, err)
	}
	if md, err := s.MessageDeliveries(ctx, other.ID, "m1@alice.example"); err != nil || len(md) != 1 || md[0].Recipient != "z@x.example" {
		t.Fatalf("Bob's MessageDeliveries = %+v, %v; want only his", md, err)
	}

	h, err := s.SendHeaders(ctx, d.ID, []string{"m1@alice.example", "nosuch@alice.example"})
	if err != nil || len(h) != 1 || h["m1@alice.example"]["X-Campaign"] != "c1" {
		t.Fatalf("SendHeaders = %v, %v; want Alice's headers (not Bob's)", h, err)
	}

	cancelled, err := s.CancelMessage(ctx, d.ID, "m1@alice.example", now.Add(time.Second), func(c []sending.Delivery) []event.Entry {
		out := make([]event.Entry, len(c))
		for i, dl := range c {
			out[i] = event.Entry{DomainID: d.ID, MessageID: dl.MessageID, Type: event.Failed, Recipient: dl.Recipient,
				CreatedAt: now, Details: event.NewDetails(nil)}
		}
		return out
	})
	if err != nil || len(cancelled) != 2 || slices.ContainsFunc(cancelled, func(dl sending.Delivery) bool { return dl.ID == claimed[0].ID }) {
		t.Fatalf("CancelMessage = %+v, %v; want the two not being sent", cancelled, err)
	}
	if n := countEvents(t, db, d.ID, event.Failed); n != 2 {
		t.Fatalf("%d failed (cancelled) entries, want 2 (one per cancelled delivery)", n)
	}
	states := map[string]string{}
	md, _ = s.MessageDeliveries(ctx, d.ID, "m1@alice.example")
	for _, m := range md {
		states[m.Recipient] = m.State
	}
	want := map[string]string{claimed[0].Recipient: sending.StateSending}
	for _, dl := range cancelled {
		want[dl.Recipient] = sending.StateCancelled
	}
	if len(states) != 3 || !maps.Equal(states, want) {
		t.Fatalf("states after CancelMessage = %v, want %v", states, want)
	}
	if md, _ := s.MessageDeliveries(ctx, other.ID, "m1@alice.example"); md[0].State != sending.StatePending {
		t.Fatalf("Alice's CancelMessage reached Bob's delivery: %s", md[0].State)
	}
	if again, err := s.CancelMessage(ctx, d.ID, "m1@alice.example", now, noEntries); err != nil || len(again) != 0 {
		t.Fatalf("cancelling twice = %+v, %v; want nothing more", again, err)
	}
}
