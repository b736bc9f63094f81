package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/audit"
	"github.com/postline/postline/internal/store"
)

// testTeam: a member round trips; an email is one member in the
// installation; the bounds hold (members, pending invitations); another
// account's member is not found; an invitation is accepted once and not
// after it expires; a member's session reads its role as it is now and
// ends with the member.
func testTeam(t *testing.T, db *store.DB) {
	ctx := context.Background()
	team, sessions := store.NewTeam(db), store.NewSessions(db)
	alice, bob := twoAccounts(t, store.NewAccounts(db))
	exp := now.Add(24 * time.Hour)
	b := account.MemberBounds{MaxMembers: 2, MaxPending: 2, Now: now}
	add := func(acc int64, email, hash string) (account.Member, error) {
		return team.CreateMember(ctx, account.Member{AccountID: acc, Email: email, Role: account.RoleViewer, CreatedAt: now,
			InviteExpiresAt: &exp}, hash, b)
	}
	ann, err := add(alice.ID, "ann@example.com", "h-ann")
	if err != nil || ann.ID == 0 {
		t.Fatalf("CreateMember = %+v, %v", ann, err)
	}
	if _, err := add(bob.ID, "ann@example.com", "h-ann2"); apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("the same email in another account = %v, want conflict", err)
	}
	if _, err := add(alice.ID, "ben@example.com", "h-ben"); err != nil {
		t.Fatal(err)
	}
	if _, err := add(alice.ID, "cy@example.com", "h-cy"); !errors.Is(err, account.ErrTooManyMembers) {
		t.Fatalf("a third member past MaxMembers 2 = %v, want ErrTooManyMembers", err)
	}
	b.MaxMembers = 10
	if _, err := add(alice.ID, "cy@example.com", "h-cy"); !errors.Is(err, account.ErrTooManyInvites) {
		t.Fatalf("a third pending invitation past MaxPending 2 = %v, want ErrTooManyInvites", err)
	}

	got, err := team.MemberByInvite(ctx, "h-ann")
	if err != nil || got.ID != ann.ID || got.Email != "ann@example.com" || got.Role != account.RoleViewer || got.PasswordSet ||
		got.InviteExpiresAt == nil || !got.InviteExpiresAt.Equal(exp) || got.InviteUsedAt != nil || !got.CreatedAt.Equal(now) {
		t.Fatalf("MemberByInvite = %+v, %v", got, err)
	}
	if _, err := team.MemberByID(ctx, bob.ID, ann.ID); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("Alice's member read as Bob's = %v, want not_found", err)
	}
	if err := team.SetMemberRole(ctx, bob.ID, ann.ID, account.RoleOwner); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("Bob changing Alice's member = %v, want not_found", err)
	}
	if err := team.DeleteMember(ctx, bob.ID, ann.ID, now); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("Bob deleting Alice's member = %v, want not_found", err)
	}

	// Accepting: expired no, wrong hash no, once yes, twice no.
	if err := team.AcceptInvite(ctx, ann.ID, "h-ann", "phc", exp); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("accepting at the expiry = %v, want not_found", err)
	}
	if err := team.AcceptInvite(ctx, ann.ID, "h-ben", "phc", now); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("accepting with another member's link = %v, want not_found", err)
	}
	if err := team.AcceptInvite(ctx, ann.ID, "h-ann", "phc-ann", now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := team.AcceptInvite(ctx, ann.ID, "h-ann", "phc-2", now.Add(time.Hour)); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("accepting twice = %v, want not_found", err)
	}
	m, acc, hash, err := team.MemberPassword(ctx, "ann@example.com")
	if err != nil || hash != "phc-ann" || !m.PasswordSet || m.InviteUsedAt == nil || acc.ID != alice.ID || acc.Login != "alice" {
		t.Fatalf("MemberPassword = %+v %+v %q %v", m, acc, hash, err)
	}
	if _, _, _, err := team.MemberPassword(ctx, "nobody@example.com"); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("an unknown email = %v", err)
	}
	if err := team.TouchMemberSignIn(ctx, ann.ID, now.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	// A new link for a pending member replaces the old one; never for an active one.
	ben, _ := team.MemberByEmail(ctx, "ben@example.com")
	ben.Role = account.RoleDeveloper
	b.MaxPending = 1 // Ben's own pending link does not count against its renewal
	if err := team.ReinviteMember(ctx, ben, "h-ben2", b); err != nil {
		t.Fatal(err)
	}
	if _, err := team.MemberByInvite(ctx, "h-ben"); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("the replaced link = %v, want not_found", err)
	}
	if got, err := team.MemberByInvite(ctx, "h-ben2"); err != nil || got.Role != account.RoleDeveloper {
		t.Fatalf("the new link = %+v, %v", got, err)
	}
	b.MaxPending = 10
	annNow, _ := team.MemberByEmail(ctx, "ann@example.com")
	if err := team.ReinviteMember(ctx, annNow, "h-ann3", b); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("a new link for an active member = %v, want not_found", err)
	}
	list, err := team.ListMembers(ctx, alice.ID)
	if err != nil || len(list) != 2 || list[0].Email != "ann@example.com" || list[0].LastSignInAt == nil ||
		!list[0].LastSignInAt.Equal(now.Add(2*time.Hour)) || list[1].Email != "ben@example.com" {
		t.Fatalf("ListMembers = %+v, %v", list, err)
	}
	if list, _ := team.ListMembers(ctx, bob.ID); len(list) != 0 {
		t.Fatalf("Bob's members = %+v", list)
	}

	// A member's session: its role read at each lookup; gone with it.
	ses := account.Session{Principal: account.Principal{AccountID: alice.ID, MemberID: ann.ID}, CSRF: "c", CreatedAt: now, LastSeen: now}
	if err := sessions.CreateSession(ctx, "hash-ann", ses); err != nil {
		t.Fatal(err)
	}
	if err := store.NewAccounts(db).SetAdmin(ctx, alice.ID, true); err != nil {
		t.Fatal(err)
	}
	r, err := sessions.SessionByHash(ctx, "hash-ann")
	if err != nil || r.MemberID != ann.ID || r.Email != "ann@example.com" || r.Role != account.RoleViewer || r.Admin || r.Login != "alice" {
		t.Fatalf("a viewer's session = %+v, %v; want ann, viewer, not an operator", r, err)
	}
	if err := team.SetMemberRole(ctx, alice.ID, ann.ID, account.RoleOwner); err != nil {
		t.Fatal(err)
	}
	if r, _ := sessions.SessionByHash(ctx, "hash-ann"); r.Role != account.RoleOwner || !r.Admin {
		t.Fatalf("after the role change: %+v; want owner (of an operator account)", r)
	}
	// Keys: Ann's own (made in the console or with a key of hers) go
	// with her, revoked; the account's and Ben's stay.
	accounts := store.NewAccounts(db)
	mk := func(name string, member int64) account.Key {
		k, err := accounts.CreateKey(ctx, account.Key{AccountID: alice.ID, Name: name, Prefix: "pl_" + name, CreatedAt: now, MemberID: member}, "hash-"+name)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	annKey, ownKey, benKey := mk("ann", ann.ID), mk("own", 0), mk("ben", ben.ID)
	if k, err := accounts.KeyByID(ctx, annKey.ID); err != nil || k.MemberID != ann.ID {
		t.Fatalf("Ann's key = %+v, %v; want her member id", k, err)
	}
	gone := now.Add(3 * time.Hour)
	if err := team.DeleteMember(ctx, alice.ID, ann.ID, gone); err != nil {
		t.Fatal(err)
	}
	if _, err := sessions.SessionByHash(ctx, "hash-ann"); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("a removed member's session = %v, want not_found", err)
	}
	if k, _, err := accounts.KeyByHash(ctx, "hash-ann"); err != nil || k.RevokedAt == nil || !k.RevokedAt.Equal(gone) {
		t.Fatalf("a removed member's key = %+v, %v; want revoked at the removal", k, err)
	}
	for _, k := range []account.Key{ownKey, benKey} {
		if got, err := accounts.KeyByID(ctx, k.ID); err != nil || got.RevokedAt != nil {
			t.Fatalf("key %q after Ann's removal = %+v, %v; want it working", k.Name, got, err)
		}
	}
}

// testAudit: entries round trip per account, newest first, paged by id;
// pruning takes what is older than the cut, a batch at a time.
func testAudit(t *testing.T, db *store.DB) {
	ctx := context.Background()
	s := store.NewAudit(db)
	alice, bob := twoAccounts(t, store.NewAccounts(db))
	for i := range 5 {
		if _, err := s.AddAudit(ctx, audit.Entry{AccountID: alice.ID, At: now.Add(time.Duration(i) * time.Hour), Actor: "ann@example.com",
			Action: audit.KeyCreated, Target: "k" + string(rune('0'+i)), Client: "127.0.0.1"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.AddAudit(ctx, audit.Entry{AccountID: bob.ID, At: now, Actor: "bob", Action: audit.DomainAdded, Target: "b.example", Client: "::1"}); err != nil {
		t.Fatal(err)
	}
	es, err := s.ListAudit(ctx, audit.Filter{AccountID: alice.ID, Limit: 3})
	if err != nil || len(es) != 3 || es[0].Target != "k4" || es[2].Target != "k2" || es[0].Actor != "ann@example.com" ||
		es[0].Client != "127.0.0.1" || es[0].Action != audit.KeyCreated || !es[0].At.Equal(now.Add(4*time.Hour)) {
		t.Fatalf("the newest three = %+v, %v", es, err)
	}
	older, _ := s.ListAudit(ctx, audit.Filter{AccountID: alice.ID, Before: es[2].ID, Limit: 3})
	if len(older) != 2 || older[0].Target != "k1" || older[1].Target != "k0" {
		t.Fatalf("the page before %d = %+v", es[2].ID, older)
	}
	n, err := s.PruneAudit(ctx, now.Add(2*time.Hour), 1)
	if err != nil || n != 1 {
		t.Fatalf("PruneAudit batch 1 = %d, %v", n, err)
	}
	if n, _ := s.PruneAudit(ctx, now.Add(2*time.Hour), 100); n != 2 { // k1 and Bob's
		t.Fatalf("the rest before the cut = %d, want 2", n)
	}
	if es, _ := s.ListAudit(ctx, audit.Filter{AccountID: alice.ID, Limit: 10}); len(es) != 3 || es[2].Target != "k2" {
		t.Fatalf("after pruning: %+v", es)
	}
}
