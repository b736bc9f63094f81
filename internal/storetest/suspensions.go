package storetest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/secret"
	"github.com/postline/postline/internal/sending"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/suspend"
)

// testSuspensions: a suspension is stored with its fields, one in force
// per kind and value (a second ends the first); only those in force are
// listed or ended (by id or by kind and value); ended ones stay in the
// history with when and how they ended until pruned.
func testSuspensions(t *testing.T, db *store.DB) {
	ctx := context.Background()
	s := store.NewSuspensions(db)
	hour := now.Add(time.Hour)
	put := func(sp suspend.Suspension) suspend.Suspension {
		t.Helper()
		got, err := s.PutSuspension(ctx, sp)
		if err != nil || got.ID == 0 {
			t.Fatalf("PutSuspension(%+v) = %+v, %v", sp, got, err)
		}
		return got
	}
	site := put(suspend.Suspension{Kind: suspend.Site, Value: "mx.example.net", Reason: "421s", CreatedAt: now, CreatedBy: "cli"})
	dom := put(suspend.Suspension{Kind: suspend.Domain, Value: "shop.example", CreatedAt: now, Until: &hour, CreatedBy: "op"})
	ended := now.Add(-time.Minute)
	put(suspend.Suspension{Kind: suspend.Account, Value: "carol", CreatedAt: now.Add(-time.Hour), Until: &ended})

	list, err := s.Suspensions(ctx, now)
	if err != nil || len(list) != 2 {
		t.Fatalf("Suspensions = %+v, %v; want the site's and the domain's (carol's has ended)", list, err)
	}
	if got := list[0]; got.ID != site.ID || got.Kind != suspend.Site || got.Value != "mx.example.net" || got.Reason != "421s" ||
		!got.CreatedAt.Equal(now) || got.Until != nil || got.CreatedBy != "cli" {
		t.Errorf("site suspension read back as %+v", got)
	}
	if got := list[1]; got.ID != dom.ID || got.Until == nil || !got.Until.Equal(hour) || got.CreatedBy != "op" || got.AccountID != 0 {
		t.Errorf("domain suspension read back as %+v", got)
	}
	if list, _ := s.Suspensions(ctx, hour); len(list) != 1 || list[0].ID != site.ID {
		t.Errorf("Suspensions at its end = %+v; want the site's alone", list)
	}

	// Again for the same site: replaced, not added.
	again := put(suspend.Suspension{Kind: suspend.Site, Value: "mx.example.net", Reason: "longer", CreatedAt: now.Add(time.Second), Until: &hour})
	if list, _ := s.Suspensions(ctx, now); len(list) != 2 || list[1].ID != again.ID || list[1].Reason != "longer" || list[1].Until == nil {
		t.Errorf("after suspending the site again: %+v; want its one suspension replaced", list)
	}

	if _, err := s.DeleteSuspensionOf(ctx, suspend.Account, "carol", now); apperr.CodeOf(err) != apperr.NotFound {
		t.Errorf("DeleteSuspensionOf(an ended one) = %v; want not_found", err)
	}
	got, err := s.DeleteSuspensionOf(ctx, suspend.Domain, "shop.example", now)
	if err != nil || got.ID != dom.ID || got.Value != "shop.example" {
		t.Fatalf("DeleteSuspensionOf(domain) = %+v, %v", got, err)
	}
	if _, err := s.DeleteSuspension(ctx, dom.ID, now); apperr.CodeOf(err) != apperr.NotFound {
		t.Errorf("DeleteSuspension of one deleted = %v; want not_found", err)
	}
	if got, err := s.DeleteSuspension(ctx, again.ID, now); err != nil || got.Reason != "longer" {
		t.Fatalf("DeleteSuspension(site) = %+v, %v", got, err)
	}
	if list, _ := s.Suspensions(ctx, now); len(list) != 0 {
		t.Errorf("in force after the deletes: %+v", list)
	}

	// What ended stays in the history, newest first, with when and how.
	hist, err := s.SuspensionHistory(ctx, now.Add(-24*time.Hour), 100)
	if err != nil || len(hist) != 4 {
		t.Fatalf("SuspensionHistory = %+v, %v; want the 4 suspensions", hist, err)
	}
	if hist[0].ID != again.ID || hist[len(hist)-1].Value != "carol" {
		t.Errorf("history order: %+v; want the newest (the second site suspension) first, carol's last", hist)
	}
	ends := map[int64]string{}
	for _, sp := range hist {
		at, how, ok := sp.End(now)
		if !ok {
			t.Errorf("%+v has not ended", sp)
		}
		ends[sp.ID] = how + " " + at.Sub(now).String()
	}
	for id, want := range map[int64]string{site.ID: "replaced 1s", again.ID: "resumed 0s", dom.ID: "resumed 0s"} {
		if ends[id] != want {
			t.Errorf("suspension %d ended %q; want %q", id, ends[id], want)
		}
	}
	if hist[len(hist)-1].EndedAt != nil {
		t.Errorf("carol's expired suspension has ended_at %v; want none (its until is its end)", hist[len(hist)-1].EndedAt)
	}
	if h, _ := s.SuspensionHistory(ctx, now.Add(-24*time.Hour), 2); len(h) != 2 {
		t.Errorf("SuspensionHistory(limit 2) = %d rows", len(h))
	}
	// Since after carol's end: hers is left out.
	if h, _ := s.SuspensionHistory(ctx, now.Add(-30*time.Second), 100); len(h) != 3 {
		t.Errorf("SuspensionHistory since her end = %+v; want the 3 others", h)
	}

	// An expired suspension of the same kind and value is closed as
	// expired, at its until, when a new one comes.
	put(suspend.Suspension{Kind: suspend.Account, Value: "carol", CreatedAt: now})
	if h, _ := s.SuspensionHistory(ctx, now.Add(-24*time.Hour), 100); len(h) != 5 ||
		h[4].Ended != suspend.EndExpired || h[4].EndedAt == nil || !h[4].EndedAt.Equal(ended) {
		t.Errorf("history after suspending carol again: %+v; want her first one ended expired at its until", h)
	}

	// Prune: what ended at or before the time given.
	if n, err := s.PruneSuspensions(ctx, now.Add(-time.Second)); err != nil || n != 1 {
		t.Errorf("PruneSuspensions(-1s) = %d, %v; want carol's first one", n, err)
	}
	if n, err := s.PruneSuspensions(ctx, now.Add(time.Second)); err != nil || n != 3 {
		t.Errorf("PruneSuspensions(+1s) = %d, %v; want the 3 resumed or replaced", n, err)
	}
	if h, _ := s.SuspensionHistory(ctx, now.Add(-24*time.Hour), 100); len(h) != 1 || h[0].Value != "carol" {
		t.Errorf("history after the prunes: %+v; want carol's suspension in force alone", h)
	}
}

// enqueueTo stores one send of domain d to the recipients, due at next.
func enqueueTo(t *testing.T, db *store.DB, accountID, domainID int64, next time.Time, rcpts ...string) []sending.Delivery {
	t.Helper()
	ds := make([]sending.Delivery, len(rcpts))
	for i, r := range rcpts {
		ds[i] = sending.Delivery{DomainID: domainID, MessageID: fmt.Sprintf("q%d.%d.%s", domainID, next.UnixNano(), r),
			Recipient: r, NextAttemptAt: next, CreatedAt: now}
	}
	snd := &sending.Send{DomainID: domainID, AccountID: accountID, From: "a@x.example", Subject: "hi", CreatedAt: now}
	if err := store.NewSending(db).Enqueue(context.Background(), snd, nil, ds, noEntries); err != nil {
		t.Fatal(err)
	}
	return ds
}

// testQueueControl: the claim leaves the deliveries of a suspended domain
// or account (in force; an ended suspension holds nothing) and takes them
// once it is resumed; waiting deliveries are counted by domain, account
// and destination; retry, fail (with entries) and the site holds act on
// the selected deliveries only.
func testQueueControl(t *testing.T, db *store.DB) {
	ctx := context.Background()
	q, s, sus := store.NewQueue(db), store.NewSending(db), store.NewSuspensions(db)
	alice, shop := NewDomainRow(t, db, "alice", "shop.example")
	box, _ := secret.NewBox(make([]byte, 32))
	news, err := store.NewDomains(db, box).CreateDomain(ctx, domain.Domain{AccountID: alice.ID, Name: "news.example", CreatedAt: now,
		DKIMSelector: "s", DKIMPrivateKey: []byte("k"), DKIMPublicKey: "p",
		Delivery: domain.Delivery{Mode: domain.ModeSMTP, Host: "Relay.Example.NET", Port: 587}})
	if err != nil {
		t.Fatal(err)
	}
	bob, bobs := NewDomainRow(t, db, "bob", "bob.example")
	due := now.Add(-time.Minute)
	shopDs := enqueueTo(t, db, alice.ID, shop.ID, due, "a@Gmail.com", "b@gmail.com", "c@yahoo.com")
	newsDs := enqueueTo(t, db, alice.ID, news.ID, due, "d@gmail.com")
	bobDs := enqueueTo(t, db, bob.ID, bobs.ID, due, `"odd@local"@gmail.com`)

	suspendOf := func(kind suspend.Kind, value string, until *time.Time) suspend.Suspension {
		t.Helper()
		sp, err := sus.PutSuspension(ctx, suspend.Suspension{Kind: kind, Value: value, CreatedAt: now, Until: until})
		if err != nil {
			t.Fatal(err)
		}
		return sp
	}
	ended := now.Add(-time.Second)
	suspendOf(suspend.Account, "bob", &ended) // ended: holds nothing
	shopHold := suspendOf(suspend.Domain, "shop.example", nil)
	later := now.Add(time.Hour)
	aliceHold := suspendOf(suspend.Account, "alice", &later)
	if list, err := sus.Suspensions(ctx, now); err != nil || len(list) != 2 || list[1].AccountID != alice.ID {
		t.Fatalf("Suspensions = %+v, %v; want alice's account suspension with her account's id %d", list, err, alice.ID)
	}

	claimed, err := s.Claim(ctx, "w1", now, now.Add(time.Minute), 100, noEntries)
	if ids := deliveryIDs(claimed); err != nil || !slices.Equal(ids, deliveryIDs(bobDs)) {
		t.Fatalf("Claim with shop.example and alice suspended took %v, %v; want bob's %v alone", ids, err, deliveryIDs(bobDs))
	}
	// bob's delivery is held for its site, then the site resumed.
	if err := q.HoldDelivery(ctx, bobDs[0].ID, "w1", "mx.gmail.test", now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if ds, _ := s.Claim(ctx, "w1", now, now.Add(time.Minute), 100, noEntries); len(ds) != 0 {
		t.Fatalf("Claim took %v; want none (bob's is held until +1 h)", deliveryIDs(ds))
	}
	var state string
	var attempts int
	db.Reader().QueryRowContext(ctx, `SELECT state, attempts FROM deliveries WHERE id = $1`, bobDs[0].ID).Scan(&state, &attempts)
	if state != sending.StatePending || attempts != 0 {
		t.Errorf("a held delivery never attempted is %s at attempt %d; want pending, 0", state, attempts)
	}

	// Counts, by each grouping.
	groups := func(by suspend.Kind) map[string]int {
		t.Helper()
		gs, err := q.QueueGroups(ctx, by)
		if err != nil {
			t.Fatalf("QueueGroups(%s): %v", by, err)
		}
		out := map[string]int{}
		for _, g := range gs {
			out[fmt.Sprintf("%s|%s|%s|%s", g.Name, g.Dest.RelayHost, g.Dest.Domain, g.State)] += g.N
		}
		return out
	}
	if got, want := groups(suspend.Domain), map[string]int{"shop.example|||pending": 3, "news.example|||pending": 1,
		"bob.example|||pending": 1}; !mapsEqual(got, want) {
		t.Errorf("QueueGroups(domain) = %v, want %v", got, want)
	}
	if got, want := groups(suspend.Account), map[string]int{"alice|||pending": 4, "bob|||pending": 1}; !mapsEqual(got, want) {
		t.Errorf("QueueGroups(account) = %v, want %v", got, want)
	}
	if got, want := groups(suspend.Site), map[string]int{"||gmail.com|pending": 3, "||yahoo.com|pending": 1,
		"|relay.example.net||pending": 1}; !mapsEqual(got, want) {
		t.Errorf("QueueGroups(site) = %v, want %v (lowercase recipient domains, after the last @; relays by host)", got, want)
	}
	// bob's delivery, held for its site, is counted held in every grouping.
	for _, by := range []suspend.Kind{suspend.Site, suspend.Domain, suspend.Account} {
		gs, _ := q.QueueGroups(ctx, by)
		held := map[string]int{}
		for _, g := range gs {
			held[g.Name+g.Dest.RelayHost+g.Dest.Domain] += g.Held
		}
		key := map[suspend.Kind]string{suspend.Site: "gmail.com", suspend.Domain: "bob.example", suspend.Account: "bob"}[by]
		if held[key] != 1 || held["yahoo.com"]+held["shop.example"]+held["alice"] != 0 {
			t.Errorf("QueueGroups(%s) held = %v; want 1 for %s alone", by, held, key)
		}
	}
	if _, err := q.QueueGroups(ctx, "tenant"); apperr.CodeOf(err) != apperr.Invalid {
		t.Errorf("QueueGroups(tenant) = %v, want invalid", err)
	}

	// The site resumed: bob's held delivery is due and claimed.
	if n, err := q.WakeHeldSite(ctx, "mx.other.test", now); err != nil || n != 0 {
		t.Errorf("WakeHeldSite(another site) = %d, %v; want 0", n, err)
	}
	if n, err := q.WakeHeldSite(ctx, "mx.gmail.test", now); err != nil || n != 1 {
		t.Fatalf("WakeHeldSite = %d, %v; want 1", n, err)
	}
	if ds, _ := s.Claim(ctx, "w2", now, now.Add(time.Minute), 100, noEntries); !slices.Equal(deliveryIDs(ds), deliveryIDs(bobDs)) {
		t.Fatalf("Claim after the site was resumed took %v; want bob's", deliveryIDs(ds))
	}
	var held *string
	db.Reader().QueryRowContext(ctx, `SELECT held_site FROM deliveries WHERE id = $1`, bobDs[0].ID).Scan(&held)
	if held != nil {
		t.Errorf("a claimed delivery is still marked held for %q", *held)
	}
	if _, err := s.CompleteMany(ctx, "w2", []sending.Completion{{ID: bobDs[0].ID,
		Outcome: sending.Outcome{State: sending.StateDeferred, NextAttemptAt: later}}}); err != nil {
		t.Fatal(err)
	}

	// Resuming the domain leaves alice's account holding; then the
	// account's suspension ends by itself.
	if _, err := sus.DeleteSuspension(ctx, shopHold.ID, now); err != nil {
		t.Fatal(err)
	}
	if ds, _ := s.Claim(ctx, "w3", now, now.Add(time.Minute), 100, noEntries); len(ds) != 0 {
		t.Fatalf("Claim with alice suspended took %v", deliveryIDs(ds))
	}
	if ds, _ := s.Claim(ctx, "w3", *aliceHold.Until, aliceHold.Until.Add(time.Minute), 1, noEntries); len(ds) != 1 {
		t.Fatalf("Claim when alice's suspension ends took %d; want one", len(ds))
	} else if err := s.Release(ctx, ds[0].ID, "w3", now); err != nil {
		t.Fatal(err)
	}
	if _, err := sus.DeleteSuspension(ctx, aliceHold.ID, now); err != nil {
		t.Fatal(err)
	}

	// Retry: only the selected deferred ones not yet due.
	if n, err := q.RetrySelected(ctx, sending.Selection{Domain: "shop.example"}, now); err != nil || n != 0 {
		t.Errorf("RetrySelected(shop.example) = %d, %v; want 0 (its deliveries are due already)", n, err)
	}
	if n, err := q.RetrySelected(ctx, sending.Selection{Account: "alice"}, now); err != nil || n != 0 {
		t.Errorf("RetrySelected(alice) = %d, %v; want 0", n, err)
	}
	if n, err := q.RetrySelected(ctx, sending.Selection{Account: "bob"}, now); err != nil || n != 1 {
		t.Errorf("RetrySelected(bob) = %d, %v; want bob's deferred one", n, err)
	}

	// Fail by site: gmail.com's direct deliveries, the relay's, and those
	// held for the site; never yahoo.com's, nor one being attempted.
	ds, err := s.Claim(ctx, "w4", now, now.Add(time.Minute), 100, noEntries) // claims everything due
	if err != nil {
		t.Fatal(err)
	}
	var inFlight int64
	for _, d := range ds {
		next, site := now, ""
		switch d.ID {
		case shopDs[0].ID:
			inFlight = d.ID
			continue // stays sending
		case bobDs[0].ID:
			site = "gmail-site"
		}
		if err := q.HoldDelivery(ctx, d.ID, "w4", site, next); err != nil {
			t.Fatal(err)
		}
	}
	sel := sending.Selection{Site: "gmail-site", RelayHosts: []string{"relay.example.net"}, RcptDomains: []string{"gmail.com"}}
	var logged []int64
	failed, err := q.FailSelected(ctx, sel, "bounced by the operator: spam run", now, 100, func(ds []sending.Delivery) []event.Entry {
		out := make([]event.Entry, len(ds))
		for i, d := range ds {
			logged = append(logged, d.ID)
			out[i] = event.Entry{DomainID: d.DomainID, MessageID: d.MessageID, Type: event.Failed, Recipient: d.Recipient, CreatedAt: now,
				Details: event.NewDetails(map[string]any{"reason": "spam run"})}
		}
		return out
	})
	want := []int64{shopDs[1].ID, newsDs[0].ID, bobDs[0].ID}
	slices.Sort(want)
	if ids := deliveryIDs(failed); err != nil || !slices.Equal(ids, want) {
		t.Fatalf("FailSelected(gmail site) = %v, %v; want %v (not yahoo.com's, not the one in flight %d)", ids, err, want, inFlight)
	}
	slices.Sort(logged)
	if !slices.Equal(logged, want) {
		t.Errorf("entries made for %v, want %v", logged, want)
	}
	entries, err := store.NewEvents(db).List(ctx, event.Filter{DomainID: news.ID, Limit: 10})
	if err != nil || len(entries) != 1 || entries[0].Type != event.Failed {
		t.Errorf("news.example's log after the fail: %+v, %v; want its failed entry", entries, err)
	}
	var msg string
	db.Reader().QueryRowContext(ctx, `SELECT state, last_message FROM deliveries WHERE id = $1`, newsDs[0].ID).Scan(&state, &msg)
	if state != sending.StateFailed || msg != "bounced by the operator: spam run" {
		t.Errorf("a failed delivery is %s %q", state, msg)
	}
	// Limits: one at a time, then nothing left.
	left, err := q.FailSelected(ctx, sending.Selection{Domain: "shop.example"}, "x", now, 1, noEntries)
	if err != nil || len(left) != 1 || left[0].ID != shopDs[2].ID {
		t.Fatalf("FailSelected(shop.example, 1) = %v, %v; want yahoo.com's %d (the other is in flight)", deliveryIDs(left), err, shopDs[2].ID)
	}
	if left, _ := q.FailSelected(ctx, sending.Selection{}, "x", now, 10, noEntries); len(left) != 0 {
		t.Errorf("FailSelected(all) with nothing waiting took %v", deliveryIDs(left))
	}
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// testAutomationSuspensions: what automation rules put in force is stored
// with its action, rule and reply, one per kind and value, and a second
// activation replaces the first.
func testAutomationSuspensions(t *testing.T, db *store.DB) {
	ctx := context.Background()
	s := store.NewSuspensions(db)
	until := now.Add(time.Minute)
	for _, sp := range []suspend.Suspension{
		{Kind: suspend.Override, Value: "connection_limit@mx.example.org", Reason: "r", CreatedAt: now, Until: &until,
			CreatedBy: suspend.ByAutomation, Action: "SetConfig connection_limit=1", Rule: "abc123", Reply: "421 4.7.28 slow down"},
		{Kind: suspend.Tenant, Value: "7@mx.example.org", CreatedAt: now, Until: &until,
			CreatedBy: suspend.ByAutomation, Action: "SuspendTenant", Rule: "abc123", Reply: "421 4.7.28 first"},
		{Kind: suspend.Tenant, Value: "7@mx.example.org", CreatedAt: now, Until: &until,
			CreatedBy: suspend.ByAutomation, Action: "SuspendTenant", Rule: "def456", Reply: "421 4.7.28 again"},
	} {
		if _, err := s.PutSuspension(ctx, sp); err != nil {
			t.Fatalf("PutSuspension(%+v): %v", sp, err)
		}
	}
	list, err := s.Suspensions(ctx, now)
	if err != nil || len(list) != 2 {
		t.Fatalf("Suspensions = %+v, %v; want the config override and one tenant suspension", list, err)
	}
	if got := list[0]; got.Kind != suspend.Override || got.Action != "SetConfig connection_limit=1" || got.Rule != "abc123" ||
		got.Reply != "421 4.7.28 slow down" || got.CreatedBy != suspend.ByAutomation {
		t.Errorf("config override read back as %+v", got)
	}
	if got := list[1]; got.Kind != suspend.Tenant || got.Rule != "def456" || got.Reply != "421 4.7.28 again" {
		t.Errorf("tenant suspension read back as %+v; want the second activation's", got)
	}
	if list, _ := s.Suspensions(ctx, until); len(list) != 0 {
		t.Errorf("Suspensions after their end = %+v; want none", list)
	}
}
