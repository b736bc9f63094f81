package store

import (
	"context"
	"database/sql"
	"time"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
)

// Accounts implements account.Store.
type Accounts struct{ db *DB }

var _ account.Store = Accounts{}

// NewAccounts returns the account store.
func NewAccounts(db *DB) Accounts { return Accounts{db: db} }

// CreateAccount implements account.Store.
func (s Accounts) CreateAccount(ctx context.Context, login string, now time.Time) (account.Account, error) {
	a := account.Account{Login: login, CreatedAt: fromMS(ms(now))}
	err := s.db.w.QueryRowContext(ctx,
		`INSERT INTO accounts (login, created_at) VALUES ($1, $2) RETURNING id`, login, ms(now)).Scan(&a.ID)
	if isUnique(err) {
		return a, apperr.Errorf(apperr.Conflict, "account exists")
	}
	return a, notFound(err, "account")
}

const accountCols = `id, login, created_at, disabled_at, is_admin, password_hash <> '', egress_pool`

func scanAccount(row interface{ Scan(...any) error }) (account.Account, error) {
	var a account.Account
	var created int64
	var disabled sql.NullInt64
	err := row.Scan(&a.ID, &a.Login, &created, &disabled, &a.Admin, &a.PasswordSet, &a.Pool)
	a.CreatedAt, a.DisabledAt = fromMS(created), nullMS(disabled)
	return a, err
}

// SetAdmin implements account.Store.
func (s Accounts) SetAdmin(ctx context.Context, id int64, admin bool) error {
	return s.exec1(ctx, "account", `UPDATE accounts SET is_admin = $2 WHERE id = $1`, id, b2i(admin))
}

// SetAccountPool implements account.Store.
func (s Accounts) SetAccountPool(ctx context.Context, id int64, pool string) error {
	return s.exec1(ctx, "account", `UPDATE accounts SET egress_pool = $2 WHERE id = $1`, id, pool)
}

// SetPasswordHash implements account.Store.
func (s Accounts) SetPasswordHash(ctx context.Context, id int64, hash string) error {
	return s.exec1(ctx, "account", `UPDATE accounts SET password_hash = $2 WHERE id = $1`, id, hash)
}

// PasswordHash implements account.Store.
func (s Accounts) PasswordHash(ctx context.Context, login string) (account.Account, string, error) {
	var hash string
	var created int64
	var disabled sql.NullInt64
	var a account.Account
	err := s.db.rd.QueryRowContext(ctx, `SELECT `+accountCols+`, password_hash
		FROM accounts WHERE login = $1`, login).Scan(&a.ID, &a.Login, &created, &disabled, &a.Admin, &a.PasswordSet, &a.Pool, &hash)
	a.CreatedAt, a.DisabledAt = fromMS(created), nullMS(disabled)
	return a, hash, notFound(err, "account")
}

// AccountByLogin implements account.Store.
func (s Accounts) AccountByLogin(ctx context.Context, login string) (account.Account, error) {
	a, err := scanAccount(s.db.rd.QueryRowContext(ctx, `SELECT `+accountCols+` FROM accounts WHERE login = $1`, login))
	return a, notFound(err, "account")
}

// ListAccounts implements account.Store.
func (s Accounts) ListAccounts(ctx context.Context) ([]account.Account, error) {
	rows, err := s.db.rd.QueryContext(ctx, `SELECT `+accountCols+` FROM accounts ORDER BY login`)
	if err != nil {
		return nil, notFound(err, "accounts")
	}
	defer rows.Close()
	var out []account.Account
	for rows.Next() {
		a, err := scanAccount(rows)
		if err != nil {
			return nil, notFound(err, "accounts")
		}
		out = append(out, a)
	}
	return out, notFound(rows.Err(), "accounts")
}

// DisableAccount implements account.Store.
// The last enabled operator is left enabled (account.ErrLastOperator),
// in the same statement that disables. (On PostgreSQL two operators
// disabling each other at the same instant could both pass; the CLI
// enables an account again.)
func (s Accounts) DisableAccount(ctx context.Context, id int64, now time.Time) error {
	res, err := s.db.w.ExecContext(ctx, `UPDATE accounts SET disabled_at = COALESCE(disabled_at, $2) WHERE id = $1
		AND (is_admin = 0 OR disabled_at IS NOT NULL
			OR EXISTS (SELECT 1 FROM accounts o WHERE o.is_admin = 1 AND o.disabled_at IS NULL AND o.id <> $1))`, id, ms(now))
	if err != nil {
		return notFound(err, "account")
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return nil
	}
	var one int
	if err := s.db.w.QueryRowContext(ctx, `SELECT 1 FROM accounts WHERE id = $1`, id).Scan(&one); err != nil {
		return notFound(err, "account")
	}
	return account.ErrLastOperator
}

// EnableAccount implements account.Store.
func (s Accounts) EnableAccount(ctx context.Context, id int64) error {
	return s.exec1(ctx, "account", `UPDATE accounts SET disabled_at = NULL WHERE id = $1`, id)
}

// CountAccounts implements account.Store.
func (s Accounts) CountAccounts(ctx context.Context) (int, error) {
	var n int
	err := s.db.rd.QueryRowContext(ctx, `SELECT COUNT(*) FROM accounts`).Scan(&n)
	return n, notFound(err, "accounts")
}

// CreateKey implements account.Store.
func (s Accounts) CreateKey(ctx context.Context, k account.Key, hash string) (account.Key, error) {
	err := s.db.w.QueryRowContext(ctx,
		`INSERT INTO api_keys (account_id, name, prefix, hash, created_at, scopes, domains, expires_at, member_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id`,
		k.AccountID, k.Name, k.Prefix, hash, ms(k.CreatedAt), account.JoinList(k.Scopes), account.JoinList(k.Domains), msPtr(k.ExpiresAt),
		sql.NullInt64{Int64: k.MemberID, Valid: k.MemberID != 0}).Scan(&k.ID)
	return k, notFound(err, "key")
}

const keyCols = `k.id, k.account_id, k.name, k.prefix, k.created_at, k.last_used_at, k.revoked_at, k.scopes, k.domains, k.expires_at, k.member_id`

// keyRow scans keyCols.
type keyRow struct {
	k                      account.Key
	created                int64
	used, revoked, expires sql.NullInt64
	scopes, domains        string
	member                 sql.NullInt64
}

func (r *keyRow) dest() []any {
	return []any{&r.k.ID, &r.k.AccountID, &r.k.Name, &r.k.Prefix, &r.created, &r.used, &r.revoked, &r.scopes, &r.domains, &r.expires, &r.member}
}

func (r *keyRow) key() account.Key {
	k := r.k
	k.CreatedAt, k.LastUsedAt, k.RevokedAt, k.ExpiresAt = fromMS(r.created), nullMS(r.used), nullMS(r.revoked), nullMS(r.expires)
	k.Scopes, k.Domains = account.SplitList(r.scopes), account.SplitList(r.domains)
	k.MemberID = r.member.Int64
	return k
}

// ListKeys implements account.Store.
func (s Accounts) ListKeys(ctx context.Context, accountID int64) ([]account.Key, error) {
	rows, err := s.db.rd.QueryContext(ctx, `SELECT `+keyCols+` FROM api_keys k WHERE k.account_id = $1 ORDER BY k.id`, accountID)
	if err != nil {
		return nil, notFound(err, "keys")
	}
	defer rows.Close()
	var out []account.Key
	for rows.Next() {
		var kr keyRow
		if err := rows.Scan(kr.dest()...); err != nil {
			return nil, notFound(err, "keys")
		}
		out = append(out, kr.key())
	}
	return out, notFound(rows.Err(), "keys")
}

// RevokeKey implements account.Store.
func (s Accounts) RevokeKey(ctx context.Context, id int64, now time.Time) error {
	return s.exec1(ctx, "key", `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $2) WHERE id = $1`, id, ms(now))
}

// KeyByHash implements account.Store.
func (s Accounts) KeyByHash(ctx context.Context, hash string) (account.Key, account.Account, error) {
	var aCreated int64
	var disabled sql.NullInt64
	var a account.Account
	var kr keyRow
	err := s.db.rd.QueryRowContext(ctx, `SELECT `+keyCols+`, a.id, a.login, a.created_at, a.disabled_at, a.is_admin
		FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.hash = $1`, hash).
		Scan(append(kr.dest(), &a.ID, &a.Login, &aCreated, &disabled, &a.Admin)...)
	a.CreatedAt, a.DisabledAt = fromMS(aCreated), nullMS(disabled)
	return kr.key(), a, notFound(err, "key")
}

// KeyByID implements account.Store.
func (s Accounts) KeyByID(ctx context.Context, id int64) (account.Key, error) {
	var kr keyRow
	err := s.db.rd.QueryRowContext(ctx, `SELECT `+keyCols+` FROM api_keys k WHERE k.id = $1`, id).Scan(kr.dest()...)
	return kr.key(), notFound(err, "key")
}

// TouchKey implements account.Store.
func (s Accounts) TouchKey(ctx context.Context, id int64, now time.Time) error {
	_, err := s.db.w.ExecContext(ctx, `UPDATE api_keys SET last_used_at = $2 WHERE id = $1`, id, ms(now))
	return notFound(err, "key")
}

// exec1 runs an update that must touch one row.
func (s Accounts) exec1(ctx context.Context, what, q string, args ...any) error {
	return exec1(ctx, s.db.w, what, q, args...)
}

func exec1(ctx context.Context, q Querier, what, query string, args ...any) error {
	res, err := q.ExecContext(ctx, query, args...)
	if err != nil {
		return notFound(err, what)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return apperr.Errorf(apperr.NotFound, "%s not found", what)
	}
	return nil
}
