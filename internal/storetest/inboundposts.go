package storetest

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/inboundpost"
	"github.com/postline/postline/internal/store"
)

// testInboundPosts: the outbox of routes' posts keeps one row per token
// (a second enqueue of a token joins the first); due posts come oldest due
// first, leased ones not; a lease is one owner's (also when taken at once)
// until it expires; a retry is recorded by its owner only; finishing drops
// the message and writes the post's log entry in the same transaction,
// and a finished post is never due again; retention deletes by age, and
// the domain's removal takes its posts.
func testInboundPosts(t *testing.T, db *store.DB) {
	ctx := context.Background()
	s := store.NewInboundPosts(db)
	alice, dom := NewDomainRow(t, db, "alice", "alice.example")
	post := func(token string, at time.Duration) inboundpost.Post {
		return inboundpost.Post{Token: token, AccountID: alice.ID, DomainID: dom.ID, RouteID: "aaaaaaaaaaaaaaaaaaaaaaaa", Kind: inboundpost.KindForward,
			URL: "https://app.example/in", Format: "json", Recipient: "help@alice.example", Sender: "ann@sender.example", MessageID: "m1@sender.example",
			Raw: []byte("Subject: x\r\n\r\nbinary \x00\xff " + token), NextAttemptAt: now.Add(at), CreatedAt: now.Add(at)}
	}
	if err := s.Enqueue(ctx, []inboundpost.Post{post("t2", time.Second), post("t1", 0), post("t3", time.Hour)}, 1<<20); err != nil {
		t.Fatal(err)
	}
	again := post("t1", 2*time.Second)
	again.URL = "https://other.example/"
	if err := s.Enqueue(ctx, []inboundpost.Post{again}, 1<<20); err != nil {
		t.Fatalf("enqueueing a token again: %v; want it to join the first", err)
	}
	due, err := s.DuePosts(ctx, now.Add(time.Minute), 10)
	if err != nil || len(due) != 2 || due[0].Token != "t1" || due[1].Token != "t2" {
		t.Fatalf("DuePosts = %+v, %v; want t1 then t2 (t3 is not due)", due, err)
	}
	p := due[0]
	if p.URL != "https://app.example/in" || p.Format != "json" || p.Kind != inboundpost.KindForward || p.Recipient != "help@alice.example" ||
		p.MessageID != "m1@sender.example" || p.State != inboundpost.StatePending || !p.CreatedAt.Equal(now) || p.Raw != nil {
		t.Fatalf("due post = %+v; want the first enqueue's fields, no raw", p)
	}
	if raw, err := s.PostRaw(ctx, p.ID); err != nil || !bytes.Equal(raw, post("t1", 0).Raw) {
		t.Fatalf("PostRaw = %q, %v", raw, err)
	}

	// One lease at a time, also when taken at once.
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := 0
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := s.LeasePost(ctx, p.ID, fmt.Sprint("owner", i), now, now.Add(time.Minute))
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			won += boolInt(ok)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if won != 1 {
		t.Fatalf("%d of 4 concurrent leases won; want 1", won)
	}
	if due, _ := s.DuePosts(ctx, now.Add(30*time.Second), 10); len(due) != 1 || due[0].Token != "t2" {
		t.Fatalf("due while t1 is leased: %+v; want t2 alone", due)
	}
	// The lease expires; a new owner takes it, and the old one can no
	// longer record anything.
	if ok, err := s.LeasePost(ctx, p.ID, "late", now.Add(2*time.Minute), now.Add(3*time.Minute)); err != nil || !ok {
		t.Fatalf("leasing after expiry = %v, %v", ok, err)
	}
	for i := 0; i < 4; i++ {
		s.RetryPost(ctx, p.ID, fmt.Sprint("owner", i), inboundpost.Result{Attempts: 9, Next: now})
	}
	if err := s.RetryPost(ctx, p.ID, "late", inboundpost.Result{Attempts: 1, Status: 503, Error: "the endpoint answered 503", Next: now.Add(90 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	due, _ = s.DuePosts(ctx, now.Add(2*time.Hour), 10)
	if len(due) != 3 || due[2].Token != "t1" || due[2].Attempts != 1 || due[2].LastStatus != 503 || due[2].LastError != "the endpoint answered 503" {
		t.Fatalf("after the retry: %+v; want t1 last (due in 90 minutes) with its failure", due)
	}

	// Finishing: the entry goes in with it; the post is done.
	if ok, _ := s.LeasePost(ctx, p.ID, "me", now.Add(2*time.Hour), now.Add(3*time.Hour)); !ok {
		t.Fatal("no lease")
	}
	entry := event.Entry{DomainID: dom.ID, MessageID: "m1@sender.example", Type: event.Post, Recipient: "help@alice.example",
		CreatedAt: now, Details: []byte(`{"post":"t1","outcome":"posted"}`)}
	if err := s.FinishPost(ctx, p.ID, "other", inboundpost.Result{State: inboundpost.StatePosted, At: now}, &entry); err == nil {
		t.Fatal("FinishPost without the lease succeeded")
	}
	if err := s.FinishPost(ctx, p.ID, "me", inboundpost.Result{State: inboundpost.StatePosted, Status: 200, Attempts: 1, At: now}, &entry); err != nil {
		t.Fatal(err)
	}
	entries, err := store.NewEvents(db).List(ctx, event.Filter{DomainID: dom.ID, Type: event.Post, Limit: 10})
	if err != nil || len(entries) != 1 || string(entries[0].Details) != `{"post":"t1","outcome":"posted"}` {
		t.Fatalf("post entries = %+v, %v; want the one FinishPost wrote", entries, err)
	}
	if raw, err := s.PostRaw(ctx, p.ID); err != nil || len(raw) != 0 {
		t.Fatalf("raw after finishing = %q, %v; want it dropped", raw, err)
	}
	if ok, _ := s.LeasePost(ctx, p.ID, "me", now.Add(5*time.Hour), now.Add(6*time.Hour)); ok {
		t.Fatal("a finished post was leased again")
	}
	due, _ = s.DuePosts(ctx, now.Add(5*time.Hour), 10)
	if len(due) != 2 || due[0].Token == "t1" || due[1].Token == "t1" {
		t.Fatalf("due after t1 finished: %+v", due)
	}
	// Finished, t1 still stands for its token.
	s.Enqueue(ctx, []inboundpost.Post{post("t1", 0)}, 1<<20)
	if due, _ = s.DuePosts(ctx, now.Add(5*time.Hour), 10); len(due) != 2 {
		t.Fatalf("a finished token enqueued again made a new post: %+v", due)
	}

	if n, err := s.PrunePosts(ctx, now.Add(30*time.Minute), 1); err != nil || n != 2 {
		t.Fatalf("PrunePosts = %d, %v; want t1 and t2 (created before)", n, err)
	}
	if due, _ = s.DuePosts(ctx, now.Add(5*time.Hour), 10); len(due) != 1 || due[0].Token != "t3" {
		t.Fatalf("after pruning: %+v; want t3", due)
	}
	if _, err := db.Writer().ExecContext(ctx, `DELETE FROM domains WHERE id = $1`, dom.ID); err != nil {
		t.Fatal(err)
	}
	if due, _ = s.DuePosts(ctx, now.Add(5*time.Hour), 10); len(due) != 0 {
		t.Fatalf("the domain's posts outlived it: %+v", due)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
