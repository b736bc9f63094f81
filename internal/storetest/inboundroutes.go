package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/inboundroute"
	"github.com/postline/postline/internal/store"
)

// testInboundRoutes: routes round trip (actions as written, in order),
// list by priority then creation with paging and the account's total,
// are never another account's to read, change or delete, stop at the
// account's bound (also when created at once), and go with their account.
func testInboundRoutes(t *testing.T, db *store.DB) {
	ctx := context.Background()
	s := store.NewInboundRoutes(db)
	alice, _ := NewDomainRow(t, db, "alice", "alice.example")
	bob, _ := NewDomainRow(t, db, "bob", "bob.example")
	def := func(acc int64, id string, priority int, at time.Duration) inboundroute.Definition {
		return inboundroute.Definition{ID: id, AccountID: acc, Priority: priority, Description: "route " + id,
			Expression: `match_recipient("(.*)@alice\.example")`,
			Actions:    []string{`forward("https://app.example/in?box=\1")`, `store(notify='https://app.example/n')`, "stop()"},
			CreatedAt:  now.Add(at)}
	}
	for _, d := range []inboundroute.Definition{def(alice.ID, "aaaaaaaaaaaaaaaaaaaaaaa3", 5, 0), def(alice.ID, "aaaaaaaaaaaaaaaaaaaaaaa1", 5, time.Second),
		def(alice.ID, "aaaaaaaaaaaaaaaaaaaaaaa2", 0, 2*time.Second), def(bob.ID, "bbbbbbbbbbbbbbbbbbbbbbb1", 0, 0)} {
		if got, err := s.CreateRoute(ctx, d, 10); err != nil || got.ID != d.ID {
			t.Fatalf("CreateRoute(%s) = %+v, %v", d.ID, got, err)
		}
	}
	if _, err := s.CreateRoute(ctx, def(alice.ID, "aaaaaaaaaaaaaaaaaaaaaaa1", 0, 0), 10); err == nil {
		t.Fatal("a second route with the same id was stored")
	}
	got, err := s.Route(ctx, "aaaaaaaaaaaaaaaaaaaaaaa1")
	want := def(alice.ID, "aaaaaaaaaaaaaaaaaaaaaaa1", 5, time.Second)
	if err != nil || got.AccountID != alice.ID || got.Priority != 5 || got.Description != want.Description || got.Expression != want.Expression ||
		fmt.Sprint(got.Actions) != fmt.Sprint(want.Actions) || !got.CreatedAt.Equal(want.CreatedAt) {
		t.Fatalf("Route = %+v, %v; want %+v", got, err, want)
	}
	if got.Format != inboundroute.FormatMailgun {
		t.Fatalf("Route's format = %q; want %q, the default of a route created without one", got.Format, inboundroute.FormatMailgun)
	}
	if _, err := s.Route(ctx, "eeeeeeeeeeeeeeeeeeeeeeee"); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("Route of an unknown id = %v, want not_found", err)
	}

	list, total, err := s.ListRoutes(ctx, alice.ID, 0, 10)
	if err != nil || total != 3 || len(list) != 3 || list[0].ID != "aaaaaaaaaaaaaaaaaaaaaaa2" || list[1].ID != "aaaaaaaaaaaaaaaaaaaaaaa3" ||
		list[2].ID != "aaaaaaaaaaaaaaaaaaaaaaa1" {
		t.Fatalf("ListRoutes = %+v (%d), %v; want priority 0 first, then the priority-5 ones as created", list, total, err)
	}
	page, total, err := s.ListRoutes(ctx, alice.ID, 1, 1)
	if err != nil || total != 3 || len(page) != 1 || page[0].ID != "aaaaaaaaaaaaaaaaaaaaaaa3" {
		t.Fatalf("ListRoutes(offset 1, limit 1) = %+v (%d), %v", page, total, err)
	}
	if none, total, err := s.ListRoutes(ctx, alice.ID, 5, 10); err != nil || total != 3 || none == nil || len(none) != 0 {
		t.Fatalf("ListRoutes past the end = %#v (%d), %v; want an empty list and the total", none, total, err)
	}

	// Bob's route is not Alice's to change or delete.
	stolen := def(alice.ID, "bbbbbbbbbbbbbbbbbbbbbbb1", 1, 0)
	if err := s.UpdateRoute(ctx, stolen); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("UpdateRoute of another account's route = %v, want not_found", err)
	}
	if err := s.DeleteRoute(ctx, alice.ID, "bbbbbbbbbbbbbbbbbbbbbbb1"); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("DeleteRoute of another account's route = %v, want not_found", err)
	}
	if b, err := s.Route(ctx, "bbbbbbbbbbbbbbbbbbbbbbb1"); err != nil || b.AccountID != bob.ID || b.Priority != 0 {
		t.Fatalf("Bob's route after Alice's attempts = %+v, %v", b, err)
	}

	changed := got
	changed.Priority, changed.Description, changed.Expression = 0, "", `catch_all()`
	changed.Actions, changed.Format = []string{`forward("ops@alice.example")`}, inboundroute.FormatJSON
	if err := s.UpdateRoute(ctx, changed); err != nil {
		t.Fatal(err)
	}
	if again, err := s.Route(ctx, changed.ID); err != nil || again.Priority != 0 || again.Description != "" || again.Expression != `catch_all()` ||
		len(again.Actions) != 1 || again.Actions[0] != `forward("ops@alice.example")` || again.Format != inboundroute.FormatJSON || !again.CreatedAt.Equal(want.CreatedAt) {
		t.Fatalf("after UpdateRoute: %+v, %v", again, err)
	}
	if err := s.DeleteRoute(ctx, alice.ID, changed.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRoute(ctx, alice.ID, changed.ID); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("deleting it again = %v, want not_found", err)
	}

	// The bound holds for creations that race: exactly max - 2 more.
	var wg sync.WaitGroup
	var mu sync.Mutex
	created, refused := 0, 0
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.CreateRoute(ctx, def(alice.ID, fmt.Sprintf("dddddddddddddddddddddd%02d", i), 9, 0), 4)
			mu.Lock()
			defer mu.Unlock()
			switch apperr.CodeOf(err) {
			case "":
				created++
			case apperr.Unprocessable:
				refused++
			default:
				t.Errorf("concurrent CreateRoute: %v", err)
			}
		}()
	}
	wg.Wait()
	if _, total, _ := s.ListRoutes(ctx, alice.ID, 0, 10); created != 2 || refused != 4 || total != 4 {
		t.Fatalf("6 creations at once under a bound of 4 with 2 stored: %d created, %d refused, %d stored", created, refused, total)
	}

	// An account's routes go with it (accounts are not deleted today;
	// the rows must not hold one back when they are).
	carol, err := store.NewAccounts(db).CreateAccount(ctx, "carol", now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateRoute(ctx, def(carol.ID, "cccccccccccccccccccccccc", 0, 0), 10); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Writer().ExecContext(ctx, `DELETE FROM accounts WHERE id = $1`, carol.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Route(ctx, "cccccccccccccccccccccccc"); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("a deleted account's route = %v, want not_found", err)
	}
}
