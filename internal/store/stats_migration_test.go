package store

import (
	"context"
	"testing"
	"time"

	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/mailgun"
)

// TestStatsMigrationCountsExistingLog: 00032 adds Mailgun's stat counts;
// the log's hourly counts of before the upgrade become the domain's stats
// (by type alone), and entries recorded after it add to them.
func TestStatsMigrationCountsExistingLog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openTempSQLite(t)
	p, err := db.migrations()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 31); err != nil {
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
	h := time.Now().UTC().Truncate(time.Hour).Add(-5 * time.Hour)
	var before []event.Entry
	for typ, n := range map[event.Type]int{event.Queued: 4, event.Send: 4, event.Delivered: 3, event.PermanentFail: 1,
		event.Bounced: 1, event.Opened: 2, event.Unsubscribed: 1, event.Deferred: 2, event.TemporaryFail: 2} {
		for range n {
			before = append(before, event.Entry{DomainID: 7, Type: typ, CreatedAt: h.Add(10 * time.Minute), Details: []byte(`{}`)})
		}
	}
	// The 00031 schema has no stat_counts: write what that version wrote.
	err = db.InTx(ctx, func(q Querier) error {
		e := Events{db: db}.In(q)
		if err := e.insertEach(ctx, before); err != nil {
			return err
		}
		agg := map[countKey]int64{}
		for _, en := range before {
			agg[countKey{en.DomainID, hourOf(ms(en.CreatedAt)), en.Type}]++
		}
		if err := e.upsertCounts(ctx, agg); err != nil {
			return err
		}
		// Pruning leaves a negative stripe-0 row beside positive ones.
		_, err := q.ExecContext(ctx, `INSERT INTO event_counts (domain_id, hour, event_type, stripe, n) VALUES (7, $1, 'clicked', 0, 0)`,
			hourOf(ms(h)))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := (Events{db: db}).Insert(ctx, []event.Entry{{DomainID: 7, Type: event.Delivered, Tags: "news", CreatedAt: h.Add(time.Minute),
		Details: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	got, err := NewStats(db).Counts(ctx, []int64{7}, "", h, h.Add(time.Hour), false)
	want := map[string]int64{mailgun.StatAccepted: 4, mailgun.StatDelivered: 4, mailgun.StatPermanentOther: 1,
		mailgun.StatOpenedRepeat: 2, mailgun.StatUnsubscribed: 1, mailgun.StatTemporaryESPBlock: 2}
	if err != nil || len(got) != 1 || len(got[h]) != len(want) {
		t.Fatalf("stats after the upgrade = %v, %v; want %v", got, err, want)
	}
	for k, n := range want {
		if got[h][k] != n {
			t.Errorf("%s = %d; want %d (all: %v)", k, got[h][k], n, got[h])
		}
	}
}
