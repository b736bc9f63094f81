package storetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/sending"
	"github.com/postline/postline/internal/store"
)

// enqueue stores one send of domain d with a delivery per next attempt
// time, created at created, and returns the deliveries with their ids.
func enqueue(t *testing.T, db *store.DB, accountID, domainID int64, created time.Time, next ...time.Time) []sending.Delivery {
	t.Helper()
	ds := make([]sending.Delivery, len(next))
	for i, at := range next {
		ds[i] = sending.Delivery{DomainID: domainID, MessageID: fmt.Sprintf("m%d.%d.%d@x.example", domainID, at.UnixMilli(), i),
			Recipient: fmt.Sprintf("r%d@y.example", i), NextAttemptAt: at, CreatedAt: created}
	}
	snd := &sending.Send{DomainID: domainID, AccountID: accountID, From: "a@x.example", Subject: "hi", CreatedAt: created}
	if err := store.NewSending(db).Enqueue(context.Background(), snd, nil, ds, noEntries); err != nil {
		t.Fatal(err)
	}
	return ds
}

func noEntries([]sending.Delivery) []event.Entry { return nil }

func deliveryIDs(ds []sending.Delivery) []int64 {
	out := make([]int64, len(ds))
	for i, d := range ds {
		out[i] = d.ID
	}
	slices.Sort(out)
	return out
}

// testQueue: QueueCounts counts each domain's waiting deliveries by state
// (never finished ones, nor other domains' when asked for some), with the
// oldest deferred delivery's time; RetryDeferred makes only deferred
// deliveries that are not yet due due, of one domain or of all.
func testQueue(t *testing.T, db *store.DB) {
	ctx := context.Background()
	q := store.NewQueue(db)
	s := store.NewSending(db)
	a, d1 := NewDomainRow(t, db, "alice", "alice.example")
	b, d2 := NewDomainRow(t, db, "bob", "bob.example")
	c, d3 := NewDomainRow(t, db, "carol", "carol.example")
	m := time.Minute
	enqueue(t, db, a.ID, d1.ID, now.Add(-10*m), now.Add(-5*m), now.Add(-4*m), now.Add(-3*m))
	enqueue(t, db, a.ID, d1.ID, now.Add(-20*m), now.Add(-6*m), now.Add(time.Hour))
	enqueue(t, db, b.ID, d2.ID, now, now.Add(time.Hour), now.Add(time.Hour))
	// Carol's one delivery is finished: her domain has nothing waiting.
	enqueue(t, db, c.ID, d3.ID, now, now.Add(time.Hour))
	if _, err := db.Writer().ExecContext(ctx, `UPDATE deliveries SET state = 'delivered' WHERE domain_id = $1`, d3.ID); err != nil {
		t.Fatal(err)
	}

	// Claim the three due first (-6, -5, -4 minutes): one is delivered,
	// one deferred, one stays in flight.
	claimed, err := s.Claim(ctx, "w1", now, now.Add(m), 3, noEntries)
	if err != nil || len(claimed) != 3 {
		t.Fatalf("Claim = %d, %v; want 3", len(claimed), err)
	}
	byNext := slices.Clone(claimed)
	slices.SortFunc(byNext, func(x, y sending.Delivery) int { return x.NextAttemptAt.Compare(y.NextAttemptAt) })
	if !byNext[0].CreatedAt.Equal(now.Add(-20 * m)) {
		t.Fatalf("Claim took %+v first; want the longest due (-6 min, of the older send)", byNext[0])
	}
	deferredUntil := now.Add(2 * time.Hour)
	held, err := s.CompleteMany(ctx, "w1", []sending.Completion{
		{ID: byNext[0].ID, Outcome: sending.Outcome{State: sending.StateDeferred, NextAttemptAt: deferredUntil, Code: 451}},
		{ID: byNext[1].ID, Outcome: sending.Outcome{State: sending.StateDelivered, Code: 250}},
	})
	if err != nil || !held[0] || !held[1] {
		t.Fatalf("CompleteMany = %v, %v", held, err)
	}

	counts, err := q.QueueCounts(ctx, nil)
	if err != nil || len(counts) != 2 {
		t.Fatalf("QueueCounts(all) = %+v, %v; want two domains (not Carol's: hers is finished)", counts, err)
	}
	c1, c2 := counts[0], counts[1]
	if c1.DomainID != d1.ID || c1.Queued != 2 || c1.Deferred != 1 || c1.InFlight != 1 || c1.OldestDeferred == nil ||
		!c1.OldestDeferred.Equal(now.Add(-20*m)) {
		t.Fatalf("Alice's counts = %+v; want 2 queued, 1 deferred (accepted at -20 min), 1 in flight, the delivered one not counted", c1)
	}
	if c2.DomainID != d2.ID || c2.Queued != 2 || c2.Deferred != 0 || c2.InFlight != 0 || c2.OldestDeferred != nil {
		t.Fatalf("Bob's counts = %+v; want 2 queued only", c2)
	}
	if counts, err := q.QueueCounts(ctx, []int64{d2.ID, d3.ID}); err != nil || len(counts) != 1 || counts[0] != c2 {
		t.Fatalf("QueueCounts(bob, carol) = %+v, %v; want Bob's alone", counts, err)
	}

	// RetryDeferred: Bob has nothing deferred; Alice's one becomes due now.
	if n, err := q.RetryDeferred(ctx, d2.ID, now); err != nil || n != 0 {
		t.Fatalf("RetryDeferred(bob) = %d, %v; want 0 (pending deliveries are not deferred)", n, err)
	}
	if n, err := q.RetryDeferred(ctx, d1.ID, now); err != nil || n != 1 {
		t.Fatalf("RetryDeferred(alice) = %d, %v; want 1", n, err)
	}
	if n, _ := q.RetryDeferred(ctx, d1.ID, now); n != 0 {
		t.Fatalf("a second RetryDeferred counted %d already due, want 0", n)
	}
	again, err := s.Claim(ctx, "w2", now, now.Add(m), 10, noEntries)
	if err != nil || !slices.Contains(deliveryIDs(again), byNext[0].ID) || slices.Contains(deliveryIDs(again), byNext[1].ID) {
		t.Fatalf("Claim after RetryDeferred = %v, %v; want the retried %d and never the delivered %d",
			deliveryIDs(again), err, byNext[0].ID, byNext[1].ID)
	}

	// RetryDeferred of every domain.
	var defer1 []sending.Completion
	for _, d := range again {
		defer1 = append(defer1, sending.Completion{ID: d.ID, Outcome: sending.Outcome{State: sending.StateDeferred, NextAttemptAt: deferredUntil}})
	}
	if _, err := s.CompleteMany(ctx, "w2", defer1); err != nil {
		t.Fatal(err)
	}
	bobs, err := s.Claim(ctx, "w3", now.Add(time.Hour), now.Add(time.Hour+m), 10, noEntries)
	if err != nil || len(bobs) != 3 { // Alice's +1 h and Bob's two
		t.Fatalf("Claim at +1 h = %d, %v; want 3", len(bobs), err)
	}
	var defer2 []sending.Completion
	for _, d := range bobs {
		defer2 = append(defer2, sending.Completion{ID: d.ID, Outcome: sending.Outcome{State: sending.StateDeferred, NextAttemptAt: deferredUntil}})
	}
	if _, err := s.CompleteMany(ctx, "w3", defer2); err != nil {
		t.Fatal(err)
	}
	want := int64(len(again) + len(bobs))
	if n, err := q.RetryDeferred(ctx, 0, now.Add(time.Hour)); err != nil || n != want {
		t.Fatalf("RetryDeferred(all) = %d, %v; want %d", n, err, want)
	}
	if counts, _ := q.QueueCounts(ctx, []int64{d2.ID}); len(counts) != 1 || counts[0].Deferred != 2 {
		t.Fatalf("Bob's counts after RetryDeferred(all) = %+v; want 2 deferred (due now, still deferred)", counts)
	}
}

// testQueueClaims: concurrent claimers never get the same delivery and
// together get every due one; a delivery not yet due is not claimed; a
// lease that ran out is rescued and claimable again (one extended in time
// is not); finished deliveries are never claimed nor rescued; Release by
// another owner does nothing.
func testQueueClaims(t *testing.T, db *store.DB) {
	ctx := context.Background()
	s := store.NewSending(db)
	a, d := NewDomainRow(t, db, "alice", "alice.example")
	due := make([]time.Time, 40)
	for i := range due {
		due[i] = now.Add(-time.Duration(i) * time.Second)
	}
	all := deliveryIDs(enqueue(t, db, a.ID, d.ID, now.Add(-time.Hour), due...))
	later := deliveryIDs(enqueue(t, db, a.ID, d.ID, now, now.Add(time.Hour)))

	lease := now.Add(time.Minute)
	var mu sync.Mutex
	var got []int64
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 40 { // bounded: a claimer that never sees an empty queue fails below instead of hanging
				ds, err := s.Claim(ctx, fmt.Sprintf("w%d", w), now, lease, 3, noEntries)
				if err != nil {
					t.Error(err)
					return
				}
				if len(ds) == 0 {
					return
				}
				mu.Lock()
				for _, dl := range ds {
					if dl.State != sending.StateSending || dl.Attempts != 1 {
						t.Errorf("claimed %+v; want sending, first attempt", dl)
					}
					got = append(got, dl.ID)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	slices.Sort(got)
	if !slices.Equal(got, all) {
		t.Fatalf("4 concurrent claimers took %d deliveries (%v); want each of the %d due exactly once", len(got), got, len(all))
	}
	if ds, _ := s.Claim(ctx, "w9", now, lease, 10, noEntries); len(ds) != 0 {
		t.Fatalf("a claim with every due delivery leased took %v", deliveryIDs(ds))
	}

	// Finish some, extend one, leave the rest to run out.
	done := []sending.Completion{
		{ID: all[0], Outcome: sending.Outcome{State: sending.StateDelivered, Code: 250}},
		{ID: all[1], Outcome: sending.Outcome{State: sending.StateBounced, Code: 550}},
		{ID: all[2], Outcome: sending.Outcome{State: sending.StateFailed, Code: 554}},
	}
	owner := func(id int64) string {
		var o string
		if err := db.Reader().QueryRowContext(ctx, `SELECT lease_owner FROM deliveries WHERE id = $1`, id).Scan(&o); err != nil {
			t.Fatal(err)
		}
		return o
	}
	for _, c := range done {
		if ok, err := s.Complete(ctx, c.ID, owner(c.ID), c.Outcome, nil, nil); err != nil || !ok {
			t.Fatalf("Complete(%d) = %v, %v", c.ID, ok, err)
		}
	}
	extended := all[3]
	if err := s.ExtendLease(ctx, extended, owner(extended), now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	released, relOwner := all[4], owner(all[4])
	if err := s.Release(ctx, released, "not-"+relOwner, now); err != nil {
		t.Fatal(err)
	}
	if o := owner(released); o != relOwner {
		t.Fatalf("another owner's Release freed the delivery (owner now %q)", o)
	}
	if err := s.Release(ctx, released, relOwner, now.Add(30*time.Second)); err != nil {
		t.Fatal(err)
	}
	stateOf := func(id int64) (state string, attempts int) {
		if err := db.Reader().QueryRowContext(ctx, `SELECT state, attempts FROM deliveries WHERE id = $1`, id).Scan(&state, &attempts); err != nil {
			t.Fatal(err)
		}
		return state, attempts
	}
	if st, n := stateOf(released); st != sending.StatePending || n != 0 {
		t.Fatalf("released before its first attempt: %s, %d attempts; want pending, 0 (it waited, nothing failed)", st, n)
	}

	if n, err := s.Rescue(ctx, lease); err != nil || n != 0 {
		t.Fatalf("Rescue at the lease's end = %d, %v; want 0 (not yet run out)", n, err)
	}
	after := lease.Add(time.Second)
	n, err := s.Rescue(ctx, after)
	if want := len(all) - len(done) - 2; err != nil || n != want {
		t.Fatalf("Rescue after the leases ran out = %d, %v; want %d (not the finished, extended or released ones)", n, err, want)
	}
	again, err := s.Claim(ctx, "w9", after, after.Add(time.Minute), 100, noEntries)
	if err != nil {
		t.Fatal(err)
	}
	var wantIDs []int64
	for _, id := range all[4:] {
		if id != extended {
			wantIDs = append(wantIDs, id)
		}
	}
	if ids := deliveryIDs(again); !slices.Equal(ids, wantIDs) {
		t.Fatalf("claim after the rescue took %v; want %v (rescued and released, no finished, extended or future one)", ids, wantIDs)
	}
	for _, dl := range again {
		want := 2
		if dl.ID == released {
			want = 1 // a release gives its attempt back
		}
		if dl.Attempts != want {
			t.Errorf("delivery %d reclaimed at attempt %d, want %d", dl.ID, dl.Attempts, want)
		}
	}
	// The future delivery once due; finished ones never.
	future, _ := s.Claim(ctx, "w9", now.Add(time.Hour), now.Add(2*time.Hour), 100, noEntries)
	if ids := deliveryIDs(future); !slices.Equal(ids, later) {
		t.Fatalf("claim at +1 h took %v; want only %v", ids, later)
	}
	if n, _ := s.Rescue(ctx, now.Add(24*time.Hour)); n != len(wantIDs)+2 {
		t.Fatalf("Rescue of everything leased = %d, want %d (never the finished ones)", n, len(wantIDs)+2)
	}
	var finished int
	db.Reader().QueryRowContext(ctx, `SELECT count(*) FROM deliveries WHERE state IN ('delivered', 'bounced', 'failed')`).Scan(&finished)
	if finished != len(done) {
		t.Fatalf("%d finished deliveries after rescues, want %d", finished, len(done))
	}
	// A delivery tried before goes back to deferred, its attempts kept.
	retried, err := s.Claim(ctx, "w10", now.Add(24*time.Hour), now.Add(25*time.Hour), 1, noEntries)
	if err != nil || len(retried) != 1 || retried[0].Attempts < 2 {
		t.Fatalf("claim of a rescued delivery = %+v, %v; want one at its second attempt or later", retried, err)
	}
	if err := s.Release(ctx, retried[0].ID, "w10", now.Add(25*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if st, n := stateOf(retried[0].ID); st != sending.StateDeferred || n != retried[0].Attempts-1 {
		t.Fatalf("released at attempt %d: %s, %d attempts; want deferred, %d", retried[0].Attempts, st, n, retried[0].Attempts-1)
	}
}
