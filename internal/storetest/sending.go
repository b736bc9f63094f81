package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/sending"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/suppression"
)

// testSendingBatches checks the queue's batched methods: EnqueueMany,
// CompleteMany (a lost lease writes nothing while the rest of the batch
// is written) and LoadSends.
func testSendingBatches(t *testing.T, db *store.DB) {
	ctx := context.Background()
	s := store.NewSending(db)
	_, d := NewDomainRow(t, db, "alice", "alice.example")
	queued := func(ds []sending.Delivery) []event.Entry {
		out := make([]event.Entry, len(ds))
		for i, dl := range ds {
			out[i] = event.Entry{DomainID: d.ID, MessageID: dl.MessageID, Type: event.Queued, Sender: "a@alice.example",
				Recipient: dl.Recipient, Subject: "hi", CreatedAt: now, Details: event.NewDetails(nil)}
		}
		return out
	}
	// Three sends: one with two recipients and an attachment, two with one.
	var jobs []sending.EnqueueJob
	n := 0
	for i, rcpts := range []int{2, 1, 1} {
		snd := &sending.Send{DomainID: d.ID, AccountID: d.AccountID, From: "a@alice.example", Subject: "hi",
			Text: fmt.Sprintf("body %d", i), Headers: map[string]string{"X-N": fmt.Sprint(i)}, CreatedAt: now}
		var ds []sending.Delivery
		for r := 0; r < rcpts; r++ {
			n++
			ds = append(ds, sending.Delivery{DomainID: d.ID, MessageID: fmt.Sprintf("m%d@alice.example", n),
				Recipient: fmt.Sprintf("r%d@x.example", n), NextAttemptAt: now, CreatedAt: now})
		}
		var atts []sending.Attachment
		if i == 0 {
			atts = []sending.Attachment{{Filename: "a.txt", ContentType: "text/plain", Data: []byte("A")},
				{Filename: "b.txt", ContentType: "text/plain", Data: []byte("B")}}
		}
		jobs = append(jobs, sending.EnqueueJob{Send: snd, Attachments: atts, Deliveries: ds, Entries: queued})
	}
	if err := s.EnqueueMany(ctx, jobs); err != nil {
		t.Fatalf("EnqueueMany: %v", err)
	}
	seen := map[int64]bool{}
	for _, j := range jobs {
		if j.Send.ID == 0 || seen[j.Send.ID] {
			t.Fatalf("send id %d: want a fresh id for each send", j.Send.ID)
		}
		seen[j.Send.ID] = true
		for _, dl := range j.Deliveries {
			if dl.ID == 0 || dl.SendID != j.Send.ID || seen[-dl.ID] {
				t.Fatalf("delivery %+v of send %d: want a fresh id and its send's id", dl, j.Send.ID)
			}
			seen[-dl.ID] = true
		}
	}
	if got := countEvents(t, db, d.ID, event.Queued); got != 4 {
		t.Fatalf("queued entries = %d, want 4 (one per delivery)", got)
	}

	// LoadSends: all three with their attachments in order, and no
	// entry for an id that does not exist.
	loaded, err := s.LoadSends(ctx, []int64{jobs[0].Send.ID, jobs[2].Send.ID, 999999})
	if err != nil || len(loaded) != 2 {
		t.Fatalf("LoadSends = %d sends, %v; want 2", len(loaded), err)
	}
	first := loaded[jobs[0].Send.ID]
	if first.Send.Text != "body 0" || first.Send.Headers["X-N"] != "0" || !first.Send.CreatedAt.Equal(now) ||
		len(first.Attachments) != 2 || first.Attachments[0].Filename != "a.txt" || string(first.Attachments[1].Data) != "B" {
		t.Fatalf("LoadSends first = %+v", first)
	}
	if third := loaded[jobs[2].Send.ID]; third.Send.Text != "body 2" || len(third.Attachments) != 0 {
		t.Fatalf("LoadSends third = %+v", third)
	}

	// Claim all four; then another owner takes one of them over (its
	// lease expired and was rescued and claimed again).
	claimed, err := s.Claim(ctx, "w1", now, now.Add(time.Minute), 10, func([]sending.Delivery) []event.Entry { return nil })
	if err != nil || len(claimed) != 4 {
		t.Fatalf("Claim = %d, %v; want 4", len(claimed), err)
	}
	lost := claimed[1].ID
	if _, err := db.Writer().ExecContext(ctx, `UPDATE deliveries SET lease_owner = 'w2' WHERE id = $1`, lost); err != nil {
		t.Fatal(err)
	}
	entry := func(dl sending.Delivery, typ event.Type) []event.Entry {
		return []event.Entry{{DomainID: d.ID, MessageID: dl.MessageID, Type: typ, Sender: "a@alice.example",
			Recipient: dl.Recipient, Subject: "hi", CreatedAt: now, Details: event.NewDetails(nil)}}
	}
	next := now.Add(5 * time.Minute)
	bounce := func(dl sending.Delivery) *suppression.Entry {
		src, why := "bounce:5.1.1", "550 5.1.1 no such user"
		return &suppression.Entry{DomainID: d.ID, Type: suppression.Bounce, RecipientType: suppression.Email,
			Recipient: dl.Recipient, Source: &src, Description: &why, CreatedAt: now}
	}
	cs := []sending.Completion{
		{ID: claimed[3].ID, Outcome: sending.Outcome{State: sending.StateDelivered, Code: 250, Message: "ok"},
			Entries: entry(claimed[3], event.Delivered)},
		{ID: lost, Outcome: sending.Outcome{State: sending.StateBounced, Code: 550, Message: "no"},
			Entries: entry(claimed[1], event.Bounced), Bounce: bounce(claimed[1])},
		{ID: claimed[0].ID, Outcome: sending.Outcome{State: sending.StateDeferred, NextAttemptAt: next, Code: 451, Message: "later"},
			Entries: entry(claimed[0], event.Deferred)},
		{ID: claimed[2].ID, Outcome: sending.Outcome{State: sending.StateBounced, Code: 550, Message: "no such user"},
			Entries: entry(claimed[2], event.Bounced), Bounce: bounce(claimed[2])},
	}
	held, err := s.CompleteMany(ctx, "w1", cs)
	if err != nil || len(held) != 4 || !held[0] || held[1] || !held[2] || !held[3] {
		t.Fatalf("CompleteMany held = %v, %v; want [true false true true]", held, err)
	}
	for _, c := range []struct {
		id    int64
		state string
		owner string
		next  time.Time
	}{
		{claimed[3].ID, sending.StateDelivered, "", now},
		{lost, sending.StateSending, "w2", now},
		{claimed[0].ID, sending.StateDeferred, "", next},
		{claimed[2].ID, sending.StateBounced, "", now},
	} {
		var state string
		var owner *string
		var nextMS int64
		err := db.Reader().QueryRowContext(ctx, `SELECT state, lease_owner, next_attempt_at FROM deliveries WHERE id = $1`, c.id).
			Scan(&state, &owner, &nextMS)
		gotOwner := ""
		if owner != nil {
			gotOwner = *owner
		}
		if err != nil || state != c.state || gotOwner != c.owner || nextMS != c.next.UnixMilli() {
			t.Errorf("delivery %d: state %q owner %q next %d, %v; want %q %q %d", c.id, state, gotOwner, nextMS, err,
				c.state, c.owner, c.next.UnixMilli())
		}
	}
	if got := countEvents(t, db, d.ID, event.Bounced); got != 1 {
		t.Errorf("bounced entries = %d, want 1 (none for the lost lease)", got)
	}
	if got := countEvents(t, db, d.ID, event.Delivered) + countEvents(t, db, d.ID, event.Deferred); got != 2 {
		t.Errorf("delivered + deferred entries = %d, want 2", got)
	}
	got, err := store.NewSuppressions(db).Matching(ctx, d.ID, []string{claimed[1].Recipient, claimed[2].Recipient})
	if err != nil || len(got) != 1 || got[0].Recipient != claimed[2].Recipient {
		t.Errorf("bounce suppressions = %+v, %v; want only %s (not the lost lease's)", got, err, claimed[2].Recipient)
	}
	if len(got) == 1 && (got[0].Description == nil || *got[0].Description != "550 5.1.1 no such user") {
		t.Errorf("the bounce's description (the server's reply) = %v, want it kept", got[0].Description)
	}

	// Completing again finds no lease: nothing more is written.
	held, err = s.CompleteMany(ctx, "w1", cs[:1])
	if err != nil || held[0] {
		t.Errorf("second CompleteMany = %v, %v; want not held", held, err)
	}
	if got := countEvents(t, db, d.ID, event.Delivered); got != 1 {
		t.Errorf("delivered entries after a repeated outcome = %d, want 1", got)
	}
	// Complete (one outcome) still works, and a failed batch changes nothing.
	if ok, err := s.Complete(ctx, lost, "w2", sending.Outcome{State: sending.StateDelivered, Code: 250}, entry(claimed[1], event.Delivered), nil); err != nil || !ok {
		t.Errorf("Complete by the new owner = %v, %v; want held", ok, err)
	}
	if err := s.EnqueueMany(ctx, []sending.EnqueueJob{
		{Send: &sending.Send{DomainID: d.ID, AccountID: d.AccountID, From: "a@alice.example", Subject: "x", CreatedAt: now},
			Deliveries: []sending.Delivery{{DomainID: d.ID, MessageID: "dup@alice.example", Recipient: "y@x.example", NextAttemptAt: now, CreatedAt: now}},
			Entries:    queued},
		// A send of a domain that does not exist: its insert fails.
		{Send: &sending.Send{DomainID: d.ID + 1000, AccountID: d.AccountID, From: "a@alice.example", Subject: "x", CreatedAt: now},
			Deliveries: []sending.Delivery{{DomainID: d.ID + 1000, MessageID: "z@alice.example", Recipient: "z@x.example", NextAttemptAt: now, CreatedAt: now}},
			Entries:    queued},
	}); err == nil {
		t.Fatal("EnqueueMany with a send of a missing domain succeeded; want an error")
	}
	var sends int
	db.Reader().QueryRowContext(ctx, `SELECT count(*) FROM sends`).Scan(&sends)
	if sends != 3 {
		t.Errorf("%d sends after a failed batch, want 3: the batch must roll back whole", sends)
	}
}

func countEvents(t *testing.T, db *store.DB, domainID int64, typ event.Type) int {
	t.Helper()
	var n int
	if err := db.Reader().QueryRowContext(context.Background(), `SELECT count(*) FROM events WHERE domain_id = $1 AND event_type = $2`,
		domainID, string(typ)).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// testIdempotencyClaims: a claim taken over after it went stale is not
// touched by the first claimant's Remember or Forget.
func testIdempotencyClaims(t *testing.T, db *store.DB) {
	ctx := context.Background()
	s := store.NewSending(db)
	a, _ := NewDomainRow(t, db, "idem", "idem.example")
	t0 := now
	reserve := func(token string, at, pendingSince time.Time) (bool, int, string) {
		t.Helper()
		ok, status, body, err := s.Reserve(ctx, a.ID, "k", token, at, at.Add(-24*time.Hour), pendingSince)
		if err != nil {
			t.Fatal(err)
		}
		return ok, status, string(body)
	}
	if ok, _, _ := reserve("A", t0, t0.Add(-time.Minute)); !ok {
		t.Fatal("first claim refused")
	}
	if ok, status, _ := reserve("B", t0.Add(time.Second), t0.Add(-time.Minute)); ok || status != 0 {
		t.Fatalf("a second claim while A is pending: ok=%v status=%d; want pending", ok, status)
	}
	// A stalls past the pending limit; B takes over.
	if ok, _, _ := reserve("B", t0.Add(20*time.Minute), t0.Add(10*time.Minute)); !ok {
		t.Fatal("a stale claim was not taken over")
	}
	if err := s.Forget(ctx, a.ID, "k", "A"); err != nil {
		t.Fatal(err)
	}
	if err := s.Remember(ctx, a.ID, "k", "A", 202, []byte("A's answer")); err != nil {
		t.Fatal(err)
	}
	if ok, status, _ := reserve("C", t0.Add(21*time.Minute), t0.Add(11*time.Minute)); ok || status != 0 {
		t.Fatalf("after A's late Forget and Remember, C got ok=%v status=%d; want B's claim still pending", ok, status)
	}
	if err := s.Remember(ctx, a.ID, "k", "B", 202, []byte("B's answer")); err != nil {
		t.Fatal(err)
	}
	if ok, status, body := reserve("D", t0.Add(22*time.Minute), t0.Add(12*time.Minute)); ok || status != 202 || body != "B's answer" {
		t.Fatalf("replay = ok=%v %d %q; want B's answer", ok, status, body)
	}
}

// testPruneIdempotencyKeys: keys created before the bound go, answered or
// pending, in batches; newer ones stay and still replay.
func testPruneIdempotencyKeys(t *testing.T, db *store.DB) {
	ctx := context.Background()
	s := store.NewSending(db)
	a, _ := NewDomainRow(t, db, "idemprune", "idemprune.example")
	old, fresh := now.Add(-25*time.Hour), now.Add(-time.Hour)
	for i := range 5 {
		key := fmt.Sprintf("old-%d", i)
		if ok, _, _, err := s.Reserve(ctx, a.ID, key, "t", old, old.Add(-24*time.Hour), old.Add(-time.Minute)); err != nil || !ok {
			t.Fatalf("reserve %s: %v %v", key, ok, err)
		}
		if i%2 == 0 {
			if err := s.Remember(ctx, a.ID, key, "t", 200, []byte("answer")); err != nil {
				t.Fatal(err)
			}
		}
	}
	if ok, _, _, err := s.Reserve(ctx, a.ID, "fresh", "t", fresh, fresh.Add(-24*time.Hour), fresh.Add(-time.Minute)); err != nil || !ok {
		t.Fatalf("reserve fresh: %v %v", ok, err)
	}
	if err := s.Remember(ctx, a.ID, "fresh", "t", 200, []byte("fresh answer")); err != nil {
		t.Fatal(err)
	}
	n, err := s.PruneIdempotencyKeys(ctx, now.Add(-24*time.Hour), 2)
	if err != nil || n != 5 {
		t.Fatalf("pruned %d, %v; want the 5 old keys", n, err)
	}
	var left int
	db.Reader().QueryRowContext(ctx, `SELECT count(*) FROM idempotency_keys WHERE account_id = $1`, a.ID).Scan(&left)
	if left != 1 {
		t.Errorf("%d keys left, want the fresh one", left)
	}
	if ok, status, body, err := s.Reserve(ctx, a.ID, "fresh", "u", now, now.Add(-24*time.Hour), now.Add(-time.Minute)); err != nil || ok ||
		status != 200 || string(body) != "fresh answer" {
		t.Errorf("the fresh key after the prune: %v %d %q %v; want its answer", ok, status, body, err)
	}
}
