package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/store"
)

// testEventHourlyCounts: entries are counted per hour (UTC start) and
// type from the hour of from on, one domain's alone.
func testEventHourlyCounts(t *testing.T, db *store.DB) {
	ctx := context.Background()
	_, d := NewDomainRow(t, db, "alice", "alice.example")
	_, other := NewDomainRow(t, db, "bob", "bob.example")
	h0 := now.Truncate(time.Hour)
	at := func(dom int64, typ event.Type, when time.Time) event.Entry {
		return event.Entry{DomainID: dom, Type: typ, CreatedAt: when, Details: []byte(`{}`)}
	}
	st := store.NewEvents(db)
	if err := st.Insert(ctx, []event.Entry{
		at(d.ID, event.Delivered, h0.Add(-time.Hour)), // before from's hour
		at(d.ID, event.Delivered, h0.Add(time.Minute)),
		at(d.ID, event.Delivered, h0.Add(59*time.Minute)),
		at(d.ID, event.Bounced, h0.Add(30*time.Minute)),
		at(d.ID, event.Delivered, h0.Add(2*time.Hour)),
		at(other.ID, event.Delivered, h0.Add(time.Minute)),
	}); err != nil {
		t.Fatal(err)
	}
	got, err := st.HourlyCounts(ctx, d.ID, h0.Add(20*time.Minute))
	want := map[time.Time]map[event.Type]int{
		h0:                    {event.Delivered: 2, event.Bounced: 1},
		h0.Add(2 * time.Hour): {event.Delivered: 1},
	}
	if err != nil || len(got) != len(want) {
		t.Fatalf("HourlyCounts = %v, %v; want %v", got, err, want)
	}
	for h, types := range want {
		for typ, n := range types {
			if got[h][typ] != n || len(got[h]) != len(types) {
				t.Fatalf("HourlyCounts = %v; want %v", got, want)
			}
		}
	}
}
