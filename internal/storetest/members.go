package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/postline/postline/internal/members"
	"github.com/postline/postline/internal/store"
)

// testMembers: the delivering processes a database counts to split the
// provider limits between them.
func testMembers(t *testing.T, db *store.DB) {
	ctx := context.Background()
	s := store.NewMembers(db)
	ids := func(ms []members.Member) []string {
		var out []string
		for _, m := range ms {
			out = append(out, m.ID)
		}
		return out
	}
	live := func(since time.Time) []string {
		t.Helper()
		ms, err := s.Live(ctx, since)
		if err != nil {
			t.Fatal(err)
		}
		return ids(ms)
	}
	if got := live(now.Add(-time.Hour)); len(got) != 0 {
		t.Fatalf("members of a new database: %v", got)
	}
	// b started first, so it is listed first whatever the ids.
	for _, b := range []struct {
		id      string
		started time.Time
		seen    time.Time
	}{{"a", now, now}, {"b", now.Add(-time.Minute), now}, {"old", now.Add(-time.Hour), now.Add(-time.Minute)}} {
		if err := s.Beat(ctx, b.id, b.started, b.seen); err != nil {
			t.Fatal(err)
		}
	}
	if got := live(now.Add(-10 * time.Second)); len(got) != 2 || got[0] != "b" || got[1] != "a" {
		t.Fatalf("live members = %v, want [b a] (the one seen a minute ago is not)", got)
	}
	// A beat moves seen_at, not started_at.
	if err := s.Beat(ctx, "a", now.Add(time.Hour), now.Add(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	ms, _ := s.Live(ctx, now.Add(5*time.Second))
	if len(ms) != 1 || ms[0].ID != "a" || !ms[0].StartedAt.Equal(now) || !ms[0].SeenAt.Equal(now.Add(5*time.Second)) {
		t.Fatalf("after a second beat: %+v, want a started %v seen %v", ms, now, now.Add(5*time.Second))
	}
	// Leave deletes the leaver's row and expired ones.
	if err := s.Leave(ctx, "a", now.Add(-30*time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := live(now.Add(-2 * time.Hour)); len(got) != 1 || got[0] != "b" {
		t.Fatalf("after a leaves: %v, want [b] (old was expired)", got)
	}
}
