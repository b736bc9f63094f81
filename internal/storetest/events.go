package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/store"
)

// RunEvents is the event store's conformance suite; open returns a fresh
// migrated database per call.
func RunEvents(t *testing.T, open func(t *testing.T) *store.DB) {
	t.Run("RoundTrip", func(t *testing.T) { t.Parallel(); testEventRoundTrip(t, open(t)) })
	t.Run("Filters", func(t *testing.T) { t.Parallel(); testEventFilters(t, open(t)) })
	t.Run("Keyset", func(t *testing.T) { t.Parallel(); testEventKeyset(t, open(t)) })
	t.Run("Prune", func(t *testing.T) { t.Parallel(); testEventPrune(t, open(t)) })
	t.Run("Transaction", func(t *testing.T) { t.Parallel(); testEventTx(t, open(t)) })
	t.Run("Horizon", func(t *testing.T) { t.Parallel(); testEventHorizon(t, open(t)) })
	t.Run("HorizonPerDatabase", func(t *testing.T) { t.Parallel(); testEventHorizonPerDatabase(t, open(t), open(t)) })
	t.Run("ConcurrentCounts", func(t *testing.T) { t.Parallel(); testEventConcurrentCounts(t, open(t)) })
	t.Run("HourlyCounts", func(t *testing.T) { t.Parallel(); testEventHourlyCounts(t, open(t)) })
	t.Run("Listener", func(t *testing.T) { t.Parallel(); testEventListener(t, open(t), open(t)) })
}

// eventFixture records a varied set of entries for one domain (and noise
// for another) and returns them with their ids, in id order.
func eventFixture(t *testing.T, db *store.DB) (int64, []event.Entry) {
	t.Helper()
	_, d := NewDomainRow(t, db, "alice", "alice.example")
	_, other := NewDomainRow(t, db, "bob", "bob.example")
	st := store.NewEvents(db)
	rng := rand.New(rand.NewPCG(1, 2))
	senders := []string{"News@Alice.example", "billing@alice.example", "noreply@alice.example"}
	recipients := []string{"Carol@Example.net", "dave@example.org", "erin@example.com", "frank@example.net"}
	subjects := []string{"Your invoice #1001", "ÜBER uns: news", "50% off today", "500 reasons", "Reset your password"}
	tags := []string{"", "billing", "news,weekly", "Password-Reset"}
	types := event.Types()
	var all []event.Entry
	base := now.Add(-72 * time.Hour)
	for i := 0; i < 400; i++ {
		// Spread over three days at irregular steps, with some ties.
		base = base.Add(time.Duration(rng.IntN(20)) * time.Minute)
		e := event.Entry{DomainID: d.ID, MessageID: fmt.Sprintf("<m%d@alice.example>", i/3),
			Type: types[rng.IntN(len(types))], Sender: senders[rng.IntN(len(senders))],
			Recipient: recipients[rng.IntN(len(recipients))], Subject: subjects[rng.IntN(len(subjects))],
			Tags: tags[rng.IntN(len(tags))], CreatedAt: base.Add(time.Duration(rng.IntN(1000)) * time.Millisecond),
			Details: event.NewDetails(map[string]any{"attempt": i % 4})}
		all = append(all, e)
	}
	ctx := context.Background()
	for i := 0; i < len(all); i += 150 {
		if err := st.Insert(ctx, all[i:min(i+150, len(all))]); err != nil {
			t.Fatal(err)
		}
	}
	noise := make([]event.Entry, 50)
	for i := range noise {
		noise[i] = event.Entry{DomainID: other.ID, MessageID: "<x@bob.example>", Type: event.Delivered,
			Sender: "news@alice.example", Recipient: "carol@example.net", Subject: "Your invoice #1001",
			CreatedAt: now.Add(-time.Duration(i) * time.Minute), Details: []byte(`{}`)}
	}
	if err := st.Insert(ctx, noise); err != nil {
		t.Fatal(err)
	}
	got, err := st.List(ctx, event.Filter{DomainID: d.ID, Order: event.OldestFirst, Limit: 10_000})
	if err != nil || len(got) != len(all) {
		t.Fatalf("List all = %d entries, %v; want %d", len(got), err, len(all))
	}
	for i := range got {
		if i > 0 && got[i].ID <= got[i-1].ID {
			t.Fatalf("ids not ascending: %d after %d", got[i].ID, got[i-1].ID)
		}
		all[i].ID = got[i].ID
	}
	return d.ID, all
}

func testEventRoundTrip(t *testing.T, db *store.DB) {
	ctx := context.Background()
	_, d := NewDomainRow(t, db, "alice", "alice.example")
	st := store.NewEvents(db)
	at := now.Add(123 * time.Millisecond)
	in := []event.Entry{
		{DomainID: d.ID, MessageID: "<a@alice.example>", Type: event.Bounced, Sender: "A@alice.example",
			Recipient: "B@example.net", Subject: "Hello ✉", Tags: "x,y", CreatedAt: at,
			Details: []byte(`{"smtp_code":550,"smtp_message":"5.1.1 no such user"}`)},
		{DomainID: d.ID, MessageID: "<b@alice.example>", Type: event.Opened, Sender: "a@alice.example",
			Recipient: "b@example.net", CreatedAt: at, Details: []byte(`{}`)},
	}
	if err := st.Insert(ctx, in); err != nil {
		t.Fatal(err)
	}
	got, err := st.List(ctx, event.Filter{DomainID: d.ID, Limit: 10})
	if err != nil || len(got) != 2 {
		t.Fatalf("List = %+v, %v", got, err)
	}
	// Newest first: equal created_at, so the higher id first.
	b, a := got[0], got[1]
	if a.ID >= b.ID || a.MessageID != "<a@alice.example>" || a.Type != event.Bounced || a.Sender != "A@alice.example" ||
		a.Recipient != "B@example.net" || a.Subject != "Hello ✉" || a.Tags != "x,y" || !a.CreatedAt.Equal(at) ||
		string(a.Details) != `{"smtp_code":550,"smtp_message":"5.1.1 no such user"}` {
		t.Errorf("first entry read back as %+v (details %s)", a, a.Details)
	}
	if b.Tags != "" || b.Subject != "" || string(b.Details) != `{}` {
		t.Errorf("second entry read back as %+v", b)
	}
	var tags any = "unset"
	db.Reader().QueryRowContext(ctx, `SELECT tags FROM events WHERE id = $1`, b.ID).Scan(&tags)
	if tags != nil {
		t.Errorf("empty tags stored as %v, want NULL", tags)
	}
}

// match is the reference implementation of a filter.
func match(f event.Filter, e event.Entry) bool {
	fold := event.Fold
	return e.DomainID == f.DomainID &&
		(f.Start.IsZero() || !e.CreatedAt.Before(f.Start)) && (f.End.IsZero() || !e.CreatedAt.After(f.End)) &&
		(f.Type == "" || e.Type == f.Type) && (f.AnyOf == 0 || f.AnyOf.Has(e.Type)) &&
		(f.Sender == "" || fold(e.Sender) == fold(f.Sender)) && (f.Recipient == "" || fold(e.Recipient) == fold(f.Recipient)) &&
		(f.Subject == "" || strings.Contains(fold(e.Subject), fold(f.Subject))) &&
		(f.Tags == "" || (e.Tags != "" && strings.Contains(fold(e.Tags), fold(f.Tags)))) &&
		e.ID > f.AfterID && (f.UpToID == 0 || e.ID <= f.UpToID)
}

func newestFirst(a, b event.Entry) int {
	if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
		return c
	}
	return int(b.ID - a.ID)
}

func testEventFilters(t *testing.T, db *store.DB) {
	ctx := context.Background()
	dom, all := eventFixture(t, db)
	st := store.NewEvents(db)
	first, last := all[0].CreatedAt, all[len(all)-1].CreatedAt
	hour := first.Truncate(time.Hour).Add(5 * time.Hour)
	cases := []struct {
		name string
		f    event.Filter
	}{
		{"none", event.Filter{}},
		{"start", event.Filter{Start: first.Add(24 * time.Hour)}},
		{"end", event.Filter{End: first.Add(30 * time.Hour)}},
		{"start and end on hours", event.Filter{Start: hour, End: hour.Add(7*time.Hour - time.Millisecond)}},
		{"range inside an hour", event.Filter{Start: hour.Add(10 * time.Minute), End: hour.Add(50 * time.Minute)}},
		{"range across partial hours", event.Filter{Start: hour.Add(17 * time.Minute), End: hour.Add(26*time.Hour + 3*time.Minute)}},
		{"end is an exact entry time", event.Filter{End: all[100].CreatedAt}},
		{"start is an exact entry time", event.Filter{Start: all[100].CreatedAt}},
		{"empty range", event.Filter{Start: last.Add(time.Hour)}},
		{"inverted range", event.Filter{Start: last, End: first}},
		{"type", event.Filter{Type: event.Delivered}},
		{"any of types", event.Filter{AnyOf: event.SetOf(event.Bounced, event.Opened)}},
		{"any of types and recipient", event.Filter{AnyOf: event.SetOf(event.Delivered, event.Queued), Recipient: "carol@example.net"}},
		{"type and range", event.Filter{Type: event.Opened, Start: hour.Add(3 * time.Minute), End: last.Add(-5 * time.Hour)}},
		{"sender, other case", event.Filter{Sender: "NEWS@alice.EXAMPLE"}},
		{"recipient, other case", event.Filter{Recipient: "carol@EXAMPLE.net"}},
		{"recipient is not a substring match", event.Filter{Recipient: "carol"}},
		{"subject substring", event.Filter{Subject: "INVOICE"}},
		{"subject, non-ASCII case", event.Filter{Subject: "über"}},
		{"subject with %, literal", event.Filter{Subject: "50%"}},
		{"subject with _, literal", event.Filter{Subject: "r_set"}},
		{"tags substring", event.Filter{Tags: "password"}},
		{"tags, comma", event.Filter{Tags: "s,w"}},
		{"combined", event.Filter{Sender: "billing@alice.example", Recipient: "dave@example.org", Type: event.Delivered,
			Start: first.Add(12 * time.Hour)}},
		{"combined substrings", event.Filter{Subject: "your", Tags: "reset", End: last.Add(-24 * time.Hour)}},
		{"after and up to id", event.Filter{AfterID: all[50].ID, UpToID: all[300].ID, Type: event.Queued}},
	}
	for _, c := range cases {
		f := c.f
		f.DomainID = dom
		var want []event.Entry
		for _, e := range all {
			if match(f, e) {
				want = append(want, e)
			}
		}
		slices.SortFunc(want, newestFirst)
		f.Limit = 10_000
		got, err := st.List(ctx, f)
		if err != nil {
			t.Fatalf("%s: List: %v", c.name, err)
		}
		if !sameIDs(got, want) {
			t.Errorf("%s: List gave %d entries %v, want %d %v", c.name, len(got), ids(got), len(want), ids(want))
		}
		n, exact, err := st.Count(ctx, f, 10_000)
		if err != nil || n != len(want) || !exact {
			t.Errorf("%s: Count = %d, %v, %v; want %d exact", c.name, n, exact, err, len(want))
		}
		if len(want) > 3 {
			// Paging with offset walks the same order.
			f.Limit, f.Offset = 2, 1
			page, err := st.List(ctx, f)
			if err != nil || !sameIDs(page, want[1:3]) {
				t.Errorf("%s: page at offset 1 = %v, %v; want %v", c.name, ids(page), err, ids(want[1:3]))
			}
			if f.OnlyTimeAndType() {
				continue // exact at any size
			}
			if n, exact, _ := st.Count(ctx, f, 3); n != 3 || exact {
				t.Errorf("%s: Count capped at 3 = %d, %v; want 3, not exact", c.name, n, exact)
			}
		}
	}
	// Bounds: the smallest and largest id in a time range.
	f := event.Filter{DomainID: dom, Start: all[10].CreatedAt, End: all[200].CreatedAt}
	var lo, hi int64
	for _, e := range all {
		if match(f, e) {
			if lo == 0 {
				lo = e.ID
			}
			hi = max(hi, e.ID)
		}
	}
	if gotLo, gotHi, err := st.Bounds(ctx, f); err != nil || gotLo != lo || gotHi != hi {
		t.Errorf("Bounds(range) = %d, %d, %v; want %d, %d", gotLo, gotHi, err, lo, hi)
	}
	if gotLo, gotHi, err := st.Bounds(ctx, event.Filter{DomainID: dom}); err != nil || gotLo != all[0].ID || gotHi != all[len(all)-1].ID {
		t.Errorf("Bounds(all) = %d, %d, %v; want %d, %d", gotLo, gotHi, err, all[0].ID, all[len(all)-1].ID)
	}
	if gotLo, gotHi, err := st.Bounds(ctx, event.Filter{DomainID: dom + 1000}); err != nil || gotLo != 0 || gotHi != 0 {
		t.Errorf("Bounds(unknown domain) = %d, %d, %v; want 0, 0", gotLo, gotHi, err)
	}
}

func ids(es []event.Entry) []int64 {
	out := make([]int64, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}

func sameIDs(a, b []event.Entry) bool { return slices.Equal(ids(a), ids(b)) }

func testEventKeyset(t *testing.T, db *store.DB) {
	ctx := context.Background()
	dom, all := eventFixture(t, db)
	st := store.NewEvents(db)
	f := event.Filter{DomainID: dom, Order: event.OldestFirst, Limit: 37, Type: event.Clicked, UpToID: all[350].ID}
	var got []event.Entry
	for {
		page, err := st.List(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, page...)
		if len(page) < f.Limit {
			break
		}
		f.AfterID = page[len(page)-1].ID
	}
	var want []event.Entry
	for _, e := range all[:351] {
		if e.Type == event.Clicked {
			want = append(want, e)
		}
	}
	if !sameIDs(got, want) {
		t.Errorf("keyset pages = %v, want %v", ids(got), ids(want))
	}
}

func testEventPrune(t *testing.T, db *store.DB) {
	ctx := context.Background()
	dom, all := eventFixture(t, db)
	st := store.NewEvents(db)
	cut := all[0].CreatedAt.Add(26*time.Hour + 17*time.Minute) // mid-hour: counts must stay exact
	var keep []event.Entry
	for _, e := range all {
		if !e.CreatedAt.Before(cut) {
			keep = append(keep, e)
		}
	}
	n, err := st.Prune(ctx, cut, 7)
	if err != nil || n != int64(len(all)-len(keep)) {
		t.Fatalf("Prune = %d, %v; want %d", n, err, len(all)-len(keep))
	}
	got, err := st.List(ctx, event.Filter{DomainID: dom, Order: event.OldestFirst, Limit: 10_000})
	if err != nil || !sameIDs(got, keep) {
		t.Fatalf("after Prune: %d entries, %v; want %d", len(got), err, len(keep))
	}
	for _, f := range []event.Filter{{}, {Type: event.Send}, {End: cut.Add(2 * time.Hour)}, {Start: cut.Add(-3 * time.Hour)}} {
		f.DomainID = dom
		want := 0
		for _, e := range keep {
			if match(f, e) {
				want++
			}
		}
		if n, exact, err := st.Count(ctx, f, 10); err != nil || n != want || !exact {
			t.Errorf("after Prune, Count(%+v) = %d, %v, %v; want %d exact", f, n, exact, err, want)
		}
	}
	if n, err := st.Prune(ctx, cut, 7); err != nil || n != 0 {
		t.Errorf("second Prune = %d, %v; want 0", n, err)
	}
	var rows int
	db.Reader().QueryRowContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM event_counts
		GROUP BY domain_id, hour, event_type HAVING SUM(n) <= 0) empty`).Scan(&rows)
	if rows != 0 {
		t.Errorf("%d empty hourly counts left behind", rows)
	}
}

func testEventTx(t *testing.T, db *store.DB) {
	ctx := context.Background()
	_, d := NewDomainRow(t, db, "alice", "alice.example")
	st := store.NewEvents(db)
	e := event.Entry{DomainID: d.ID, Type: event.Queued, Recipient: "x@example.net", CreatedAt: now, Details: []byte(`{}`)}
	boom := errors.New("boom")
	err := db.InTx(ctx, func(q store.Querier) error {
		if err := st.In(q).Insert(ctx, []event.Entry{e, e}); err != nil {
			return err
		}
		// Reads through the bound store see the transaction's rows.
		if got, err := st.In(q).List(ctx, event.Filter{DomainID: d.ID, Limit: 10}); err != nil || len(got) != 2 {
			t.Errorf("List inside the transaction = %d, %v; want 2", len(got), err)
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("InTx = %v", err)
	}
	if n, _, err := st.Count(ctx, event.Filter{DomainID: d.ID}, 10); err != nil || n != 0 {
		t.Fatalf("after rollback Count = %d, %v; want 0", n, err)
	}
	if err := db.InTx(ctx, func(q store.Querier) error { return st.In(q).Insert(ctx, []event.Entry{e}) }); err != nil {
		t.Fatal(err)
	}
	if n, _, err := st.Count(ctx, event.Filter{DomainID: d.ID}, 10); err != nil || n != 1 {
		t.Fatalf("after commit Count = %d, %v; want 1", n, err)
	}
}

// testEventHorizon checks the property followers rely on: Bounds' hi never
// passes an id that may still commit. A transaction that took an id and is
// slow to commit holds the horizon below that id even when a later id has
// committed (on PostgreSQL, where the later insert must not wait for it).
func testEventHorizon(t *testing.T, db *store.DB) {
	ctx := context.Background()
	_, d := NewDomainRow(t, db, "alice", "alice.example")
	st := store.NewEvents(db)
	e := event.Entry{DomainID: d.ID, Type: event.Queued, Recipient: "x@example.net", CreatedAt: now, Details: []byte(`{}`)}
	for round := 0; round < 3; round++ {
		firstID, release := make(chan int64, 1), make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := db.InTx(ctx, func(q store.Querier) error {
				if err := st.In(q).Insert(ctx, []event.Entry{e}); err != nil {
					return err
				}
				mine, err := st.In(q).List(ctx, event.Filter{DomainID: d.ID, Limit: 1})
				if err != nil || len(mine) != 1 {
					return fmt.Errorf("own entry: %v %v", mine, err)
				}
				firstID <- mine[0].ID
				<-release
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		}()
		first := <-firstID
		later := e
		later.Type = event.Delivered
		done := make(chan error, 1)
		go func() { done <- st.Insert(ctx, []event.Entry{later}) }()
		if db.Dialect == store.Postgres {
			select {
			case err := <-done:
				done <- err // for the common path below
			case <-time.After(10 * time.Second):
				close(release)
				t.Fatalf("round %d: an insert waited for another domain transaction to commit", round)
			}
		}
		if _, hi, err := st.Bounds(ctx, event.Filter{DomainID: d.ID}); err != nil || hi >= first {
			close(release)
			t.Fatalf("round %d: Bounds hi = %d, %v while id %d is uncommitted; want below it", round, hi, err, first)
		}
		close(release)
		wg.Wait()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		all, _ := st.List(ctx, event.Filter{DomainID: d.ID, Limit: 100})
		if _, hi, err := st.Bounds(ctx, event.Filter{DomainID: d.ID}); err != nil || hi != all[0].ID || hi <= first {
			t.Fatalf("round %d: after both committed Bounds hi = %d, %v; want the newest id %d", round, hi, err, all[0].ID)
		}
	}
}

// testEventHorizonPerDatabase: an insert still running in one database (on
// PostgreSQL, another schema of the same server database, as the tests and
// deployments sharing a server use) does not hold back another's horizon.
func testEventHorizonPerDatabase(t *testing.T, a, b *store.DB) {
	ctx := context.Background()
	_, da := NewDomainRow(t, a, "alice", "alice.example")
	_, db := NewDomainRow(t, b, "bob", "bob.example")
	holding, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- a.InTx(ctx, func(q store.Querier) error {
			err := store.NewEvents(a).In(q).Insert(ctx, []event.Entry{{DomainID: da.ID, Type: event.Queued, CreatedAt: now, Details: []byte(`{}`)}})
			close(holding)
			<-release
			return err
		})
	}()
	<-holding
	defer func() { close(release); <-done }()
	st := store.NewEvents(b)
	for range 3 {
		if err := st.Insert(ctx, []event.Entry{{DomainID: db.ID, Type: event.Queued, CreatedAt: now, Details: []byte(`{}`)}}); err != nil {
			t.Fatal(err)
		}
	}
	all, _ := st.List(ctx, event.Filter{DomainID: db.ID, Limit: 10})
	if _, hi, err := st.Bounds(ctx, event.Filter{DomainID: db.ID}); err != nil || len(all) != 3 || hi != all[0].ID {
		t.Fatalf("Bounds hi = %d, %v while another database has an insert running; want the newest id %d", hi, err, all[0].ID)
	}
}

// testEventConcurrentCounts records from many connections at once (on
// PostgreSQL they spread over count stripes), then checks that totals are
// exact before and after compaction and pruning.
func testEventConcurrentCounts(t *testing.T, db *store.DB) {
	ctx := context.Background()
	_, d := NewDomainRow(t, db, "alice", "alice.example")
	st := store.NewEvents(db)
	types := []event.Type{event.Queued, event.Send, event.Delivered}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				batch := []event.Entry{
					{DomainID: d.ID, Type: types[i%3], CreatedAt: now.Add(-90 * time.Minute), Details: []byte(`{}`)},
					{DomainID: d.ID, Type: types[(i+g)%3], CreatedAt: now.Add(-30 * time.Minute), Details: []byte(`{}`)},
				}
				if err := st.Insert(ctx, batch); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	check := func(stage string) {
		t.Helper()
		for _, f := range []event.Filter{{}, {Type: event.Send}, {End: now.Add(-time.Hour)}, {Start: now.Add(-time.Hour), Type: event.Queued}} {
			f.DomainID = d.ID
			f.Limit = 1000
			want, err := st.List(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			if n, exact, err := st.Count(ctx, f, 10); err != nil || n != len(want) || !exact {
				t.Errorf("%s: Count(%+v) = %d, %v, %v; want %d exact", stage, f, n, exact, err, len(want))
			}
		}
	}
	check("after concurrent inserts")
	if err := st.CompactCounts(ctx, now); err != nil {
		t.Fatal(err)
	}
	check("after compaction")
	var striped int
	db.Reader().QueryRowContext(ctx, `SELECT count(*) FROM event_counts WHERE stripe <> 0`).Scan(&striped)
	if striped != 0 {
		t.Errorf("%d striped count rows left after compacting every hour", striped)
	}
	if n, err := st.Prune(ctx, now, 100); err != nil || n != 320 {
		t.Fatalf("Prune = %d, %v; want 320", n, err)
	}
	var rows int
	db.Reader().QueryRowContext(ctx, `SELECT count(*) FROM event_counts`).Scan(&rows)
	if rows != 0 {
		t.Errorf("%d count rows left after pruning everything", rows)
	}
}
