package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/store"
)

func TestDevSeedLog(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, args := range [][]string{{"user", "create", "alice"}, {"domain", "add", "alice", "shop.example", "--direct"}} {
		if code, _, errs := cli(t, dir, args...); code != 0 {
			t.Fatalf("%v: %s", args, errs)
		}
	}
	cases := []struct {
		args     []string
		code     int
		contains string
	}{
		{[]string{"dev"}, 2, "Usage: postline dev COMMAND"},
		{[]string{"dev", "frobnicate"}, 2, `postline dev: unknown command "frobnicate"; want seed-log or smtp-sink`},
		{[]string{"dev", "seed-log", "shop.example"}, 2, "--count must be at least 1"},
		{[]string{"dev", "seed-log", "--count", "5"}, 2, "postline dev seed-log: want DOMAIN, got 0 argument(s)"},
		{[]string{"dev", "seed-log", "shop.example", "--count", "many"}, 2, `--count: not a valid value, got "many"`},
		{[]string{"dev", "seed-log", "nope.example", "--count", "5"}, 1, "not found"},
		{[]string{"dev", "seed-log", "shop.example", "--count", "3000", "--seed", "7"}, 0, "recorded 3000 log entries for shop.example"},
	}
	for _, c := range cases {
		code, out, errs := cli(t, dir, c.args...)
		text := out
		if c.code != 0 {
			text = errs
		}
		if code != c.code || !strings.Contains(text, c.contains) {
			t.Errorf("postline %v = %d, %q %q; want %d and %q", c.args, code, out, errs, c.code, c.contains)
		}
	}

	ctx := context.Background()
	db, err := store.Open(ctx, "sqlite:"+filepath.Join(dir, "postline.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var domainID int64
	if err := db.Reader().QueryRowContext(ctx, `SELECT id FROM domains WHERE name = 'shop.example'`).Scan(&domainID); err != nil {
		t.Fatal(err)
	}
	got, err := store.NewEvents(db).List(ctx, event.Filter{DomainID: domainID, Order: event.OldestFirst, Limit: 5000})
	if err != nil || len(got) != 3000 {
		t.Fatalf("stored %d entries, %v; want 3000", len(got), err)
	}
	types := map[event.Type]bool{}
	earliest := time.Now().Add(-30*24*time.Hour - time.Minute)
	for i, e := range got {
		types[e.Type] = true
		if i > 0 && e.CreatedAt.Before(got[i-1].CreatedAt) {
			t.Fatalf("id %d (%s) is older than id %d (%s): ids must grow with created_at", e.ID, e.CreatedAt, got[i-1].ID, got[i-1].CreatedAt)
		}
		if e.CreatedAt.Before(earliest) || e.CreatedAt.After(time.Now()) {
			t.Fatalf("entry %d at %s: not within the last 30 days", e.ID, e.CreatedAt)
		}
	}
	if len(types) != 11 {
		t.Errorf("types %v, want all 11", types)
	}
}
