package storetest

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/secret"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/webhook"
)

// testWebhooks: webhooks round trip with their secret sealed at rest and
// their cursor at their own domain's newest entry; another domain lists
// and deletes none of them; a secret this server cannot open marks the
// webhook instead of failing the list; the limit holds under concurrency;
// only the newest posts are kept, newest first.
func testWebhooks(t *testing.T, db *store.DB) {
	ctx := context.Background()
	box, _ := secret.NewBox(bytes.Repeat([]byte{3}, 32))
	s := store.NewWebhooks(db, box)
	_, alice := NewDomainRow(t, db, "alice", "alice.example")
	_, bob := NewDomainRow(t, db, "bob", "bob.example")
	ev := store.NewEvents(db)
	entries := func(dom int64, n int) []event.Entry {
		out := make([]event.Entry, n)
		for i := range out {
			out[i] = event.Entry{DomainID: dom, MessageID: fmt.Sprintf("<m%d@x>", i), Type: event.Delivered,
				Sender: "a@x.example", Recipient: "b@y.example", CreatedAt: now, Details: event.NewDetails(nil)}
		}
		return out
	}
	if err := ev.Insert(ctx, entries(alice.ID, 3)); err != nil {
		t.Fatal(err)
	}
	if err := ev.Insert(ctx, entries(bob.ID, 5)); err != nil { // newer ids, another domain's
		t.Fatal(err)
	}
	_, aliceHi, err := ev.Bounds(ctx, event.Filter{DomainID: alice.ID})
	if err != nil || aliceHi == 0 {
		t.Fatalf("Bounds = %d, %v", aliceHi, err)
	}

	w1, err := s.Create(ctx, webhook.Webhook{DomainID: alice.ID, URL: "https://hooks.example/1", Secret: "s3cret-one",
		EventTypes: []event.Type{event.Delivered, event.Bounced}, NextAttemptAt: now, CreatedAt: now}, 3)
	if err != nil || w1.ID == 0 || w1.Cursor != aliceHi {
		t.Fatalf("Create = %+v, %v; want an id and the cursor at Alice's newest entry %d (not Bob's)", w1, err, aliceHi)
	}
	w2, err := s.Create(ctx, webhook.Webhook{DomainID: alice.ID, URL: "https://hooks.example/2", Secret: "s3cret-two",
		NextAttemptAt: now, CreatedAt: now.Add(time.Second)}, 3)
	if err != nil {
		t.Fatal(err)
	}
	var raw string
	if err := db.Reader().QueryRowContext(ctx, `SELECT secret FROM webhooks WHERE id = $1`, w1.ID).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(raw, "s3cret-one") {
		t.Fatalf("webhook secret stored in clear: %q", raw)
	}

	list, err := s.List(ctx, alice.ID)
	if err != nil || len(list) != 2 || list[0].ID != w1.ID || list[1].ID != w2.ID {
		t.Fatalf("List = %+v, %v; want both of Alice's, by id", list, err)
	}
	got := list[0]
	if got.URL != "https://hooks.example/1" || got.Secret != "s3cret-one" || got.Unreadable != "" ||
		!slices.Equal(got.EventTypes, []event.Type{event.Delivered, event.Bounced}) || got.DomainID != alice.ID ||
		!got.CreatedAt.Equal(now) || !got.NextAttemptAt.Equal(now) || got.Attempts != 0 || got.LastSuccessAt != nil ||
		got.Cursor != aliceHi {
		t.Fatalf("listed webhook = %+v; want what was created", got)
	}
	if list[1].EventTypes != nil || !list[1].Wants(event.Opened) {
		t.Fatalf("a webhook created without types: %+v; want every type", list[1].EventTypes)
	}
	if list, err := s.List(ctx, bob.ID); err != nil || len(list) != 0 {
		t.Fatalf("Bob's List = %+v, %v; want none of Alice's", list, err)
	}
	if err := s.Delete(ctx, bob.ID, w2.ID); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("Bob deleting Alice's webhook = %v, want not_found", err)
	}

	// A process with another secret key lists the webhook, marked.
	otherBox, _ := secret.NewBox(bytes.Repeat([]byte{4}, 32))
	if list, err := store.NewWebhooks(db, otherBox).List(ctx, alice.ID); err != nil || len(list) != 2 ||
		list[0].Unreadable == "" || list[0].Secret != "" {
		t.Fatalf("List with another key = %+v, %v; want both, marked unreadable", list, err)
	}

	// The limit: a third fits, a fourth does not.
	w3, err := s.Create(ctx, webhook.Webhook{DomainID: alice.ID, URL: "https://hooks.example/3", Secret: "x", CreatedAt: now}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, webhook.Webhook{DomainID: alice.ID, URL: "https://hooks.example/4", Secret: "x", CreatedAt: now}, 3); apperr.CodeOf(err) != apperr.Invalid {
		t.Fatalf("a webhook past the limit = %v, want invalid", err)
	}
	if err := s.Delete(ctx, alice.ID, w2.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, alice.ID, w2.ID); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("deleting twice = %v, want not_found", err)
	}
	if list, _ := s.List(ctx, alice.ID); len(list) != 2 || list[0].ID != w1.ID || list[1].ID != w3.ID {
		t.Fatalf("after delete List = %+v; want the other two", list)
	}

	// Concurrent creates on a fresh domain: exactly max succeed.
	_, carol := NewDomainRow(t, db, "carol", "carol.example")
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.Create(ctx, webhook.Webhook{DomainID: carol.ID, URL: fmt.Sprintf("https://hooks.example/c%d", i),
				Secret: "x", CreatedAt: now}, 2)
		}()
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
		} else if apperr.CodeOf(err) != apperr.Invalid {
			t.Fatalf("a concurrent create past the limit: %v, want invalid", err)
		}
	}
	if list, _ := s.List(ctx, carol.ID); ok != 2 || len(list) != 2 {
		t.Fatalf("%d concurrent creates succeeded, %d stored; want exactly 2", ok, len(list))
	}

	// Posts: newest first, only the newest KeptPosts of each webhook.
	for i := range webhook.KeptPosts + 3 {
		if err := s.RecordPost(ctx, webhook.Post{WebhookID: w1.ID, At: now.Add(time.Duration(i) * time.Second),
			Status: 200 + i, Entries: i, Duration: time.Duration(i) * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RecordPost(ctx, webhook.Post{WebhookID: w3.ID, At: now, Status: 500, Error: "boom", Entries: 1}); err != nil {
		t.Fatal(err)
	}
	posts, err := s.Posts(ctx, w1.ID, 1000)
	last := webhook.KeptPosts + 2
	if err != nil || len(posts) != webhook.KeptPosts || posts[0].Status != 200+last || posts[0].Entries != last ||
		!posts[0].At.Equal(now.Add(time.Duration(last)*time.Second)) || posts[0].Duration != time.Duration(last)*time.Millisecond ||
		posts[len(posts)-1].Status != 203 {
		t.Fatalf("Posts = %d posts (first %+v), %v; want the newest %d, newest first", len(posts), posts[0], err, webhook.KeptPosts)
	}
	if posts, _ := s.Posts(ctx, w1.ID, 2); len(posts) != 2 || posts[1].Status != 200+last-1 {
		t.Fatalf("Posts limit 2 = %+v", posts)
	}
	if posts, _ := s.Posts(ctx, w3.ID, 10); len(posts) != 1 || posts[0].Error != "boom" || posts[0].WebhookID != w3.ID {
		t.Fatalf("the other webhook's posts = %+v; want its one failed post", posts)
	}
}

// testWebhookLeases: Due lists what is due and unleased, longest due
// first, in keyset pages; a lease is one owner's until it runs out;
// Advance, Fail and Release by an owner who lost the lease change
// nothing; a lease at a stale cursor is refused.
func testWebhookLeases(t *testing.T, db *store.DB) {
	ctx := context.Background()
	box, _ := secret.NewBox(bytes.Repeat([]byte{3}, 32))
	s := store.NewWebhooks(db, box)
	_, d := NewDomainRow(t, db, "alice", "alice.example")
	mk := func(next time.Time) webhook.Webhook {
		w, err := s.Create(ctx, webhook.Webhook{DomainID: d.ID, URL: "https://hooks.example/", Secret: "x",
			NextAttemptAt: next, CreatedAt: now}, 10)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	a := mk(now.Add(-2 * time.Minute))
	b := mk(now.Add(-time.Minute))
	c := mk(now.Add(-time.Minute)) // ties with b: id decides
	future := mk(now.Add(time.Hour))
	ids := func(ws []webhook.Webhook) []int64 {
		out := make([]int64, len(ws))
		for i, w := range ws {
			out[i] = w.ID
		}
		return out
	}
	due, err := s.Due(ctx, now, webhook.Position{}, 10)
	if err != nil || !slices.Equal(ids(due), []int64{a.ID, b.ID, c.ID}) {
		t.Fatalf("Due = %v, %v; want %v (longest due first, not the future one %d)", ids(due), err,
			[]int64{a.ID, b.ID, c.ID}, future.ID)
	}
	page, _ := s.Due(ctx, now, webhook.Position{}, 2)
	rest, _ := s.Due(ctx, now, webhook.Position{NextAttemptAt: page[1].NextAttemptAt, ID: page[1].ID}, 2)
	if !slices.Equal(append(ids(page), ids(rest)...), []int64{a.ID, b.ID, c.ID}) {
		t.Fatalf("Due in pages of 2 = %v then %v", ids(page), ids(rest))
	}

	// One lease at a time; Due skips a leased webhook.
	until := now.Add(time.Minute)
	if ok, err := s.Lease(ctx, a.ID, "w1", a.Cursor, now, until); err != nil || !ok {
		t.Fatalf("Lease = %v, %v; want it taken", ok, err)
	}
	if ok, _ := s.Lease(ctx, a.ID, "w2", a.Cursor, now.Add(30*time.Second), now.Add(2*time.Minute)); ok {
		t.Fatal("a second owner leased a webhook under a live lease")
	}
	if due, _ := s.Due(ctx, now, webhook.Position{}, 10); slices.Contains(ids(due), a.ID) {
		t.Fatalf("Due lists a leased webhook: %v", ids(due))
	}
	// Concurrent leases of one free webhook: one wins.
	var wg sync.WaitGroup
	won := make([]bool, 8)
	for i := range won {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := s.Lease(ctx, b.ID, fmt.Sprintf("r%d", i), b.Cursor, now, until)
			if err != nil {
				t.Error(err)
			}
			won[i] = ok
		}()
	}
	wg.Wait()
	if n := count(won); n != 1 {
		t.Fatalf("%d concurrent leases of one webhook succeeded, want 1", n)
	}

	// w1's lease runs out: w2 takes it; w1's late Advance changes nothing.
	later := until.Add(time.Second)
	if ok, err := s.Lease(ctx, a.ID, "w2", a.Cursor, later, later.Add(time.Minute)); err != nil || !ok {
		t.Fatalf("Lease after the lease ran out = %v, %v; want taken", ok, err)
	}
	if err := s.Advance(ctx, a.ID, "w1", a.Cursor+100, true, later); err != nil {
		t.Fatal(err)
	}
	if err := s.Fail(ctx, a.ID, "w1", a.Cursor+50, later.Add(time.Hour), "late failure"); err != nil {
		t.Fatal(err)
	}
	if got := webhookByID(t, s, d.ID, a.ID); got.Cursor != a.Cursor || got.Attempts != 0 || got.LastError != "" {
		t.Fatalf("after a lost owner's Advance and Fail: %+v; want unchanged", got)
	}

	// Fail by the owner: counted, not due until next, lease freed.
	next := later.Add(10 * time.Minute)
	if err := s.Fail(ctx, a.ID, "w2", a.Cursor, next, "HTTP 500"); err != nil {
		t.Fatal(err)
	}
	got := webhookByID(t, s, d.ID, a.ID)
	if got.Attempts != 1 || got.LastError != "HTTP 500" || !got.NextAttemptAt.Equal(next) {
		t.Fatalf("after Fail: %+v; want 1 attempt, its error, next at %v", got, next)
	}
	if due, _ := s.Due(ctx, next.Add(-time.Second), webhook.Position{}, 10); slices.Contains(ids(due), a.ID) {
		t.Fatal("a failed webhook is due before its next attempt")
	}
	if due, _ := s.Due(ctx, next, webhook.Position{}, 10); !slices.Contains(ids(due), a.ID) {
		t.Fatal("a failed webhook is not due at its next attempt")
	}

	// Advance by the owner: the cursor moves, failures clear; a lease at
	// the old cursor is refused.
	if ok, _ := s.Lease(ctx, a.ID, "w3", a.Cursor, next, next.Add(time.Minute)); !ok {
		t.Fatal("Lease after Fail refused")
	}
	if err := s.Advance(ctx, a.ID, "w3", a.Cursor+7, true, next); err != nil {
		t.Fatal(err)
	}
	got = webhookByID(t, s, d.ID, a.ID)
	if got.Cursor != a.Cursor+7 || got.Attempts != 0 || got.LastError != "" || got.LastSuccessAt == nil ||
		!got.LastSuccessAt.Equal(next) || !got.NextAttemptAt.Equal(next) {
		t.Fatalf("after Advance: %+v; want cursor %d, no failures, success at %v", got, a.Cursor+7, next)
	}
	if ok, _ := s.Lease(ctx, a.ID, "w4", a.Cursor, next, next.Add(time.Minute)); ok {
		t.Fatal("a lease at a stale cursor was taken")
	}
	// Advance with nothing posted moves the cursor but records no success.
	if ok, _ := s.Lease(ctx, a.ID, "w4", a.Cursor+7, next.Add(time.Second), next.Add(time.Minute)); !ok {
		t.Fatal("Lease at the current cursor refused")
	}
	if err := s.Advance(ctx, a.ID, "w4", a.Cursor+9, false, next.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := webhookByID(t, s, d.ID, a.ID); got.Cursor != a.Cursor+9 || got.LastSuccessAt == nil || !got.LastSuccessAt.Equal(next) {
		t.Fatalf("after an empty Advance: %+v; want cursor moved, last success unchanged", got)
	}

	// Release frees the lease and records nothing; another owner's
	// Release does not free it.
	if ok, _ := s.Lease(ctx, c.ID, "w5", c.Cursor, now, until); !ok {
		t.Fatal("Lease refused")
	}
	if err := s.Release(ctx, c.ID, "someone-else"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := s.Lease(ctx, c.ID, "w6", c.Cursor, now, until); ok {
		t.Fatal("another owner's Release freed the lease")
	}
	if err := s.Release(ctx, c.ID, "w5"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := s.Lease(ctx, c.ID, "w6", c.Cursor, now, until); !ok {
		t.Fatal("a released webhook cannot be leased")
	}
	if got := webhookByID(t, s, d.ID, c.ID); got.Attempts != 0 || got.Cursor != c.Cursor || !got.NextAttemptAt.Equal(c.NextAttemptAt) {
		t.Fatalf("after Release: %+v; want nothing recorded", got)
	}
}

func webhookByID(t *testing.T, s store.Webhooks, domainID, id int64) webhook.Webhook {
	t.Helper()
	list, err := s.List(context.Background(), domainID)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range list {
		if w.ID == id {
			return w
		}
	}
	t.Fatalf("webhook %d not listed", id)
	return webhook.Webhook{}
}

func count(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}
