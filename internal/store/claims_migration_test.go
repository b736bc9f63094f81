package store

import (
	"context"
	"testing"
)

// TestClaimsMigrationKeepsChildRows: 00010 rebuilds the SQLite domains
// table, and every table referencing it cascades on delete; an upgrade
// must keep a domain's log, suppressions, sends and webhooks.
func TestClaimsMigrationKeepsChildRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openTempSQLite(t)
	p, err := db.migrations()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 9); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO accounts (id, login, created_at) VALUES (1, 'alice', 1)`,
		`INSERT INTO domains (id, account_id, name, created_at, verified_at, dkim_selector, dkim_key, dkim_public, delivery_mode)
			VALUES (7, 1, 'shop.example', 1, 2, 's', 'k', 'p', 'direct')`,
		`INSERT INTO domains (id, account_id, name, created_at, dkim_selector, dkim_key, dkim_public, delivery_mode)
			VALUES (8, 1, 'new.example', 1, 's', 'k', 'p', 'direct')`,
		`INSERT INTO suppressions (domain_id, type, recipient_type, recipient, created_at) VALUES (7, 'bounce', 'email', 'x@y.example', 1)`,
		`INSERT INTO webhooks (domain_id, url, secret, next_attempt_at, created_at) VALUES (7, 'https://h.example/', 's', 1, 1)`,
	} {
		if _, err := db.w.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	var supp, hooks, fk int
	db.r.QueryRowContext(ctx, `SELECT count(*) FROM suppressions WHERE domain_id = 7`).Scan(&supp)
	db.r.QueryRowContext(ctx, `SELECT count(*) FROM webhooks WHERE domain_id = 7`).Scan(&hooks)
	db.w.QueryRowContext(ctx, `PRAGMA foreign_keys`).Scan(&fk)
	if supp != 1 || hooks != 1 {
		t.Fatalf("after the upgrade: %d suppressions, %d webhooks of the domain; want 1 and 1", supp, hooks)
	}
	if fk != 1 {
		t.Fatal("foreign keys left off after the migration")
	}
	var expires *int64
	db.r.QueryRowContext(ctx, `SELECT claim_expires_at FROM domains WHERE id = 8`).Scan(&expires)
	if expires == nil || *expires < 1_000_000_000_000 {
		t.Fatalf("an unverified domain at the upgrade got claim_expires_at %v, want 72 h from the upgrade", expires)
	}
	if _, err := db.w.ExecContext(ctx, `INSERT INTO domains (account_id, name, created_at, verified_at, dkim_selector, dkim_key, dkim_public, delivery_mode)
		VALUES (1, 'shop.example', 1, 3, 's', 'k', 'p', 'direct')`); !isUnique(err) {
		t.Fatalf("a second verified shop.example: %v, want a unique violation", err)
	}
}
