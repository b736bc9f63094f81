package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/postline/postline/internal/store"
)

// testMeta: values round trip and are overwritten by Set; SetIfAbsent's
// first writer wins, also when writers race; Bump counts from 1 and loses
// no concurrent increment.
func testMeta(t *testing.T, db *store.DB) {
	ctx := context.Background()
	m := store.NewMeta(db)
	if v, ok, err := m.Get(ctx, "fingerprint"); err != nil || ok || v != "" {
		t.Fatalf("Get of an absent name = %q, %v, %v; want not ok", v, ok, err)
	}
	if err := m.Set(ctx, "fingerprint", "one"); err != nil {
		t.Fatal(err)
	}
	if err := m.Set(ctx, "other", "x"); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := m.Get(ctx, "fingerprint"); err != nil || !ok || v != "one" {
		t.Fatalf("Get = %q, %v, %v; want one", v, ok, err)
	}
	if err := m.Set(ctx, "fingerprint", "two"); err != nil {
		t.Fatal(err)
	}
	if v, _, _ := m.Get(ctx, "fingerprint"); v != "two" {
		t.Fatalf("after overwrite Get = %q, want two", v)
	}
	if v, _, _ := m.Get(ctx, "other"); v != "x" {
		t.Fatalf("an overwrite reached another name: %q", v)
	}

	if v, err := m.SetIfAbsent(ctx, "fingerprint", "three"); err != nil || v != "two" {
		t.Fatalf("SetIfAbsent over a value = %q, %v; want the value kept, two", v, err)
	}
	if v, err := m.SetIfAbsent(ctx, "key-id", "k1"); err != nil || v != "k1" {
		t.Fatalf("SetIfAbsent of a new name = %q, %v; want k1", v, err)
	}
	var wg sync.WaitGroup
	got := make([]string, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := m.SetIfAbsent(ctx, "race", fmt.Sprint(i))
			if err != nil {
				t.Error(err)
			}
			got[i] = v
		}()
	}
	wg.Wait()
	for _, v := range got {
		if v != got[0] || v == "" {
			t.Fatalf("racing SetIfAbsent returned %v; want one value for all", got)
		}
	}
	if v, _, _ := m.Get(ctx, "race"); v != got[0] {
		t.Fatalf("stored %q, but the racers were told %q", v, got[0])
	}

	if n, err := m.Counter(ctx, store.MetaSuppressionsRemoved); err != nil || n != 0 {
		t.Fatalf("Counter of an absent name = %d, %v; want 0", n, err)
	}
	if n, err := m.Bump(ctx, store.MetaSuppressionsRemoved); err != nil || n != 1 {
		t.Fatalf("first Bump = %d, %v; want 1", n, err)
	}
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := m.Bump(ctx, store.MetaSuppressionsRemoved); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n, err := m.Counter(ctx, store.MetaSuppressionsRemoved); err != nil || n != 21 {
		t.Fatalf("after 1 + 20 concurrent Bumps Counter = %d, %v; want 21", n, err)
	}
	if v, ok, _ := m.Get(ctx, store.MetaSuppressionsRemoved); !ok || v != "21" {
		t.Fatalf("the counter read as a value = %q, %v; want 21", v, ok)
	}
}
