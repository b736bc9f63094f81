package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/store"
)

// testEventListener: on PostgreSQL a listener is woken with the domain of
// an entry committed after Start, and not by another database (schema)
// sharing the server; on SQLite it does nothing and stops at once.
func testEventListener(t *testing.T, a, b *store.DB) {
	ctx := context.Background()
	// Two domains in a, so that a's second domain id differs from b's
	// first: a wake for b's would be told apart.
	NewDomainRow(t, a, "alice", "alice.example")
	_, da := NewDomainRow(t, a, "carol", "carol.example")
	_, db := NewDomainRow(t, b, "bob", "bob.example")
	if da.ID == db.ID {
		t.Fatalf("domain ids coincide (%d): the test cannot tell the databases apart", da.ID)
	}
	if a.Dialect == store.Postgres && channelOf(t, a) == channelOf(t, b) {
		t.Skip("the two schemas' oids collide modulo 2^16: they share a notification channel (1 run in 65,536)")
	}
	woken := make(chan int64, 16)
	l := store.NewEventListener(a, func(id int64) { woken <- id }, func() {}, nil)
	if err := l.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer l.Stop()
	entry := func(dom int64) []event.Entry {
		return []event.Entry{{DomainID: dom, Type: event.Queued, CreatedAt: now, Details: []byte(`{}`)}}
	}
	// b's insert commits first: on one server notifications arrive in
	// commit order, so b's wake would come before a's.
	if err := store.NewEvents(b).Insert(ctx, entry(db.ID)); err != nil {
		t.Fatal(err)
	}
	if err := store.NewEvents(a).Insert(ctx, entry(da.ID)); err != nil {
		t.Fatal(err)
	}
	if a.Dialect != store.Postgres {
		select {
		case id := <-woken:
			t.Fatalf("a SQLite listener woke for domain %d; it should do nothing", id)
		case <-time.After(50 * time.Millisecond):
		}
		return
	}
	select {
	case id := <-woken:
		if id != da.ID {
			t.Fatalf("the listener woke for domain %d first; want %d (its own database's), not another database's", id, da.ID)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no wake within 10 s of a committed insert")
	}
}

// channelOf is the schema's share of the event channel's name (DB.ns).
func channelOf(t *testing.T, db *store.DB) int64 {
	t.Helper()
	var ns int64
	if err := db.Reader().QueryRowContext(context.Background(), `SELECT oid::bigint % 65536 FROM pg_namespace
		WHERE nspname = current_schema()`).Scan(&ns); err != nil {
		t.Fatal(err)
	}
	return ns
}
