package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/postline/postline/internal/mtasts"
	"github.com/postline/postline/internal/store"
)

func testMTASTSPolicies(t *testing.T, db *store.DB) {
	ctx := context.Background()
	s := store.NewMTASTSPolicies(db)
	if _, ok, err := s.LoadPolicy(ctx, "example.org"); ok || err != nil {
		t.Fatalf("LoadPolicy before any save = ok %v, %v; want nothing", ok, err)
	}
	c := mtasts.Cached{Domain: "example.org", ID: "20261201", Body: "version: STSv1\r\nmode: enforce\r\nmx: mx.example.org\r\nmax_age: 86400\r\n",
		FetchedAt: now, ExpiresAt: now.Add(24 * time.Hour), RefreshAt: now.Add(12 * time.Hour)}
	if err := s.SavePolicy(ctx, c); err != nil {
		t.Fatal(err)
	}
	got, ok, err := s.LoadPolicy(ctx, "example.org")
	if err != nil || !ok || got != c {
		t.Fatalf("LoadPolicy = %+v, %v, %v; want %+v", got, ok, err, c)
	}
	// A refetch under a new id replaces the policy.
	c2 := c
	c2.ID, c2.Body, c2.FetchedAt = "20261202", "version: STSv1\nmode: testing\nmx: *.example.org\nmax_age: 600\n", now.Add(time.Hour)
	c2.ExpiresAt, c2.RefreshAt = c2.FetchedAt.Add(10*time.Minute), c2.FetchedAt.Add(5*time.Minute)
	if err := s.SavePolicy(ctx, c2); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := s.LoadPolicy(ctx, "example.org"); err != nil || !ok || got != c2 {
		t.Fatalf("LoadPolicy after an update = %+v, %v, %v; want %+v", got, ok, err, c2)
	}
	if _, ok, _ := s.LoadPolicy(ctx, "other.example"); ok {
		t.Error("LoadPolicy(other.example) found a policy")
	}
	// Policies are shared: another instance (another process) sees it.
	if got, ok, _ := store.NewMTASTSPolicies(db).LoadPolicy(ctx, "example.org"); !ok || got.ID != "20261202" {
		t.Errorf("a second instance loads %+v, %v; want the saved policy", got, ok)
	}
	// An expired policy goes when a later save prunes (hourly).
	other := mtasts.Cached{Domain: "later.example", ID: "1", Body: "x", FetchedAt: now.Add(3 * time.Hour),
		ExpiresAt: now.Add(4 * time.Hour), RefreshAt: now.Add(4 * time.Hour)}
	if err := s.SavePolicy(ctx, other); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.LoadPolicy(ctx, "example.org"); ok {
		t.Error("the policy that expired before the later save was not pruned")
	}
	if _, ok, _ := s.LoadPolicy(ctx, "later.example"); !ok {
		t.Error("the unexpired policy was pruned")
	}
}
