package suppression_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/storetest"
	"github.com/postline/postline/internal/suppression"
	"github.com/postline/postline/internal/testutil"
)

// TestRemoveMany: the domain's selected entries go, another domain's ids
// and missing ones are skipped, and more than a page at once is refused.
func TestRemoveMany(t *testing.T) {
	t.Parallel()
	for _, d := range testutil.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := testutil.OpenDB(t, d)
			_, dom := storetest.NewDomainRow(t, db, "alice", "alice.example")
			_, other := storetest.NewDomainRow(t, db, "bob", "bob.example")
			s := suppression.NewService(store.NewSuppressions(db), nil)
			add := func(domainID int64, r string) int64 {
				e, _, err := s.Add(ctx, suppression.AddParams{DomainID: domainID, Type: suppression.Bounce, Recipient: r})
				if err != nil {
					t.Fatal(err)
				}
				return e.ID
			}
			a, b, c := add(dom.ID, "a@x.example"), add(dom.ID, "b@x.example"), add(dom.ID, "c@x.example")
			bobs := add(other.ID, "a@x.example")
			n, err := s.RemoveMany(ctx, dom.ID, []int64{a, c, bobs, c + 1000})
			if err != nil || n != 2 {
				t.Fatalf("RemoveMany(a, c, bob's, missing) = %d, %v; want 2", n, err)
			}
			pg, _ := s.List(ctx, dom.ID, suppression.Bounce, "", 1, 10)
			if len(pg.Entries) != 1 || pg.Entries[0].ID != b {
				t.Errorf("alice's list after removing a and c: %+v", pg.Entries)
			}
			if pg, _ := s.List(ctx, other.ID, suppression.Bounce, "", 1, 10); len(pg.Entries) != 1 {
				t.Errorf("bob's entry was removed through alice's domain: %+v", pg.Entries)
			}
			many := make([]int64, suppression.MaxRemoveMany+1)
			_, err = s.RemoveMany(ctx, dom.ID, many)
			if e, ok := apperr.As(err); !ok || e.Code != apperr.Invalid || len(e.Fields["id"]) != 1 ||
				e.Message != fmt.Sprintf("Select at most %d entries at once.", suppression.MaxRemoveMany) {
				t.Errorf("RemoveMany of %d ids: %v, want Invalid naming id and the limit", len(many), err)
			}
		})
	}
}
