package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/secret"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/suppression"
)

// NewDomainRow creates an account and a domain row for tests that need a
// domain id.
func NewDomainRow(t testing.TB, db *store.DB, login, name string) (account.Account, domain.Domain) {
	t.Helper()
	ctx := context.Background()
	a, err := store.NewAccounts(db).CreateAccount(ctx, login, now)
	if err != nil {
		t.Fatal(err)
	}
	box, _ := secret.NewBox(make([]byte, 32))
	d, err := store.NewDomains(db, box).CreateDomain(ctx, domain.Domain{AccountID: a.ID, Name: name, CreatedAt: now,
		DKIMSelector: "s", DKIMPrivateKey: []byte("k"), DKIMPublicKey: "p", Delivery: domain.Delivery{Mode: domain.ModeDirect}})
	if err != nil {
		t.Fatal(err)
	}
	return a, d
}

func testSuppressions(t *testing.T, db *store.DB) {
	ctx := context.Background()
	s := store.NewSuppressions(db)
	_, d := NewDomainRow(t, db, "alice", "alice.example")
	_, other := NewDomainRow(t, db, "bob", "bob.example")
	src := "api"
	add := func(dom int64, typ suppression.Type, rt suppression.RecipientType, r string, at time.Time) suppression.Entry {
		e, created, err := s.Add(ctx, suppression.Entry{DomainID: dom, Type: typ, RecipientType: rt, Recipient: r, Source: &src, CreatedAt: at})
		if err != nil || !created || e.ID == 0 {
			t.Fatalf("Add(%s %s) = %+v, %v, %v", typ, r, e, created, err)
		}
		return e
	}
	first := add(d.ID, suppression.Bounce, suppression.Email, "a@x.example", now)
	add(d.ID, suppression.Bounce, suppression.Email, "b_1@x.example", now.Add(time.Second))
	add(d.ID, suppression.Bounce, suppression.Domain, "x.example", now.Add(2*time.Second))
	add(d.ID, suppression.Whitelist, suppression.Email, "a@x.example", now.Add(3*time.Second))
	add(other.ID, suppression.Bounce, suppression.Email, "a@x.example", now)

	again, created, err := s.Add(ctx, suppression.Entry{DomainID: d.ID, Type: suppression.Bounce, RecipientType: suppression.Email, Recipient: "a@x.example", CreatedAt: now.Add(time.Hour)})
	if err != nil || created || again.ID != first.ID || !again.CreatedAt.Equal(now) || again.Source == nil || *again.Source != "api" {
		t.Fatalf("re-Add = %+v, created=%v, %v; want the first entry unchanged", again, created, err)
	}

	page, total, err := s.List(ctx, suppression.ListParams{DomainID: d.ID, Type: suppression.Bounce, Limit: 2})
	if err != nil || total != 3 || len(page) != 2 || page[0].Recipient != "x.example" || page[1].Recipient != "b_1@x.example" {
		t.Fatalf("List bounce limit 2 = %+v, total %d, %v; want newest first", page, total, err)
	}
	page, total, _ = s.List(ctx, suppression.ListParams{DomainID: d.ID, Type: suppression.Bounce, Limit: 2, Offset: 2})
	if total != 3 || len(page) != 1 || page[0].Recipient != "a@x.example" {
		t.Fatalf("List offset 2 = %+v, total %d", page, total)
	}
	// "_" is a literal in search, not LIKE's wildcard.
	page, total, _ = s.List(ctx, suppression.ListParams{DomainID: d.ID, Type: suppression.Bounce, Search: "_1", Limit: 10})
	if total != 1 || page[0].Recipient != "b_1@x.example" {
		t.Fatalf("search _1 = %+v, total %d", page, total)
	}
	// Longer searches (the trigram index on SQLite): substrings anywhere, any
	// case, punctuation literal; deleted entries are gone from the index.
	for search, want := range map[string]int{"B_1@X": 1, "@x.example": 2, "x.example": 3, `"1@`: 0, "%@x": 0, "zzz": 0} {
		if _, total, err := s.List(ctx, suppression.ListParams{DomainID: d.ID, Type: suppression.Bounce, Search: search, Limit: 10}); err != nil || total != want {
			t.Errorf("search %q: total %d, %v; want %d", search, total, err, want)
		}
	}
	b1, _, _ := s.List(ctx, suppression.ListParams{DomainID: d.ID, Type: suppression.Bounce, Search: "b_1@", Limit: 1})
	if err := s.Delete(ctx, d.ID, b1[0].ID); err != nil {
		t.Fatal(err)
	}
	if _, total, _ := s.List(ctx, suppression.ListParams{DomainID: d.ID, Type: suppression.Bounce, Search: "b_1@", Limit: 1}); total != 0 {
		t.Errorf("a deleted entry is still found (%d)", total)
	}
	if db.Dialect == store.SQLite { // the index itself agrees with the table (the join above would hide stale rows)
		if _, err := db.Writer().ExecContext(ctx, `INSERT INTO suppressions_fts (suppressions_fts, rank) VALUES ('integrity-check', 1)`); err != nil {
			t.Errorf("trigram index out of step with the list after a delete: %v", err)
		}
	}
	add(d.ID, suppression.Bounce, suppression.Email, "b_1@x.example", now.Add(time.Second))
	page, total, _ = s.List(ctx, suppression.ListParams{DomainID: d.ID, Type: suppression.Unsubscribe, Limit: 10})
	if total != 0 || page == nil || len(page) != 0 {
		t.Fatalf("empty list = %#v, total %d; want an empty, non-nil slice", page, total)
	}

	got, err := s.Matching(ctx, d.ID, []string{"a@x.example", "x.example", "zzz@nowhere.example"})
	if err != nil || len(got) != 3 {
		t.Fatalf("Matching = %+v, %v; want bounce a@, whitelist a@, domain x.example (not bob's)", got, err)
	}
	many := make([]string, 2500) // over one IN chunk
	for i := range many {
		many[i] = fmt.Sprintf("n%d@x.example", i)
	}
	many[2400] = "a@x.example"
	if got, err := s.Matching(ctx, d.ID, many); err != nil || len(got) != 2 {
		t.Fatalf("Matching 2500 keys = %d entries, %v; want 2", len(got), err)
	}

	if err := s.Delete(ctx, other.ID, first.ID); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("Delete through another domain = %v, want not_found", err)
	}
	if err := s.Delete(ctx, d.ID, first.ID); err != nil {
		t.Fatal(err)
	}

	// Concurrent adds of one entry: one creates, all see the same id.
	var wg sync.WaitGroup
	ids := make([]int64, 8)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e, _, err := s.Add(ctx, suppression.Entry{DomainID: d.ID, Type: suppression.Unsubscribe, RecipientType: suppression.Email, Recipient: "race@x.example", CreatedAt: now})
			if err != nil {
				t.Error(err)
			}
			ids[i] = e.ID
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] || id == 0 {
			t.Fatalf("concurrent Add ids = %v, want one id", ids)
		}
	}
}
