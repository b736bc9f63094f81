package account

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"time"

	"github.com/postline/postline/internal/apperr"
)

// Session is a signed-in console session. Its token (the cookie's value)
// is stored only as a SHA-256 hash, like API keys, so a copy of the
// database signs nobody in.
type Session struct {
	Principal
	CSRF      string // the token every state-changing request must carry
	CreatedAt time.Time
	LastSeen  time.Time
}

// SessionRecord is a session as stored, with what decides whether it is
// still good: the account's and the key's state.
type SessionRecord struct {
	Session
	Disabled   bool // the account is disabled
	KeyRevoked bool // it was started with a key that is now revoked
}

// SessionStore keeps sessions. Missing rows are apperr.NotFound.
type SessionStore interface {
	CreateSession(ctx context.Context, idHash string, s Session) error
	// SessionByHash returns the session with the account's login, admin
	// flag and disabled state and (for key sign-ins) the key's state.
	SessionByHash(ctx context.Context, idHash string) (SessionRecord, error)
	TouchSession(ctx context.Context, idHash string, now time.Time) error
	DeleteSession(ctx context.Context, idHash string) error
	// DeleteIdleSessions removes sessions last seen before t.
	DeleteIdleSessions(ctx context.Context, before time.Time) (int64, error)
}

// Sessions starts, resumes and ends console sessions.
type Sessions struct {
	store SessionStore
	idle  time.Duration
	now   func() time.Time
}

// NewSessions returns the session service: a session unused for idle
// ends. now may be nil for time.Now.
func NewSessions(st SessionStore, idle time.Duration, now func() time.Time) *Sessions {
	if now == nil {
		now = time.Now
	}
	return &Sessions{store: st, idle: idle, now: now}
}

// IdleTimeout is how long an unused session lasts.
func (s *Sessions) IdleTimeout() time.Duration { return s.idle }

// touchSessionEvery bounds last_seen writes: a page view stays a read.
const touchSessionEvery = time.Minute

// Start opens a session for p and returns its token, to be sent to the
// browser once (as a cookie) and never stored.
func (s *Sessions) Start(ctx context.Context, p Principal) (string, Session, error) {
	token, csrf := randomToken(), randomToken()
	now := s.now().UTC().Truncate(time.Millisecond)
	ses := Session{Principal: p, CSRF: csrf, CreatedAt: now, LastSeen: now}
	if err := s.store.CreateSession(ctx, hashToken(token), ses); err != nil {
		return "", Session{}, err
	}
	return token, ses, nil
}

// Resume returns the session of token. It is apperr.Unauthorized when
// there is none, it was idle too long, its account was disabled or the key
// it was started with revoked or expired (those end it at once, on the
// next request).
func (s *Sessions) Resume(ctx context.Context, token string) (Session, error) {
	if token == "" {
		return Session{}, apperr.Errorf(apperr.Unauthorized, "not signed in")
	}
	h := hashToken(token)
	rec, err := s.store.SessionByHash(ctx, h)
	if apperr.CodeOf(err) == apperr.NotFound {
		return Session{}, apperr.Errorf(apperr.Unauthorized, "not signed in")
	}
	if err != nil {
		return Session{}, err
	}
	now := s.now()
	if why := s.ended(rec, now); why != "" {
		s.store.DeleteSession(ctx, h) //nolint:errcheck // it is over either way
		return Session{}, apperr.Wrap(apperr.Unauthorized, &EndedError{Why: why, Idle: s.idle}, "the session has ended; sign in again")
	}
	if now.Sub(rec.LastSeen) >= touchSessionEvery {
		if err := s.store.TouchSession(ctx, h, now); err != nil {
			return Session{}, err
		}
	}
	return rec.Session, nil
}

// Why a session ended (EndedError.Why).
const (
	EndedIdle     = "idle"     // unused for longer than the idle timeout
	EndedDisabled = "disabled" // its account was disabled
	EndedRevoked  = "revoked"  // the key it was started with was revoked
	EndedExpired  = "expired"  // the key it was started with expired
)

// EndedError is why Resume found a session over (the sign-in page says
// it); errors.As finds it in Resume's apperr.Unauthorized.
type EndedError struct {
	Why  string
	Idle time.Duration // the idle timeout, for EndedIdle
}

func (e *EndedError) Error() string { return "session ended: " + e.Why }

// ended says why rec is over at now ("" while it stands). A session
// outlives neither its account nor its key.
func (s *Sessions) ended(rec SessionRecord, now time.Time) string {
	switch {
	case rec.Disabled:
		return EndedDisabled
	case rec.KeyRevoked:
		return EndedRevoked
	case rec.ExpiresAt != nil && !now.Before(*rec.ExpiresAt):
		return EndedExpired
	case now.Sub(rec.LastSeen) > s.idle:
		return EndedIdle
	}
	return ""
}

// End signs a session out; ending one that is gone is not an error.
func (s *Sessions) End(ctx context.Context, token string) error {
	if token == "" {
		return nil
	}
	err := s.store.DeleteSession(ctx, hashToken(token))
	if apperr.CodeOf(err) == apperr.NotFound {
		return nil
	}
	return err
}

// Prune deletes sessions idle for longer than the idle timeout.
func (s *Sessions) Prune(ctx context.Context) (int64, error) {
	return s.store.DeleteIdleSessions(ctx, s.now().Add(-s.idle))
}

func randomToken() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func hashToken(t string) string {
	sum := sha256.Sum256([]byte(t))
	return hex.EncodeToString(sum[:])
}
