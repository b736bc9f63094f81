// Package storetest is the conformance suite every storage dialect must
// pass: the same assertions against SQLite and PostgreSQL.
package storetest

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/secret"
	"github.com/postline/postline/internal/store"
)

// Run runs the suite; open returns a fresh migrated database per call.
func Run(t *testing.T, open func(t *testing.T) *store.DB) {
	t.Run("Accounts", func(t *testing.T) { t.Parallel(); testAccounts(t, open(t)) })
	t.Run("AccountSignIn", func(t *testing.T) { t.Parallel(); testAccountSignIn(t, open(t)) })
	t.Run("Domains", func(t *testing.T) { t.Parallel(); testDomains(t, open(t)) })
	t.Run("DomainLookups", func(t *testing.T) { t.Parallel(); testDomainLookups(t, open(t)) })
	t.Run("DomainEgressPool", func(t *testing.T) { t.Parallel(); testDomainEgressPool(t, open(t)) })
	t.Run("AccountEgressPool", func(t *testing.T) { t.Parallel(); testAccountEgressPool(t, open(t)) })
	t.Run("DomainClaims", func(t *testing.T) { t.Parallel(); testDomainClaims(t, open(t)) })
	t.Run("OwnedCache", func(t *testing.T) { t.Parallel(); testOwnedCache(t, open(t)) })
	t.Run("DomainDNSChecks", func(t *testing.T) { t.Parallel(); testDomainDNSChecks(t, open(t)) })
	t.Run("VerifyWritesVerificationOnly", func(t *testing.T) { t.Parallel(); testVerifyWritesVerificationOnly(t, open(t)) })
	t.Run("Suppressions", func(t *testing.T) { t.Parallel(); testSuppressions(t, open(t)) })
	t.Run("SuppressionFeeds", func(t *testing.T) { t.Parallel(); testSuppressionFeeds(t, open(t)) })
	t.Run("RateCounter", func(t *testing.T) { t.Parallel(); testRateCounter(t, open(t)) })
	t.Run("Tracking", func(t *testing.T) { t.Parallel(); testTracking(t, open(t)) })
	t.Run("SendingBatches", func(t *testing.T) { t.Parallel(); testSendingBatches(t, open(t)) })
	t.Run("SendingMessages", func(t *testing.T) { t.Parallel(); testSendingMessages(t, open(t)) })
	t.Run("IdempotencyClaims", func(t *testing.T) { t.Parallel(); testIdempotencyClaims(t, open(t)) })
	t.Run("PruneSends", func(t *testing.T) { t.Parallel(); testPruneSends(t, open(t)) })
	t.Run("PruneIdempotencyKeys", func(t *testing.T) { t.Parallel(); testPruneIdempotencyKeys(t, open(t)) })
	t.Run("InTxPanic", func(t *testing.T) { t.Parallel(); testInTxPanic(t, open(t)) })
	t.Run("CallTimeout", func(t *testing.T) { t.Parallel(); testCallTimeout(t, open(t)) })
	t.Run("MTASTSPolicies", func(t *testing.T) { t.Parallel(); testMTASTSPolicies(t, open(t)) })
	t.Run("Members", func(t *testing.T) { t.Parallel(); testMembers(t, open(t)) })
	t.Run("ProbeWrite", func(t *testing.T) { t.Parallel(); testProbeWrite(t, open(t)) })
	t.Run("Templates", func(t *testing.T) { t.Parallel(); testTemplates(t, open(t)) })
	t.Run("TemplateTags", func(t *testing.T) { t.Parallel(); testTemplateTags(t, open(t)) })
	t.Run("TemplatesConcurrent", func(t *testing.T) { t.Parallel(); testTemplatesConcurrent(t, open(t)) })
	t.Run("InboundRoutes", func(t *testing.T) { t.Parallel(); testInboundRoutes(t, open(t)) })
	t.Run("InboundMessages", func(t *testing.T) { t.Parallel(); testInboundMessages(t, open(t)) })
	t.Run("InboundPosts", func(t *testing.T) { t.Parallel(); testInboundPosts(t, open(t)) })
	t.Run("InboundPostsBound", func(t *testing.T) { t.Parallel(); testInboundPostsBound(t, open(t)) })
	t.Run("Webhooks", func(t *testing.T) { t.Parallel(); testWebhooks(t, open(t)) })
	t.Run("MailgunWebhooks", func(t *testing.T) { t.Parallel(); testMailgunWebhooks(t, open(t)) })
	t.Run("WebhookLeases", func(t *testing.T) { t.Parallel(); testWebhookLeases(t, open(t)) })
	t.Run("ValidationJobs", func(t *testing.T) { t.Parallel(); testValidationJobs(t, open(t)) })
	t.Run("ValidationJobColumns", func(t *testing.T) { t.Parallel(); testValidationJobColumns(t, open(t)) })
	t.Run("ValidationJobNames", func(t *testing.T) { t.Parallel(); testValidationJobNames(t, open(t)) })
	t.Run("ValidationJobRuns", func(t *testing.T) { t.Parallel(); testValidationJobRuns(t, open(t)) })
	t.Run("ValidationJobCancel", func(t *testing.T) { t.Parallel(); testValidationJobCancelDropsPending(t, open(t)) })
	t.Run("ValidationCache", func(t *testing.T) { t.Parallel(); testValidationCache(t, open(t)) })
	t.Run("Sessions", func(t *testing.T) { t.Parallel(); testSessions(t, open(t)) })
	t.Run("Team", func(t *testing.T) { t.Parallel(); testTeam(t, open(t)) })
	t.Run("Audit", func(t *testing.T) { t.Parallel(); testAudit(t, open(t)) })
	t.Run("Queue", func(t *testing.T) { t.Parallel(); testQueue(t, open(t)) })
	t.Run("QueueClaims", func(t *testing.T) { t.Parallel(); testQueueClaims(t, open(t)) })
	t.Run("ClaimSiblings", func(t *testing.T) { t.Parallel(); testClaimSiblings(t, open(t)) })
	t.Run("Suspensions", func(t *testing.T) { t.Parallel(); testSuspensions(t, open(t)) })
	t.Run("AutomationSuspensions", func(t *testing.T) { t.Parallel(); testAutomationSuspensions(t, open(t)) })
	t.Run("QueueControl", func(t *testing.T) { t.Parallel(); testQueueControl(t, open(t)) })
	t.Run("Meta", func(t *testing.T) { t.Parallel(); testMeta(t, open(t)) })
	t.Run("StatCounts", func(t *testing.T) { t.Parallel(); testStatCounts(t, open(t)) })
	t.Run("Tags", func(t *testing.T) { t.Parallel(); testTags(t, open(t)) })
	t.Run("TagBoundCost", func(t *testing.T) { t.Parallel(); testTagBoundCost(t, open(t)) })
	t.Run("TagsConcurrently", func(t *testing.T) { t.Parallel(); testTagsConcurrently(t, open(t)) })
	t.Run("MigrateTwice", func(t *testing.T) {
		t.Parallel()
		db := open(t)
		if err := db.Migrate(context.Background()); err != nil {
			t.Fatalf("second Migrate: %v", err)
		}
	})
}

var now = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func testAccounts(t *testing.T, db *store.DB) {
	ctx := context.Background()
	s := store.NewAccounts(db)
	a, err := s.CreateAccount(ctx, "alice", now)
	if err != nil || a.ID == 0 {
		t.Fatalf("CreateAccount = %+v, %v", a, err)
	}
	if _, err := s.CreateAccount(ctx, "alice", now); apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("duplicate CreateAccount error = %v, want conflict", err)
	}
	if _, err := s.AccountByLogin(ctx, "bob"); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("AccountByLogin(bob) error = %v, want not_found", err)
	}
	k, err := s.CreateKey(ctx, account.Key{AccountID: a.ID, Name: "ci", Prefix: "pl_abc", CreatedAt: now}, "h1")
	if err != nil {
		t.Fatal(err)
	}
	gotK, gotA, err := s.KeyByHash(ctx, "h1")
	if err != nil || gotK.ID != k.ID || gotA.Login != "alice" || gotK.Name != "ci" || !gotK.CreatedAt.Equal(now) {
		t.Fatalf("KeyByHash = %+v %+v %v", gotK, gotA, err)
	}
	if err := s.TouchKey(ctx, k.ID, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.RevokeKey(ctx, k.ID, now.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.RevokeKey(ctx, 9999, now); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("RevokeKey(9999) = %v, want not_found", err)
	}
	keys, err := s.ListKeys(ctx, a.ID)
	if err != nil || len(keys) != 1 || keys[0].RevokedAt == nil || keys[0].LastUsedAt == nil ||
		!keys[0].LastUsedAt.Equal(now.Add(time.Hour)) {
		t.Fatalf("ListKeys = %+v, %v; want one revoked key used at +1h", keys, err)
	}
	if err := s.DisableAccount(ctx, a.ID, now); err != nil {
		t.Fatal(err)
	}
	if n, err := s.CountAccounts(ctx); err != nil || n != 1 {
		t.Fatalf("CountAccounts = %d, %v", n, err)
	}
	all, err := s.ListAccounts(ctx)
	if err != nil || len(all) != 1 || all[0].DisabledAt == nil {
		t.Fatalf("ListAccounts = %+v, %v; want alice disabled", all, err)
	}
}

func testDomains(t *testing.T, db *store.DB) {
	ctx := context.Background()
	box, _ := secret.NewBox(bytes.Repeat([]byte{7}, 32))
	s := store.NewDomains(db, box)
	a, err := store.NewAccounts(db).CreateAccount(ctx, "alice", now)
	if err != nil {
		t.Fatal(err)
	}
	d := domain.Domain{AccountID: a.ID, Name: "example.org", CreatedAt: now, DKIMSelector: "pl1",
		DKIMPrivateKey: []byte("private"), DKIMPublicKey: "pub", DKIMEd25519: true, DKIMEd25519Key: []byte("edwards"),
		Delivery: domain.Delivery{Mode: domain.ModeSMTP, Host: "smtp.example.net", Port: 587, User: "u", Password: "hunter2", TLS: "starttls"}}
	d, err = s.CreateDomain(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateDomain(ctx, d); apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("duplicate CreateDomain = %v, want conflict", err)
	}
	var raw string
	db.Reader().QueryRowContext(ctx, `SELECT smtp_password || dkim_key || dkim_ed25519_key FROM domains WHERE id = $1`, d.ID).Scan(&raw)
	if bytes.Contains([]byte(raw), []byte("hunter2")) || bytes.Contains([]byte(raw), []byte("private")) || bytes.Contains([]byte(raw), []byte("edwards")) {
		t.Fatalf("secrets stored in clear: %q", raw)
	}
	got, err := s.AccountDomain(ctx, a.ID, "example.org")
	if err != nil || got.Delivery != d.Delivery || string(got.DKIMPrivateKey) != "private" || got.VerifiedAt != nil ||
		!got.DKIMEd25519 || string(got.DKIMEd25519Key) != "edwards" {
		t.Fatalf("AccountDomain = %+v, %v", got, err)
	}
	v := now.Add(time.Minute)
	got.VerifiedAt, got.TrackingDomain, got.AuthDomain = &v, "t.example.org", "a.example.org"
	if err := s.UpdateDomain(ctx, got); err != nil {
		t.Fatal(err)
	}
	list, err := s.ListDomains(ctx, a.ID)
	if err != nil || len(list) != 1 || list[0].TrackingDomain != "t.example.org" || list[0].AuthDomain != "a.example.org" ||
		list[0].VerifiedAt == nil || !list[0].VerifiedAt.Equal(v) {
		t.Fatalf("ListDomains = %+v, %v", list, err)
	}
	// Ed25519 off keeps its key (turning it on again needs no new record).
	got.DKIMEd25519 = false
	if err := s.UpdateDomain(ctx, got); err != nil {
		t.Fatal(err)
	}
	if off, err := s.DomainByID(ctx, d.ID); err != nil || off.DKIMEd25519 || string(off.DKIMEd25519Key) != "edwards" {
		t.Fatalf("after Ed25519 off: on %v, key %q, %v; want off with the key kept", off.DKIMEd25519, off.DKIMEd25519Key, err)
	}
	if err := s.DeleteDomain(ctx, d.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AccountDomain(ctx, a.ID, "example.org"); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("after delete: %v, want not_found", err)
	}
}

func testRateCounter(t *testing.T, db *store.DB) {
	ctx := context.Background()
	c := store.NewRateCounter(db)
	w := now.Truncate(time.Minute)
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Incr(ctx, "k", w, 1, time.Minute); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n, err := c.Incr(ctx, "k", w, 1, time.Minute); err != nil || n != 21 {
		t.Fatalf("after 20 concurrent increments Incr = %d, %v; want 21", n, err)
	}
	if n, _ := c.Incr(ctx, "k", w.Add(time.Minute), 1, time.Minute); n != 1 {
		t.Fatalf("next window starts at %d, want 1", n)
	}
	if n, _ := c.Incr(ctx, "other", w, 1, time.Minute); n != 1 {
		t.Fatalf("another key starts at %d, want 1", n)
	}
	if n, err := c.Get(ctx, "k", w); err != nil || n != 21 {
		t.Fatalf("Get = %d, %v; want 21 (and unchanged)", n, err)
	}
	if n, err := c.Incr(ctx, "k", w, 64, time.Minute); err != nil || n != 85 {
		t.Fatalf("a run of 64 after 21: Incr = %d, %v; want 85", n, err)
	}
	if n, err := c.Incr(ctx, "fresh", w, 64, time.Minute); err != nil || n != 64 {
		t.Fatalf("a run of 64 on a new counter: Incr = %d, %v; want 64", n, err)
	}
	if n, err := c.Get(ctx, "never", w); err != nil || n != 0 {
		t.Fatalf("Get of an unknown key = %d, %v; want 0", n, err)
	}
	// Decr gives one back and never goes below zero; Reset clears.
	for range 2 {
		if err := c.Decr(ctx, "other", w); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Decr(ctx, "never", w); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.Get(ctx, "other", w); n != 0 {
		t.Fatalf("1 less 2 = %d, want 0 (never below zero)", n)
	}
	if n, _ := c.Incr(ctx, "other", w, 1, time.Minute); n != 1 {
		t.Fatalf("Incr after Decr to 0 = %d, want 1", n)
	}
	if err := c.Decr(ctx, "k", w); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.Get(ctx, "k", w); n != 84 {
		t.Fatalf("85 less 1 = %d, want 84", n)
	}
	if err := c.Reset(ctx, "k", w); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.Get(ctx, "k", w); n != 0 {
		t.Fatalf("after Reset = %d, want 0", n)
	}
	if n, _ := c.Get(ctx, "k", w.Add(time.Minute)); n != 1 {
		t.Fatalf("Reset reached the next window: %d, want 1", n)
	}
	testRateCounterPrune(t, db)
}

// testRateCounterPrune: finished windows are pruned, but a day's window
// ("day:" keys, the daily byte budgets) outlives the hour an hour's
// window is kept.
func testRateCounterPrune(t *testing.T, db *store.DB) {
	ctx := context.Background()
	wall := time.Now().Truncate(time.Millisecond) // prune reads the wall clock
	seed := store.NewRateCounter(db)
	seed.Incr(ctx, "warm", wall, 1, time.Minute) // spends this instance's prune
	rows := map[string]time.Time{"day:bytes:1": wall.Add(-25 * time.Hour), "day:bytes:2": wall.Add(-50 * time.Hour), "hour:1": wall.Add(-3 * time.Hour)}
	for k, start := range rows {
		if _, err := seed.Incr(ctx, k, start, 5, time.Nanosecond); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := store.NewRateCounter(db).Incr(ctx, "minute:1", wall, 1, time.Minute); err != nil { // prunes
		t.Fatal(err)
	}
	for k, want := range map[string]int64{"day:bytes:1": 5, "day:bytes:2": 0, "hour:1": 0} {
		if n, err := seed.Get(ctx, k, rows[k]); err != nil || n != want {
			t.Errorf("after a prune %s = %d, %v; want %d", k, n, err, want)
		}
	}
}

// testInTxPanic: a panic inside a transaction, once recovered, leaves no
// transaction open (on SQLite it would hold the only writer) and nothing
// of its writes.
func testInTxPanic(t *testing.T, db *store.DB) {
	ctx := context.Background()
	func() {
		defer func() { recover() }()
		db.InTx(ctx, func(q store.Querier) error {
			if _, err := q.ExecContext(ctx, `INSERT INTO accounts (login, created_at) VALUES ('ghost', 1)`); err != nil {
				t.Error(err)
			}
			panic("boom")
		})
	}()
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := db.InTx(wctx, func(q store.Querier) error {
		_, err := q.ExecContext(wctx, `INSERT INTO accounts (login, created_at) VALUES ('alive', 1)`)
		return err
	}); err != nil {
		t.Fatalf("a write after a recovered panic: %v", err)
	}
	var n int
	db.Reader().QueryRowContext(ctx, `SELECT COUNT(*) FROM accounts WHERE login = 'ghost'`).Scan(&n)
	if n != 0 {
		t.Errorf("the panicked transaction's row was kept")
	}
}

// twoAccounts creates alice and bob, whose rows must never mix.
func twoAccounts(t *testing.T, accounts store.Accounts) (alice, bob account.Account) {
	t.Helper()
	ctx := context.Background()
	var err error
	if alice, err = accounts.CreateAccount(ctx, "alice", now); err != nil {
		t.Fatal(err)
	}
	if bob, err = accounts.CreateAccount(ctx, "bob", now); err != nil {
		t.Fatal(err)
	}
	return alice, bob
}
