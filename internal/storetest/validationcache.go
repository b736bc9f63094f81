package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/validation"
)

// testValidationCache: a result round trips with its original time until
// it expires (not at its expiry), a Put replaces, expired rows are pruned,
// and Purge deletes by LIKE pattern with "_" literal when escaped.
func testValidationCache(t *testing.T, db *store.DB) {
	ctx := context.Background()
	c := store.NewValidationCache(db)
	msg := "no such domain"
	r := validation.Result{Email: "A@x.example", IsValid: false, Error: &msg, Warnings: []string{"w1"},
		Reason: "no_mx", Deliverability: validation.Undeliverable, DeliverabilityReasons: []string{"no_mx"},
		SpamtrapScore: 0.25, ValidatedAt: now}
	exp := now.Add(time.Hour)
	if err := c.Put(ctx, "standard:a@x.example", r, exp); err != nil {
		t.Fatal(err)
	}
	got, ok, err := c.Get(ctx, "standard:a@x.example", now.Add(time.Minute))
	if err != nil || !ok || got.Email != r.Email || got.IsValid || got.Error == nil || *got.Error != msg ||
		got.Reason != "no_mx" || got.SpamtrapScore != 0.25 || got.Deliverability != validation.Undeliverable ||
		len(got.Warnings) != 1 || !got.ValidatedAt.Equal(now) {
		t.Fatalf("Get = %+v, %v, %v; want the stored result, validated at %v", got, ok, err, now)
	}
	if _, ok, _ := c.Get(ctx, "strict:a@x.example", now); ok {
		t.Fatal("Get of another key hit")
	}
	if _, ok, err := c.Get(ctx, "standard:a@x.example", exp); err != nil || ok {
		t.Fatalf("Get at the expiry = %v, %v; want a miss", ok, err)
	}

	// A Put replaces the result, its time and its expiry.
	r2 := validation.Result{Email: "a@x.example", IsValid: true, Warnings: []string{}, Deliverability: validation.Deliverable,
		ValidatedAt: now.Add(2 * time.Hour)}
	if err := c.Put(ctx, "standard:a@x.example", r2, now.Add(3*time.Hour)); err != nil {
		t.Fatal(err)
	}
	got, ok, _ = c.Get(ctx, "standard:a@x.example", now.Add(2*time.Hour))
	if !ok || !got.IsValid || got.Error != nil || !got.ValidatedAt.Equal(now.Add(2*time.Hour)) {
		t.Fatalf("after a second Put: %+v, %v; want the new result", got, ok)
	}

	// Expired rows are deleted by a later Put (a fresh cache prunes at once).
	if err := c.Put(ctx, "standard:old@x.example", validation.Result{ValidatedAt: now}, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := store.NewValidationCache(db).Put(ctx, "standard:new@x.example",
		validation.Result{ValidatedAt: now.Add(2 * time.Hour)}, now.Add(4*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if n := cacheRows(t, db, "standard:old@x.example"); n != 0 {
		t.Fatalf("an expired entry was not pruned (%d rows)", n)
	}
	if n := cacheRows(t, db, "standard:a@x.example"); n != 1 {
		t.Fatalf("prune took a live entry (%d rows)", n)
	}

	// Purge: by pattern, "_" literal when escaped; no pattern: all.
	for _, k := range []string{"standard:b_1@y.example", "standard:bx1@y.example", "strict:b_1@y.example#rfc"} {
		if err := c.Put(ctx, k, validation.Result{ValidatedAt: now}, now.Add(24*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	n, err := c.Purge(ctx, []string{`standard:b\_1@y.example`, `strict:b\_1@y.example#%`})
	if err != nil || n != 2 {
		t.Fatalf("Purge = %d, %v; want 2 (not bx1)", n, err)
	}
	if _, ok, _ := c.Get(ctx, "standard:bx1@y.example", now); !ok {
		t.Fatal("Purge of b\\_1 took bx1: the escape was ignored")
	}
	if _, ok, _ := c.Get(ctx, "standard:b_1@y.example", now); ok {
		t.Fatal("a purged entry is still served")
	}
	if n, err := c.Purge(ctx, nil); err != nil || n != 3 {
		t.Fatalf("Purge(all) = %d, %v; want 3 (a@, new@, bx1@)", n, err)
	}

	// Concurrent Puts of one key: no error, one row.
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.Put(ctx, "standard:race@x.example", validation.Result{Email: fmt.Sprint(i), ValidatedAt: now}, now.Add(time.Hour)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := cacheRows(t, db, "standard:race@x.example"); n != 1 {
		t.Fatalf("concurrent Puts left %d rows, want 1", n)
	}
}

func cacheRows(t *testing.T, db *store.DB, key string) int {
	t.Helper()
	var n int
	if err := db.Reader().QueryRowContext(context.Background(), `SELECT count(*) FROM validation_cache WHERE key = $1`, key).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
