package store

import (
	"context"
	"database/sql"
	"time"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apperr"
)

// Team implements account.MemberStore: the account_members table.
type Team struct{ db *DB }

var _ account.MemberStore = Team{}

// NewTeam returns the accounts' members.
func NewTeam(db *DB) Team { return Team{db: db} }

const memberCols = `id, account_id, email, role, password_hash <> '', invite_expires_at, invite_used_at, created_at, last_sign_in_at`

func scanMember(row interface{ Scan(...any) error }) (account.Member, error) {
	var m account.Member
	var expires, used, seen sql.NullInt64
	var created int64
	var role string
	err := row.Scan(&m.ID, &m.AccountID, &m.Email, &role, &m.PasswordSet, &expires, &used, &created, &seen)
	m.Role, m.CreatedAt = account.Role(role), fromMS(created)
	m.InviteExpiresAt, m.InviteUsedAt, m.LastSignInAt = nullMS(expires), nullMS(used), nullMS(seen)
	return m, err
}

// checkBounds counts an account's members and pending invitations in q's
// transaction; renewing is the member whose link is being replaced (0: a
// member is being added), which does not count against itself. On PostgreSQL the account's row is locked, so two invitations
// at once count each other; SQLite has one writer.
func (s Team) checkBounds(ctx context.Context, q Querier, accountID int64, b account.MemberBounds, renewing int64) error {
	if s.db.Dialect == Postgres {
		if _, err := q.ExecContext(ctx, `SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE`, accountID); err != nil {
			return err
		}
	}
	var all, pending int
	if err := q.QueryRowContext(ctx, `SELECT COUNT(*), COUNT(*) FILTER (WHERE password_hash = '' AND invite_used_at IS NULL
		AND invite_expires_at > $2 AND id <> $3) FROM account_members WHERE account_id = $1`, accountID, ms(b.Now), renewing).Scan(&all, &pending); err != nil {
		return err
	}
	if renewing == 0 && all >= b.MaxMembers {
		return account.ErrTooManyMembers
	}
	if pending >= b.MaxPending {
		return account.ErrTooManyInvites
	}
	return nil
}

// CreateMember implements account.MemberStore.
func (s Team) CreateMember(ctx context.Context, m account.Member, inviteHash string, b account.MemberBounds) (account.Member, error) {
	err := s.db.InTx(ctx, func(q Querier) error {
		if err := s.checkBounds(ctx, q, m.AccountID, b, 0); err != nil {
			return err
		}
		return q.QueryRowContext(ctx, `INSERT INTO account_members (account_id, email, role, invite_hash, invite_expires_at, created_at, invited_by)
			VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`, m.AccountID, m.Email, string(m.Role), inviteHash,
			msPtr(m.InviteExpiresAt), ms(m.CreatedAt), sql.NullInt64{Int64: m.InvitedBy, Valid: m.InvitedBy != 0}).Scan(&m.ID)
	})
	if isUnique(err) {
		return m, apperr.Errorf(apperr.Conflict, "member %s already exists", m.Email)
	}
	return m, notFound(err, "member")
}

// ReinviteMember implements account.MemberStore.
func (s Team) ReinviteMember(ctx context.Context, m account.Member, inviteHash string, b account.MemberBounds) error {
	return s.db.InTx(ctx, func(q Querier) error {
		if err := s.checkBounds(ctx, q, m.AccountID, b, m.ID); err != nil {
			return err
		}
		return exec1(ctx, q, "member", `UPDATE account_members SET role = $3, invite_hash = $4, invite_expires_at = $5,
			invite_used_at = NULL, invited_by = $6 WHERE account_id = $1 AND id = $2 AND password_hash = ''`,
			m.AccountID, m.ID, string(m.Role), inviteHash, msPtr(m.InviteExpiresAt), sql.NullInt64{Int64: m.InvitedBy, Valid: m.InvitedBy != 0})
	})
}

// ListMembers implements account.MemberStore.
func (s Team) ListMembers(ctx context.Context, accountID int64) ([]account.Member, error) {
	rows, err := s.db.rd.QueryContext(ctx, `SELECT `+memberCols+` FROM account_members WHERE account_id = $1 ORDER BY email`, accountID)
	if err != nil {
		return nil, notFound(err, "members")
	}
	defer rows.Close()
	var out []account.Member
	for rows.Next() {
		m, err := scanMember(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// MemberByID implements account.MemberStore.
func (s Team) MemberByID(ctx context.Context, accountID, id int64) (account.Member, error) {
	m, err := scanMember(s.db.rd.QueryRowContext(ctx, `SELECT `+memberCols+` FROM account_members WHERE account_id = $1 AND id = $2`, accountID, id))
	return m, notFound(err, "member")
}

// MemberByEmail implements account.MemberStore.
func (s Team) MemberByEmail(ctx context.Context, email string) (account.Member, error) {
	m, err := scanMember(s.db.rd.QueryRowContext(ctx, `SELECT `+memberCols+` FROM account_members WHERE email = $1`, email))
	return m, notFound(err, "member")
}

// MemberByInvite implements account.MemberStore.
func (s Team) MemberByInvite(ctx context.Context, inviteHash string) (account.Member, error) {
	m, err := scanMember(s.db.w.QueryRowContext(ctx, `SELECT `+memberCols+` FROM account_members WHERE invite_hash = $1`, inviteHash))
	return m, notFound(err, "member")
}

// SetMemberRole implements account.MemberStore.
func (s Team) SetMemberRole(ctx context.Context, accountID, id int64, role account.Role) error {
	return exec1(ctx, s.db.w, "member", `UPDATE account_members SET role = $3 WHERE account_id = $1 AND id = $2`, accountID, id, string(role))
}

// DeleteMember implements account.MemberStore. The member's sessions go
// with it (ON DELETE CASCADE; deleted here too, for SQLite connections
// without foreign keys), the keys it made are revoked at now, and the
// unused invitation links it sent expire at now.
func (s Team) DeleteMember(ctx context.Context, accountID, id int64, now time.Time) error {
	return s.db.InTx(ctx, func(q Querier) error {
		// The members it invited forget it; the links still unused expire.
		if _, err := q.ExecContext(ctx, `UPDATE account_members SET invited_by = NULL,
			invite_expires_at = CASE WHEN password_hash = '' AND invite_used_at IS NULL AND invite_expires_at > $3
				THEN $3 ELSE invite_expires_at END
			WHERE account_id = $1 AND invited_by = $2`, accountID, id, ms(now)); err != nil {
			return err
		}
		if _, err := q.ExecContext(ctx, `UPDATE api_keys SET revoked_at = $3
			WHERE account_id = $1 AND member_id = $2 AND revoked_at IS NULL`, accountID, id, ms(now)); err != nil {
			return err
		}
		if err := exec1(ctx, q, "member", `DELETE FROM account_members WHERE account_id = $1 AND id = $2`, accountID, id); err != nil {
			return err
		}
		_, err := q.ExecContext(ctx, `DELETE FROM sessions WHERE member_id = $1`, id)
		return err
	})
}

// AcceptInvite implements account.MemberStore.
func (s Team) AcceptInvite(ctx context.Context, id int64, inviteHash, passwordHash string, now time.Time) error {
	return exec1(ctx, s.db.w, "invitation", `UPDATE account_members SET password_hash = $3, invite_used_at = $4
		WHERE id = $1 AND invite_hash = $2 AND invite_used_at IS NULL AND invite_expires_at > $4`, id, inviteHash, passwordHash, ms(now))
}

// MemberPassword implements account.MemberStore.
func (s Team) MemberPassword(ctx context.Context, email string) (account.Member, account.Account, string, error) {
	var hash string
	var a account.Account
	var created int64
	var disabled sql.NullInt64
	row := s.db.rd.QueryRowContext(ctx, `SELECT m.id, m.account_id, m.email, m.role, m.password_hash <> '', m.invite_expires_at,
		m.invite_used_at, m.created_at, m.last_sign_in_at, m.password_hash, a.login, a.is_admin, a.disabled_at, a.created_at
		FROM account_members m JOIN accounts a ON a.id = m.account_id WHERE m.email = $1`, email)
	var m account.Member
	var expires, used, seen sql.NullInt64
	var mcreated int64
	var role string
	err := row.Scan(&m.ID, &m.AccountID, &m.Email, &role, &m.PasswordSet, &expires, &used, &mcreated, &seen, &hash,
		&a.Login, &a.Admin, &disabled, &created)
	m.Role, m.CreatedAt = account.Role(role), fromMS(mcreated)
	m.InviteExpiresAt, m.InviteUsedAt, m.LastSignInAt = nullMS(expires), nullMS(used), nullMS(seen)
	a.ID, a.CreatedAt, a.DisabledAt = m.AccountID, fromMS(created), nullMS(disabled)
	return m, a, hash, notFound(err, "member")
}

// TouchMemberSignIn implements account.MemberStore.
func (s Team) TouchMemberSignIn(ctx context.Context, id int64, now time.Time) error {
	return exec1(ctx, s.db.w, "member", `UPDATE account_members SET last_sign_in_at = $2 WHERE id = $1`, id, ms(now))
}
