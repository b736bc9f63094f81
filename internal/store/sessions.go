package store

import (
	"context"
	"database/sql"
	"time"

	"github.com/postline/postline/internal/account"
)

// Sessions implements account.SessionStore.
type Sessions struct{ db *DB }

var _ account.SessionStore = Sessions{}

// NewSessions returns the session store.
func NewSessions(db *DB) Sessions { return Sessions{db: db} }

// CreateSession implements account.SessionStore.
func (s Sessions) CreateSession(ctx context.Context, idHash string, ses account.Session) error {
	var key, member any
	if ses.KeyID > 0 {
		key = ses.KeyID
	}
	if ses.MemberID > 0 {
		member = ses.MemberID
	}
	_, err := s.db.w.ExecContext(ctx, `INSERT INTO sessions (id_hash, account_id, key_id, member_id, csrf, created_at, last_seen_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, idHash, ses.AccountID, key, member, ses.CSRF, ms(ses.CreatedAt), ms(ses.LastSeen))
	return notFound(err, "session")
}

// SessionByHash implements account.SessionStore.
func (s Sessions) SessionByHash(ctx context.Context, idHash string) (account.SessionRecord, error) {
	var r account.SessionRecord
	var key, member, keyMember sql.NullInt64
	var created, seen int64
	var disabled, revoked, expires sql.NullInt64
	var email, role sql.NullString
	// A member's role and address are read here at every request, so a
	// change of role holds from the next one; removing the member deleted
	// the session.
	err := s.db.rd.QueryRowContext(ctx, `SELECT s.account_id, s.key_id, s.member_id, s.csrf, s.created_at, s.last_seen_at,
		a.login, a.is_admin, a.disabled_at, k.revoked_at, k.expires_at, k.member_id, m.email, m.role
		FROM sessions s JOIN accounts a ON a.id = s.account_id LEFT JOIN api_keys k ON k.id = s.key_id
		LEFT JOIN account_members m ON m.id = s.member_id
		WHERE s.id_hash = $1`, idHash).Scan(&r.AccountID, &key, &member, &r.CSRF, &created, &seen,
		&r.Login, &r.Admin, &disabled, &revoked, &expires, &keyMember, &email, &role)
	if err != nil {
		return r, notFound(err, "session")
	}
	r.KeyID, r.MemberID, r.Email, r.Role = key.Int64, member.Int64, email.String, account.Role(role.String)
	r.KeyMember = keyMember.Int64 // keys made in a session of a member's key are the member's too
	if r.MemberID == 0 {
		r.Role = account.RoleOwner
	}
	r.Admin = r.Admin && r.Role == account.RoleOwner
	r.CreatedAt, r.LastSeen = fromMS(created), fromMS(seen)
	r.Disabled, r.KeyRevoked = disabled.Valid, revoked.Valid
	if expires.Valid {
		t := fromMS(expires.Int64)
		r.ExpiresAt = &t
	}
	return r, nil
}

// TouchSession implements account.SessionStore.
func (s Sessions) TouchSession(ctx context.Context, idHash string, now time.Time) error {
	return exec1(ctx, s.db.w, "session", `UPDATE sessions SET last_seen_at = $2 WHERE id_hash = $1`, idHash, ms(now))
}

// DeleteSession implements account.SessionStore.
func (s Sessions) DeleteSession(ctx context.Context, idHash string) error {
	return exec1(ctx, s.db.w, "session", `DELETE FROM sessions WHERE id_hash = $1`, idHash)
}

// DeleteIdleSessions implements account.SessionStore.
func (s Sessions) DeleteIdleSessions(ctx context.Context, before time.Time) (int64, error) {
	res, err := s.db.w.ExecContext(ctx, `DELETE FROM sessions WHERE last_seen_at < $1`, ms(before))
	if err != nil {
		return 0, notFound(err, "sessions")
	}
	return res.RowsAffected()
}
