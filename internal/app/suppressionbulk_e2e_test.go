package app_test

import (
	"context"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/suppression"
)

// TestConsoleSuppressionBulk: ticked entries are removed together (only
// this domain's), a whole list only once its name is typed, other lists
// stay, and forms without the CSRF token, on another account's domain or
// with more than a page of ids are refused.
func TestConsoleSuppressionBulk(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		env := apitest.Start(t, d, nil)
		alice, bob := env.NewUser("alice"), env.NewUser("bob")
		dom, other := env.NewDomain(alice, "alice.example"), env.NewDomain(bob, "bob.example")
		ctx := context.Background()
		add := func(domainID int64, typ suppression.Type, r string) string {
			e, _, err := env.App.Suppressions.Add(ctx, suppression.AddParams{DomainID: domainID, Type: typ, Recipient: r})
			if err != nil {
				t.Fatal(err)
			}
			return strconv.FormatInt(e.ID, 10)
		}
		a, _, c := add(dom.ID, suppression.Bounce, "a@x.example"), add(dom.ID, suppression.Bounce, "b@x.example"), add(dom.ID, suppression.Bounce, "c@x.example")
		add(dom.ID, suppression.Unsubscribe, "u@x.example")
		bobs := add(other.ID, suppression.Bounce, "a@x.example")
		count := func(domainID int64, typ suppression.Type) int {
			pg, err := env.App.Suppressions.List(ctx, domainID, typ, "", 1, 100)
			if err != nil {
				t.Fatal(err)
			}
			return pg.Total
		}

		b := &browser{t: t, base: env.URL}
		b.signIn("alice", alice.Key, "/")
		_, page := b.do("GET", "/domains/alice.example/suppressions?type=bounce", nil, nil)
		csrf := csrfRE.FindStringSubmatch(page)[1]
		if !strings.Contains(page, `<input type="checkbox" name="id" value="`+a+`" form="bulk-remove" aria-label="Select a@x.example">`) ||
			!strings.Contains(page, `id="bulk-remove"`) || !strings.Contains(page, `<label for="s-clear">Type <strong>bounce</strong> to remove all 3 entries`) {
			t.Fatalf("the bounce list has no selection boxes or no remove-all form:\n%s", page)
		}

		if r, _ := b.do("POST", "/domains/alice.example/suppressions/remove", url.Values{"type": {"bounce"}, "id": {a}}, nil); r.StatusCode != 403 || count(dom.ID, suppression.Bounce) != 3 {
			t.Errorf("a removal without the CSRF token: %d, want 403 and nothing removed", r.StatusCode)
		}
		status, page := b.submit("/domains/alice.example/suppressions/remove", url.Values{"csrf": {csrf}, "type": {"bounce"}, "id": {a, c, bobs}})
		if status != 303 || !strings.Contains(page, "Removed 2 entries from the bounce list.") || count(dom.ID, suppression.Bounce) != 1 || count(other.ID, suppression.Bounce) != 1 {
			t.Errorf("removing a, c and bob's id: %d, alice has %d, bob %d; want 2 removed, bob's kept\n%s", status, count(dom.ID, suppression.Bounce), count(other.ID, suppression.Bounce), page)
		}
		many := url.Values{"csrf": {csrf}, "type": {"bounce"}}
		for i := 0; i <= suppression.MaxRemoveMany; i++ {
			many.Add("id", strconv.Itoa(1_000_000+i))
		}
		if status, page := b.submit("/domains/alice.example/suppressions/remove?type=bounce", many); status != 422 || !strings.Contains(page, "Select at most 100 entries at once.") {
			t.Errorf("removing 101 ids: %d, want 422 naming the limit", status)
		}
		if r, _ := b.do("POST", "/domains/bob.example/suppressions/remove", url.Values{"csrf": {csrf}, "id": {bobs}}, nil); r.StatusCode != 404 || count(other.ID, suppression.Bounce) != 1 {
			t.Errorf("removing from bob's domain: %d, want 404", r.StatusCode)
		}

		status, page = b.submit("/domains/alice.example/suppressions/clear?type=bounce", url.Values{"csrf": {csrf}, "type": {"bounce"}, "confirm": {"yes"}})
		if status != 422 || !strings.Contains(page, "Type bounce to remove every entry of the bounce list; nothing was removed.") || count(dom.ID, suppression.Bounce) != 1 {
			t.Errorf("remove-all with the wrong word: %d, %d left; want 422 and nothing removed\n%s", status, count(dom.ID, suppression.Bounce), page)
		}
		status, page = b.submit("/domains/alice.example/suppressions/clear", url.Values{"csrf": {csrf}, "type": {"bounce"}, "confirm": {"bounce"}})
		if status != 303 || !strings.Contains(page, "Removed every entry of the bounce list: 1 entry.") || count(dom.ID, suppression.Bounce) != 0 ||
			count(dom.ID, suppression.Unsubscribe) != 1 || count(other.ID, suppression.Bounce) != 1 {
			t.Errorf("remove-all confirmed: %d; alice's bounces %d, unsubscribes %d, bob's %d\n%s", status,
				count(dom.ID, suppression.Bounce), count(dom.ID, suppression.Unsubscribe), count(other.ID, suppression.Bounce), page)
		}
		if strings.Contains(page, `id="s-clear"`) || strings.Contains(page, `id="bulk-remove"`) {
			t.Errorf("an empty list still offers to remove entries")
		}
		if r, _ := b.do("POST", "/domains/bob.example/suppressions/clear", url.Values{"csrf": {csrf}, "type": {"bounce"}, "confirm": {"bounce"}}, nil); r.StatusCode != 404 || count(other.ID, suppression.Bounce) != 1 {
			t.Errorf("remove-all on bob's domain: %d, want 404", r.StatusCode)
		}
	})
}
