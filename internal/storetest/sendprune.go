package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/postline/postline/internal/sending"
	"github.com/postline/postline/internal/store"
)

// testPruneSends: the content of a send whose deliveries all ended before
// the cutoff is emptied (bodies, raw message, attachments; the HTML keeps
// what keep gives) and the send marked pruned, its row and deliveries
// kept; a send with a delivery still under way, or ended after the
// cutoff, keeps its content; batches loop until done.
func testPruneSends(t *testing.T, db *store.DB) {
	ctx := context.Background()
	s := store.NewSending(db)
	a, d := NewDomainRow(t, db, "sendprune", "sendprune.example")
	enqueue := func(id string, due ...time.Time) *sending.Send {
		t.Helper()
		snd := &sending.Send{DomainID: d.ID, AccountID: a.ID, From: "news@sendprune.example", Subject: "S " + id, Text: "text " + id,
			HTML: `<p>hi <a href="https://x.example/` + id + `">x</a></p>`, Headers: map[string]string{"X-Id": id}, CreatedAt: now,
			Raw: []byte("raw " + id)}
		var ds []sending.Delivery
		for i, at := range due {
			ds = append(ds, sending.Delivery{DomainID: d.ID, MessageID: id + "@sendprune.example", Recipient: string(rune('a'+i)) + "@x.example",
				NextAttemptAt: at, CreatedAt: now})
		}
		if err := s.Enqueue(ctx, snd, []sending.Attachment{{Filename: "f.txt", ContentType: "text/plain", Data: []byte("F")}}, ds, noEntries); err != nil {
			t.Fatal(err)
		}
		return snd
	}
	later := now.Add(24 * time.Hour)
	done := enqueue("done", now, now)        // both delivered
	busy := enqueue("busy", now, later)      // one delivered, one pending
	cancelled := enqueue("cancelled", later) // cancelled before it was sent
	claimed, err := s.Claim(ctx, "w", now, now.Add(time.Minute), 10, noEntries)
	if err != nil || len(claimed) != 3 {
		t.Fatalf("Claim = %d, %v; want 3", len(claimed), err)
	}
	for _, c := range claimed {
		if ok, err := s.Complete(ctx, c.ID, "w", sending.Outcome{State: sending.StateDelivered, Code: 250}, nil, nil); err != nil || !ok {
			t.Fatalf("Complete(%d) = %v, %v", c.ID, ok, err)
		}
	}
	if _, err := s.CancelMessage(ctx, d.ID, "cancelled@sendprune.example", time.Now(), noEntries); err != nil {
		t.Fatal(err)
	}
	keep := func(html string) string { return "kept:" + html }
	if n, err := s.PruneSends(ctx, time.Now().Add(-time.Hour), time.Now(), 10, keep); err != nil || n != 0 {
		t.Fatalf("PruneSends before the deliveries ended = %d, %v; want 0", n, err)
	}
	prunedAt := time.Now()
	if n, err := s.PruneSends(ctx, time.Now().Add(time.Minute), prunedAt, 1, keep); err != nil || n != 2 {
		t.Fatalf("PruneSends = %d, %v; want the 2 ended sends, one a batch", n, err)
	}
	for _, snd := range []*sending.Send{done, cancelled} {
		got, atts, err := s.LoadSend(ctx, snd.ID)
		if err != nil || !got.Pruned || got.Text != "" || len(got.Raw) != 0 || got.HTML != "kept:"+snd.HTML || len(atts) != 0 ||
			got.Subject != snd.Subject || got.Headers["X-Id"] == "" {
			t.Errorf("%s after pruning: %+v with %d attachments, %v; want emptied, subject and headers kept", snd.Subject, got, len(atts), err)
		}
	}
	if got, atts, err := s.LoadSend(ctx, busy.ID); err != nil || got.Pruned || got.Text != busy.Text || len(atts) != 1 {
		t.Errorf("a send with a pending delivery after pruning: %+v with %d attachments, %v; want it whole", got, len(atts), err)
	}
	if md, err := s.MessageDeliveries(ctx, d.ID, "done@sendprune.example"); err != nil || len(md) != 2 {
		t.Errorf("the deliveries of a pruned send: %d, %v; want both kept", len(md), err)
	}
	if n, err := s.PruneSends(ctx, time.Now().Add(time.Minute), time.Now(), 10, keep); err != nil || n != 0 {
		t.Errorf("a second PruneSends = %d, %v; want 0", n, err)
	}
}
