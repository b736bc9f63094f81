package storetest

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/secret"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/webhook"
)

// testMailgunWebhooks: a Mailgun webhook id's URLs are set, replaced
// (a URL that stays keeps its cursor) and removed; create refuses an id
// that exists and update or delete one that does not; they do not count
// against the limit of Postline webhooks; another domain sees none; the
// account's signing key is sealed at rest, set once unless replaced; a
// Fail that moved the cursor counts failures from 1.
func testMailgunWebhooks(t *testing.T, db *store.DB) {
	ctx := context.Background()
	box, _ := secret.NewBox(bytes.Repeat([]byte{5}, 32))
	s := store.NewWebhooks(db, box)
	alice, d := NewDomainRow(t, db, "alice", "alice.example")
	_, other := NewDomainRow(t, db, "bob", "bob.example")

	had, err := s.SetMailgun(ctx, d.ID, "delivered", []string{"https://a.example/1", "https://a.example/2"}, now, webhook.MustBeNew)
	if err != nil || len(had) != 0 {
		t.Fatalf("SetMailgun new = %v, %v", had, err)
	}
	if _, err := s.SetMailgun(ctx, d.ID, "delivered", []string{"https://a.example/3"}, now, webhook.MustBeNew); err != webhook.ErrMailgunExists {
		t.Fatalf("create of an existing id: %v; want ErrMailgunExists", err)
	}
	if _, err := s.SetMailgun(ctx, d.ID, "opened", []string{"https://a.example/3"}, now, webhook.MustExist); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("update of a missing id: %v; want NotFound", err)
	}
	if _, err := s.SetMailgun(ctx, other.ID, "delivered", nil, now, webhook.MustExist); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("another domain deleting the id: %v; want NotFound", err)
	}
	list, _ := s.List(ctx, d.ID)
	if len(list) != 2 || list[0].Format != webhook.FormatMailgun || list[0].MailgunEvent != "delivered" || list[0].Unreadable != "" {
		t.Fatalf("List = %+v; want two readable mailgun webhooks for delivered", list)
	}
	keep := list[1] // https://a.example/2
	if ok, _ := s.Lease(ctx, keep.ID, "o", keep.Cursor, now, now.Add(time.Minute)); !ok {
		t.Fatal("Lease refused")
	}
	if err := s.Advance(ctx, keep.ID, "o", keep.Cursor+5, true, now); err != nil {
		t.Fatal(err)
	}
	had, err = s.SetMailgun(ctx, d.ID, "delivered", []string{"https://a.example/2", "https://a.example/4"}, now, webhook.MustExist)
	if err != nil || !slices.Equal(had, []string{"https://a.example/1", "https://a.example/2"}) {
		t.Fatalf("SetMailgun update = %v, %v; want the two URLs it had", had, err)
	}
	list, _ = s.List(ctx, d.ID)
	var urls []string
	for _, w := range list {
		urls = append(urls, w.URL)
		if w.URL == "https://a.example/2" && (w.ID != keep.ID || w.Cursor != keep.Cursor+5) {
			t.Errorf("a URL that stayed: %+v; want its row and cursor %d kept", w, keep.Cursor+5)
		}
	}
	if !slices.Equal(urls, []string{"https://a.example/2", "https://a.example/4"}) {
		t.Fatalf("URLs after update: %v", urls)
	}
	// Mailgun webhooks do not count against Postline's limit.
	if _, err := s.Create(ctx, webhook.Webhook{DomainID: d.ID, URL: "https://p.example/", Secret: "x", CreatedAt: now}, 1); err != nil {
		t.Fatalf("a Postline webhook beside Mailgun ones, limit 1: %v", err)
	}
	had, err = s.SetMailgun(ctx, d.ID, "delivered", nil, now, webhook.MustExist)
	if err != nil || len(had) != 2 {
		t.Fatalf("delete = %v, %v", had, err)
	}
	if list, _ = s.List(ctx, d.ID); len(list) != 1 || list[0].Format != webhook.FormatPostline {
		t.Fatalf("after delete: %+v; want only the Postline webhook", list)
	}

	// A Fail that moved the cursor counts from 1; at the same cursor, on.
	s.SetMailgun(ctx, d.ID, "opened", []string{"https://a.example/o"}, now, webhook.MustBeNew)
	list, _ = s.List(ctx, d.ID)
	w := list[len(list)-1]
	for i, cursor := range []int64{w.Cursor + 3, w.Cursor + 3, w.Cursor + 4} {
		if ok, _ := s.Lease(ctx, w.ID, "o", webhookByID(t, s, d.ID, w.ID).Cursor, now, now.Add(time.Minute)); !ok {
			t.Fatal("Lease refused")
		}
		if err := s.Fail(ctx, w.ID, "o", cursor, now, "HTTP 500"); err != nil {
			t.Fatal(err)
		}
		got := webhookByID(t, s, d.ID, w.ID)
		if want := []int{1, 2, 1}[i]; got.Cursor != cursor || got.Attempts != want {
			t.Fatalf("Fail %d at cursor %d: cursor %d, %d attempts; want %d", i, cursor, got.Cursor, got.Attempts, want)
		}
	}

	// The signing key: none at first, set once, replaced, sealed at rest.
	if k, err := s.SigningKey(ctx, alice.ID); err != nil || k != "" {
		t.Fatalf("SigningKey of a new account = %q, %v; want none", k, err)
	}
	s.SetSigningKey(ctx, alice.ID, "first", false)
	s.SetSigningKey(ctx, alice.ID, "second", false)
	if k, _ := s.SigningKey(ctx, alice.ID); k != "first" {
		t.Fatalf("after two sets without replace: %q; want the first", k)
	}
	s.SetSigningKey(ctx, alice.ID, "third", true)
	if k, _ := s.SigningKey(ctx, alice.ID); k != "third" {
		t.Fatalf("after a replace: %q", k)
	}
	var raw string
	db.Reader().QueryRowContext(ctx, `SELECT webhook_signing_key FROM accounts WHERE id = $1`, alice.ID).Scan(&raw)
	if !strings.HasPrefix(raw, "v1:") || strings.Contains(raw, "third") {
		t.Fatalf("stored key %q; want it sealed", raw)
	}
	if acc, err := s.DomainAccount(ctx, d.ID); err != nil || acc != alice.ID {
		t.Fatalf("DomainAccount = %d, %v; want %d", acc, err, alice.ID)
	}
}
