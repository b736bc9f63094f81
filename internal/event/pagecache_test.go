package event_test

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/store"
)

// countingStore counts the row reads of List.
type countingStore struct {
	event.Store
	lists atomic.Int64
}

func (c *countingStore) List(ctx context.Context, f event.Filter) ([]event.Entry, error) {
	c.lists.Add(1)
	return c.Store.List(ctx, f)
}

// countedService seeds n entries and returns a service over a store that
// counts its row reads (no polling: wake-ups come from the test).
func countedService(t *testing.T, n int) (bundle, *countingStore, *event.Service) {
	t.Helper()
	b := setup(t, event.Config{})
	b.seed(t, n)
	cs := &countingStore{Store: store.NewEvents(b.db)}
	return b, cs, event.NewService(cs, event.Config{Poll: time.Hour})
}

// A page asked again comes from memory only while the log cannot have
// changed: a write that wakes nobody (another process's), a prune and a
// wake-up each make the next List read the rows again, and a caller that
// reorders its page does not reorder the next one.
func TestListPageCache(t *testing.T) {
	t.Parallel()
	b, cs, svc := countedService(t, 50)
	ctx := context.Background()
	f := event.Filter{DomainID: b.domain, Limit: 10}
	list := func(wantReads int64) event.Page {
		t.Helper()
		p, err := svc.List(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		if got := cs.lists.Load(); got != wantReads {
			t.Fatalf("row reads = %d, want %d", got, wantReads)
		}
		return p
	}

	first := list(1)
	again := list(1) // unchanged: from memory
	if !slices.EqualFunc(first.Entries, again.Entries, func(a, b event.Entry) bool { return a.ID == b.ID }) || again.Total != 50 {
		t.Fatalf("cached page differs: %v total %d, want %v total 50", ids(again.Entries), again.Total, ids(first.Entries))
	}
	slices.Reverse(again.Entries) // the console reverses a message's chain in place
	if p := list(1); p.Entries[0].ID != first.Entries[0].ID {
		t.Fatalf("a caller's reordering reached the cache: first id %d, want %d", p.Entries[0].ID, first.Entries[0].ID)
	}

	// Written through the store alone, as another process would: no wake-up.
	newer := event.Entry{DomainID: b.domain, MessageID: "late@alice.example", Type: event.Delivered,
		Sender: "a@alice.example", Recipient: "r@example.net", CreatedAt: now.Add(time.Minute), Details: []byte(`{}`)}
	if err := store.NewEvents(b.db).Insert(ctx, []event.Entry{newer}); err != nil {
		t.Fatal(err)
	}
	if p := list(2); p.Total != 51 || p.Entries[0].MessageID != "late@alice.example" {
		t.Fatalf("after another writer's insert: total %d, first %q; want 51 and the new entry", p.Total, p.Entries[0].MessageID)
	}
	list(2)

	// Pruning changes the total too.
	if _, err := cs.Prune(ctx, now.Add(-24*time.Hour), 1000); err != nil {
		t.Fatal(err)
	}
	p := list(3)
	if p.Total >= 51 {
		t.Fatalf("after pruning the older half the total is still %d", p.Total)
	}

	svc.Wake(b.domain) // this process's writers and other processes' notifications
	list(4)
	list(4)
	svc.WakeAll()
	list(5)

	// Another filter is another page.
	f.Offset = 10
	list(6)
}

// ListJSON's rendering is the page's own, rendered once while the page is
// served from memory, and again once the log changed.
func TestListJSONFollowsThePage(t *testing.T) {
	t.Parallel()
	b, cs, svc := countedService(t, 20)
	ctx := context.Background()
	f := event.Filter{DomainID: b.domain, Limit: 5}
	listJSON := func() (event.Page, []byte) {
		t.Helper()
		p, js, err := svc.ListJSON(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		if want := event.AppendJSONArray(nil, p.Entries); string(js) != string(want) {
			t.Fatalf("rendering is not the page's:\n%s\nwant\n%s", js, want)
		}
		return p, js
	}
	_, first := listJSON()
	_, again := listJSON()
	if &first[0] != &again[0] {
		t.Error("a page from memory was rendered again")
	}
	if cs.lists.Load() != 1 {
		t.Fatalf("row reads = %d, want 1", cs.lists.Load())
	}
	newer := event.Entry{DomainID: b.domain, MessageID: "late@alice.example", Type: event.Delivered,
		Sender: "a@alice.example", Recipient: "r@example.net", CreatedAt: now.Add(time.Minute), Details: []byte(`{}`)}
	if err := store.NewEvents(b.db).Insert(ctx, []event.Entry{newer}); err != nil {
		t.Fatal(err)
	}
	if p, js := listJSON(); p.Total != 21 || !strings.Contains(string(js), `"late@alice.example"`) {
		t.Fatalf("after an insert: total %d, rendering %s; want 21 and the new entry", p.Total, js)
	}
}
