package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/inboundpost"
	"github.com/postline/postline/internal/receiving"
	"github.com/postline/postline/internal/store"
)

// testInboundPostsBound: an account's pending posts hold at most the
// bound of message bytes (each post its own copy): an enqueue past it
// stores none of its posts and is ErrPostsFull; a token that joins an
// earlier post adds nothing; a post that ends frees its room; another
// account has its own; enqueues racing for the last room keep to it.
func testInboundPostsBound(t *testing.T, db *store.DB) {
	ctx := context.Background()
	s := store.NewInboundPosts(db)
	alice, aliceDom := NewDomainRow(t, db, "alice", "alice.example")
	bob, bobDom := NewDomainRow(t, db, "bob", "bob.example")
	const size, bound = 1000, 3500 // three posts fit, a fourth does not
	post := func(a account.Account, d domain.Domain, token string) inboundpost.Post {
		return inboundpost.Post{Token: token, AccountID: a.ID, DomainID: d.ID, RouteID: "aaaaaaaaaaaaaaaaaaaaaaaa", Kind: inboundpost.KindForward,
			URL: "https://app.example/in", Format: "mailgun", Recipient: "help@" + d.Name, Sender: "ann@sender.example", MessageID: "m@sender.example",
			Raw: []byte(strings.Repeat("x", size)), NextAttemptAt: now, CreatedAt: now}
	}
	pending := func(a account.Account) int {
		t.Helper()
		var n int
		if err := db.Writer().QueryRowContext(ctx, `SELECT COUNT(*) FROM inbound_posts WHERE account_id = $1 AND state = 'pending'`, a.ID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if err := s.Enqueue(ctx, []inboundpost.Post{post(alice, aliceDom, "a1"), post(alice, aliceDom, "a2")}, bound); err != nil {
		t.Fatal(err)
	}
	// One message's posts past the bound: none of them is stored.
	err := s.Enqueue(ctx, []inboundpost.Post{post(alice, aliceDom, "a3"), post(alice, aliceDom, "a4")}, bound)
	if !errors.Is(err, receiving.ErrPostsFull) || pending(alice) != 2 {
		t.Fatalf("enqueueing 2 posts of %d bytes to 2 held, bound %d: %v, %d pending; want ErrPostsFull and 2", size, bound, err, pending(alice))
	}
	// A retry's tokens join the posts they name: no room taken.
	if err := s.Enqueue(ctx, []inboundpost.Post{post(alice, aliceDom, "a1"), post(alice, aliceDom, "a2"), post(alice, aliceDom, "a3")}, bound); err != nil {
		t.Fatalf("enqueueing a1, a2 again and a3: %v; want a1 and a2 joined and a3 stored (3000 bytes)", err)
	}
	// Bob's room is his own.
	if err := s.Enqueue(ctx, []inboundpost.Post{post(bob, bobDom, "b1"), post(bob, bobDom, "b2"), post(bob, bobDom, "b3")}, bound); err != nil {
		t.Fatalf("bob's posts with alice's outbox full: %v", err)
	}
	if err := s.Enqueue(ctx, []inboundpost.Post{post(alice, aliceDom, "a4")}, bound); !errors.Is(err, receiving.ErrPostsFull) {
		t.Fatalf("a4 with 3 held: %v; want ErrPostsFull", err)
	}
	// A post that ends frees its room.
	due, err := s.DuePosts(ctx, now.Add(time.Minute), 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range due {
		if p.Token != "a1" {
			continue
		}
		if ok, err := s.LeasePost(ctx, p.ID, "me", now, now.Add(time.Minute)); !ok || err != nil {
			t.Fatalf("lease: %v %v", ok, err)
		}
		if err := s.FinishPost(ctx, p.ID, "me", inboundpost.Result{State: inboundpost.StateFailed, At: now}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Enqueue(ctx, []inboundpost.Post{post(alice, aliceDom, "a4")}, bound); err != nil {
		t.Fatalf("a4 after a1 ended: %v", err)
	}
	// Enqueues racing for the last room: one gets it.
	carol, carolDom := NewDomainRow(t, db, "carol", "carol.example")
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.Enqueue(ctx, []inboundpost.Post{post(carol, carolDom, fmt.Sprint("c", i))}, bound)
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil && !errors.Is(err, receiving.ErrPostsFull) && !errors.Is(err, context.DeadlineExceeded) && !strings.Contains(err.Error(), "busy") {
			t.Errorf("racing enqueue: %v", err)
		}
	}
	if n := pending(carol); n != 3 {
		t.Errorf("6 racing enqueues of %d bytes, bound %d: %d pending; want 3", size, bound, n)
	}
}
