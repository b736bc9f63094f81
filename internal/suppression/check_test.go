package suppression_test

import (
	"context"
	"strings"
	"testing"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/storetest"
	"github.com/postline/postline/internal/suppression"
	"github.com/postline/postline/internal/testutil"
)

func setup(t *testing.T, d store.Dialect) (*suppression.Service, int64) {
	db := testutil.OpenDB(t, d)
	_, dom := storetest.NewDomainRow(t, db, "alice", "alice.example")
	return suppression.NewService(store.NewSuppressions(db), nil), dom.ID
}

func TestCheck(t *testing.T) {
	t.Parallel()
	for _, d := range testutil.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			cases := []struct {
				name      string
				entries   []suppression.AddParams // DomainID filled in
				recipient string
				want      bool
				wantBy    string // recipient of the deciding entry
			}{
				{"nothing listed", nil, "a@x.example", false, ""},
				{"bounced address", []suppression.AddParams{{Type: suppression.Bounce, Recipient: "a@x.example"}}, "a@x.example", true, "a@x.example"},
				{"case-insensitive", []suppression.AddParams{{Type: suppression.Bounce, Recipient: "A@X.Example"}}, "a@x.EXAMPLE", true, "a@x.example"},
				{"IDN normalised", []suppression.AddParams{{Type: suppression.Unsubscribe, Recipient: "bob@bücher.example"}}, "Bob@xn--bcher-kva.example", true, "bob@xn--bcher-kva.example"},
				{"unsubscribed domain", []suppression.AddParams{{Type: suppression.Unsubscribe, Recipient: "x.example"}}, "z@x.example", true, "x.example"},
				{"other address not affected", []suppression.AddParams{{Type: suppression.Bounce, Recipient: "a@x.example"}}, "b@x.example", false, ""},
				{"address whitelist beats bounce", []suppression.AddParams{{Type: suppression.Bounce, Recipient: "a@x.example"}, {Type: suppression.Whitelist, Recipient: "a@x.example"}}, "a@x.example", false, "a@x.example"},
				{"domain whitelist beats address bounce", []suppression.AddParams{{Type: suppression.Bounce, Recipient: "a@x.example"}, {Type: suppression.Whitelist, Recipient: "x.example"}}, "a@x.example", false, "x.example"},
				{"address whitelist beats domain unsubscribe", []suppression.AddParams{{Type: suppression.Unsubscribe, Recipient: "x.example"}, {Type: suppression.Whitelist, Recipient: "a@x.example"}}, "a@x.example", false, "a@x.example"},
				{"whitelist of another address does not help", []suppression.AddParams{{Type: suppression.Unsubscribe, Recipient: "x.example"}, {Type: suppression.Whitelist, Recipient: "b@x.example"}}, "a@x.example", true, "x.example"},
			}
			for _, c := range cases {
				svc, dom := setup(t, d)
				for _, e := range c.entries {
					e.DomainID = dom
					if _, _, err := svc.Add(ctx, e); err != nil {
						t.Fatalf("%s: Add %+v: %v", c.name, e, err)
					}
				}
				v, err := svc.Check(ctx, dom, c.recipient)
				if err != nil {
					t.Fatal(err)
				}
				by := ""
				if v.By != nil {
					by = v.By.Recipient
				}
				if v.Suppressed != c.want || by != c.wantBy {
					t.Errorf("%s: Check(%q) = suppressed %v by %q, want %v by %q", c.name, c.recipient, v.Suppressed, by, c.want, c.wantBy)
				}
			}
		})
	}
}

func TestCheckManyIsOneVerdictPerRecipient(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, dom := setup(t, store.SQLite)
	svc.AddBounce(ctx, dom, "gone@x.example", "bounce:5.1.1")
	svc.AddUnsubscribe(ctx, dom, "y.example", "unsubscribe:link")
	rcpts := []string{"gone@x.example", "ok@x.example", "any@y.example", "not an address"}
	got, err := svc.CheckMany(ctx, dom, rcpts)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"gone@x.example": true, "ok@x.example": false, "any@y.example": true, "not an address": false}
	for r, w := range want {
		if got[r].Suppressed != w {
			t.Errorf("CheckMany[%q].Suppressed = %v, want %v", r, got[r].Suppressed, w)
		}
	}
	if src := got["gone@x.example"].By.Source; src == nil || *src != "bounce:5.1.1" {
		t.Errorf("source = %v, want bounce:5.1.1", src)
	}
}

func TestAddValidation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, dom := setup(t, store.SQLite)
	cases := []struct {
		p     suppression.AddParams
		field string
	}{
		{suppression.AddParams{Type: suppression.Whitelist}, "recipient"},
		{suppression.AddParams{Type: suppression.Whitelist, Recipient: "not valid@@"}, "recipient"},
		{suppression.AddParams{Type: suppression.Whitelist, Recipient: "a@x.example", RecipientType: suppression.Domain}, "recipient_type"},
		{suppression.AddParams{Type: suppression.Whitelist, Recipient: "x.example", RecipientType: suppression.Email}, "recipient_type"},
		{suppression.AddParams{Type: suppression.Whitelist, Recipient: "x.example", RecipientType: "phone"}, "recipient_type"},
		{suppression.AddParams{Type: suppression.Whitelist, Recipient: "x.example", Description: strings.Repeat("é", 501)}, "description"},
		{suppression.AddParams{Type: "spam", Recipient: "x.example"}, "type"},
	}
	for _, c := range cases {
		c.p.DomainID = dom
		_, _, err := svc.Add(ctx, c.p)
		e, ok := apperr.As(err)
		if !ok || e.Code != apperr.Invalid || len(e.Fields[c.field]) == 0 {
			t.Errorf("Add(%+v) = %v, want invalid naming %s", c.p, err, c.field)
		}
	}
	e, created, err := svc.Add(ctx, suppression.AddParams{DomainID: dom, Type: suppression.Whitelist, Recipient: "Partner.Example"})
	if err != nil || !created || e.RecipientType != suppression.Domain || e.Recipient != "partner.example" {
		t.Fatalf("inferred domain whitelist = %+v, %v, %v", e, created, err)
	}
}

func TestImport(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, dom := setup(t, store.SQLite)
	res, err := svc.Import(ctx, dom, strings.NewReader("recipient,type\na@x.example,bounce\nb@x.example\nx.example,unsubscribe\na@x.example,bounce\n"), "cli")
	if err != nil || res.Added != 3 || res.Existing != 1 {
		t.Fatalf("Import = %+v, %v; want 3 added, 1 existing", res, err)
	}
	_, err = svc.Import(ctx, dom, strings.NewReader("c@x.example,bounce\nbad@@,bounce\n"), "cli")
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("Import with a bad row = %v, want an error naming line 2", err)
	}
}
