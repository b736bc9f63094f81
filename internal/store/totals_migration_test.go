package store

import (
	"context"
	"testing"
	"time"

	"github.com/postline/postline/internal/event"
)

// TestTotalsMigrationCountsExistingLog: 00021 adds the all-time totals an
// unfiltered page's total reads; a log written before the upgrade must be
// counted in them, and entries recorded after it added.
func TestTotalsMigrationCountsExistingLog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openTempSQLite(t)
	p, err := db.migrations()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 20); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO accounts (id, login, created_at) VALUES (1, 'alice', 1)`,
		`INSERT INTO domains (id, account_id, name, created_at, verified_at, dkim_selector, dkim_key, dkim_public, delivery_mode)
			VALUES (7, 1, 'shop.example', 1, 2, 's', 'k', 'p', 'direct')`,
	} {
		if _, err := db.w.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	ev := Events{db: db}
	now := time.Now()
	var before []event.Entry
	for i := range 30 {
		typ := event.Delivered
		if i%3 == 0 {
			typ = event.Opened
		}
		before = append(before, event.Entry{DomainID: 7, Type: typ, CreatedAt: now.Add(-time.Duration(i) * 5 * time.Hour), Details: []byte(`{}`)})
	}
	// The 00020 schema has no event_totals: write what that version wrote.
	err = db.InTx(ctx, func(q Querier) error {
		e := ev.In(q)
		if err := e.insertEach(ctx, before); err != nil {
			return err
		}
		agg := map[countKey]int64{}
		for _, en := range before {
			agg[countKey{en.DomainID, hourOf(ms(en.CreatedAt)), en.Type}]++
		}
		return e.upsertCounts(ctx, agg)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ev.Insert(ctx, []event.Entry{{DomainID: 7, Type: event.Opened, CreatedAt: now, Details: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		typ  event.Type
		want int
	}{{"", 31}, {event.Opened, 11}, {event.Delivered, 20}, {event.Clicked, 0}} {
		n, exact, err := ev.Count(ctx, event.Filter{DomainID: 7, Type: c.typ}, 1000)
		if err != nil || n != c.want || !exact {
			t.Errorf("Count(type %q) after the upgrade = %d, %v, %v; want %d exact", c.typ, n, exact, err, c.want)
		}
	}
}
