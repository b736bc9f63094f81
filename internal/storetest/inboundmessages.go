package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/mailauth"
	"github.com/postline/postline/internal/receiving"
	"github.com/postline/postline/internal/secret"
	"github.com/postline/postline/internal/store"
)

// testInboundMessages: stored messages round trip (raw bytes, routes,
// authentication results) with their log entries in one transaction; a
// domain's list is newest first, filtered and paged with its total, never
// shows another domain's; an account's bound refuses what would pass it,
// recording nothing (also when stores race); retention deletes by time;
// the domain's removal takes its messages.
func testInboundMessages(t *testing.T, db *store.DB) {
	ctx := context.Background()
	s := store.NewInboundMessages(db)
	alice, dom := NewDomainRow(t, db, "alice", "alice.example")
	bob, other := NewDomainRow(t, db, "bob", "bob.example")
	// The domain's inbound switch round trips.
	box, _ := secret.NewBox(make([]byte, 32)) // NewDomainRow's
	doms := store.NewDomains(db, box)
	dom.Inbound = true
	if err := doms.UpdateDomain(ctx, dom); err != nil {
		t.Fatal(err)
	}
	if d, err := doms.AccountDomain(ctx, alice.ID, "alice.example"); err != nil || !d.Inbound {
		t.Fatalf("inbound after UpdateDomain: %+v, %v", d.Inbound, err)
	}
	if d, err := doms.DomainByID(ctx, other.ID); err != nil || d.Inbound {
		t.Fatalf("another domain's inbound: %v, %v; want off", d.Inbound, err)
	}
	msg := func(d, acc int64, i int, rcpt, sender, subject string, at time.Duration) receiving.Message {
		raw := []byte(fmt.Sprintf("Subject: %s\r\n\r\nbody %d\r\n\x00\xff", subject, i))
		return receiving.Message{ID: fmt.Sprintf("%032x", i), AccountID: acc, DomainID: d, Recipient: rcpt, Sender: sender,
			From: "Ann <ann@sender.example>", Subject: subject, MessageID: fmt.Sprintf("m%d@sender.example", i), Routes: []string{"r1", "r2"},
			Auth: mailauth.Results{SPF: mailauth.Result{Result: "pass", Domain: "sender.example"}, DKIM: []mailauth.Result{{Result: "fail", Domain: "x.example", Reason: "bad"}},
				DMARC: mailauth.Result{Result: "fail", Domain: "sender.example", Policy: "reject"}},
			Size: int64(len(raw)), Raw: raw, ReceivedAt: now.Add(at)}
	}
	entry := func(m receiving.Message) event.Entry {
		return event.Entry{DomainID: m.DomainID, MessageID: m.MessageID, Type: event.Received, Sender: m.Sender, Recipient: m.Recipient,
			Subject: m.Subject, CreatedAt: m.ReceivedAt, Details: []byte(`{"stored_id":"` + m.ID + `"}`)}
	}
	all := []receiving.Message{
		msg(dom.ID, alice.ID, 1, "help@alice.example", "a@sender.example", "Order 100 late", -3*time.Hour),
		msg(dom.ID, alice.ID, 2, "Sales@Alice.example", "b@sender.example", "Quote 50% off", -2*time.Hour),
		msg(dom.ID, alice.ID, 3, "help@alice.example", "B@Sender.example", "Re: order 100", -time.Hour),
		msg(other.ID, bob.ID, 4, "help@bob.example", "a@sender.example", "Order 100", 0),
	}
	for _, m := range all {
		if err := s.Record(ctx, []receiving.Message{m}, []event.Entry{entry(m)}, 1<<20); err != nil {
			t.Fatalf("Record(%s) = %v", m.ID, err)
		}
	}
	got, err := s.Message(ctx, dom.ID, all[1].ID)
	if err != nil || !bytes.Equal(got.Raw, all[1].Raw) || got.Recipient != "Sales@Alice.example" || fmt.Sprint(got.Routes) != "[r1 r2]" ||
		got.Auth.DMARC.Policy != "reject" || len(got.Auth.DKIM) != 1 || got.Auth.DKIM[0].Reason != "bad" || !got.ReceivedAt.Equal(all[1].ReceivedAt) ||
		got.Size != all[1].Size || got.From != all[1].From || got.MessageID != all[1].MessageID {
		t.Fatalf("Message = %+v, %v; want %+v", got, err, all[1])
	}
	if _, err := s.Message(ctx, other.ID, all[1].ID); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("another domain's message: %v, want not_found", err)
	}
	entries, err := store.NewEvents(db).List(ctx, event.Filter{DomainID: dom.ID, Type: event.Received, Limit: 10})
	if err != nil || len(entries) != 3 {
		t.Fatalf("received entries of the domain: %d, %v; want 3 recorded with their messages", len(entries), err)
	}

	ids := func(ms []receiving.Message) string {
		var out []string
		for _, m := range ms {
			out = append(out, m.ID[len(m.ID)-1:])
		}
		return fmt.Sprint(out)
	}
	for _, c := range []struct {
		f     receiving.Filter
		want  string
		total int
	}{
		{receiving.Filter{DomainID: dom.ID, Limit: 10}, "[3 2 1]", 3},
		{receiving.Filter{DomainID: dom.ID, Limit: 1, Offset: 1}, "[2]", 3},
		{receiving.Filter{DomainID: dom.ID, Recipient: "HELP@alice.example", Limit: 10}, "[3 1]", 2},
		{receiving.Filter{DomainID: dom.ID, Sender: "b@sender.EXAMPLE", Limit: 10}, "[3 2]", 2},
		{receiving.Filter{DomainID: dom.ID, Subject: "ORDER 100", Limit: 10}, "[3 1]", 2},
		{receiving.Filter{DomainID: dom.ID, Subject: "50%", Limit: 10}, "[2]", 1},
		{receiving.Filter{DomainID: dom.ID, Subject: "_", Limit: 10}, "[]", 0},
		{receiving.Filter{DomainID: dom.ID, Start: now.Add(-2 * time.Hour), End: now.Add(-time.Hour), Limit: 10}, "[3 2]", 2},
		{receiving.Filter{DomainID: dom.ID, Since: now.Add(-90 * time.Minute), Limit: 10}, "[3]", 1},
		{receiving.Filter{DomainID: dom.ID, Limit: 10, Offset: 5}, "[]", 3},
	} {
		list, total, err := s.ListMessages(ctx, c.f)
		if err != nil || ids(list) != c.want || total != c.total {
			t.Errorf("ListMessages(%+v) = %s (%d), %v; want %s (%d)", c.f, ids(list), total, err, c.want, c.total)
		}
		for _, m := range list {
			if m.Raw != nil || m.DomainID != dom.ID {
				t.Errorf("a listed message: raw %d bytes, domain %d", len(m.Raw), m.DomainID)
			}
		}
	}

	// The account's bound: alice holds the sizes of her three; one more
	// that would pass it is refused with its entry, and nothing is kept.
	var held int64
	for _, m := range all[:3] {
		held += m.Size
	}
	big := msg(dom.ID, alice.ID, 5, "help@alice.example", "", "big", 0)
	if err := s.Record(ctx, []receiving.Message{big}, []event.Entry{entry(big)}, held+big.Size-1); !errors.Is(err, receiving.ErrStoreFull) {
		t.Fatalf("Record past the bound = %v, want ErrStoreFull", err)
	}
	if _, err := s.Message(ctx, dom.ID, big.ID); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("the refused message was stored: %v", err)
	}
	if entries, _ := store.NewEvents(db).List(ctx, event.Filter{DomainID: dom.ID, Limit: 10}); len(entries) != 3 {
		t.Fatalf("the refused message's entry was recorded: %d entries", len(entries))
	}
	// Racing stores: of 6 that each fit alone and 3 together, 3 are kept.
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range 6 {
		wg.Go(func() {
			m := msg(dom.ID, alice.ID, 10+i, "help@alice.example", "", "race", time.Duration(i)*time.Millisecond)
			errs[i] = s.Record(ctx, []receiving.Message{m}, []event.Entry{entry(m)}, held+3*m.Size)
		})
	}
	wg.Wait()
	kept := 0
	for _, err := range errs {
		switch {
		case err == nil:
			kept++
		case !errors.Is(err, receiving.ErrStoreFull):
			t.Fatalf("a racing store: %v", err)
		}
	}
	if _, total, _ := s.ListMessages(ctx, receiving.Filter{DomainID: dom.ID, Subject: "race", Limit: 10}); kept != 3 || total != 3 {
		t.Fatalf("racing stores kept %d (%d listed), want 3", kept, total)
	}

	n, err := s.PruneMessages(ctx, now.Add(-90*time.Minute), 1)
	if err != nil || n != 2 {
		t.Fatalf("PruneMessages = %d, %v; want the two older than 90 minutes, one a batch", n, err)
	}
	if _, err := s.Message(ctx, dom.ID, all[0].ID); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("a pruned message is still there: %v", err)
	}
	if err := doms.DeleteDomain(ctx, other.ID); err != nil {
		t.Fatal(err)
	}
	var left int
	db.Reader().QueryRowContext(ctx, `SELECT COUNT(*) FROM inbound_messages WHERE domain_id = $1`, other.ID).Scan(&left)
	if left != 0 {
		t.Fatalf("%d messages outlived their domain", left)
	}
}
