// Package account holds accounts and their API keys, and turns a login and a
// key into the authenticated Principal.
//
// Keys are "pl_" followed by 43 base64url characters (32 random bytes). Only
// their SHA-256 is stored; the plain key is shown once, at creation. Lookup
// is by hash, so a request costs one indexed read and no bcrypt.
package account

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/postline/postline/internal/apperr"
)

// Account is a tenant: it owns domains and API keys.
type Account struct {
	ID         int64
	Login      string
	CreatedAt  time.Time
	DisabledAt *time.Time
	// Admin accounts operate the installation: every account and the
	// queue across domains (the console's operator page, /api/admin/).
	Admin bool
	// PasswordSet says the account may sign in to the console with a
	// password besides its API keys.
	PasswordSet bool
	// Pool is the egress pool (--egress-file) the account's domains send
	// direct deliveries through when they name none themselves; "" for
	// none.
	Pool string
}

// Key is an API key's record; the plain key is never stored.
type Key struct {
	ID         int64
	AccountID  int64
	Name       string
	Prefix     string // the first characters of the key, to recognise it in lists
	CreatedAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
	// Scopes and Domains limit what the key may do; nil is everything.
	Scopes    []string
	Domains   []string
	ExpiresAt *time.Time
	// MemberID is the team member who made the key (0: the account
	// itself); removing the member revokes it.
	MemberID int64
}

// Principal is who a request acts as.
type Principal struct {
	AccountID int64
	Login     string
	KeyID     int64 // 0 when signed in with a password
	Admin     bool
	// Scopes and Domains are the key's limits (nil: none).
	Scopes  []string
	Domains []string
	// ExpiresAt is when the key expires (nil: never, or a password
	// sign-in); the keys it makes expire no later.
	ExpiresAt *time.Time
	// MemberID is the team member signed in (0: the account itself, with
	// its key or password); Email is theirs.
	MemberID int64
	Email    string
	// KeyMember is the member who made the key signed in with (0: none):
	// the keys it makes are that member's too.
	KeyMember int64
	// Role is what the console lets the principal do; "" is RoleOwner
	// (the account itself and its API keys).
	Role Role
}

// Store is the storage the account service needs. Missing rows are
// apperr.NotFound and duplicates apperr.Conflict.
type Store interface {
	CreateAccount(ctx context.Context, login string, now time.Time) (Account, error)
	AccountByLogin(ctx context.Context, login string) (Account, error)
	ListAccounts(ctx context.Context) ([]Account, error)
	DisableAccount(ctx context.Context, id int64, now time.Time) error
	EnableAccount(ctx context.Context, id int64) error
	CountAccounts(ctx context.Context) (int, error)
	CreateKey(ctx context.Context, k Key, hash string) (Key, error)
	ListKeys(ctx context.Context, accountID int64) ([]Key, error)
	RevokeKey(ctx context.Context, id int64, now time.Time) error
	// KeyByHash returns the key with that hash and its account.
	KeyByHash(ctx context.Context, hash string) (Key, Account, error)
	KeyByID(ctx context.Context, id int64) (Key, error)
	TouchKey(ctx context.Context, id int64, now time.Time) error
	SetAdmin(ctx context.Context, id int64, admin bool) error
	SetPasswordHash(ctx context.Context, id int64, hash string) error
	// PasswordHash returns the account and its password hash ("" when none
	// is set).
	PasswordHash(ctx context.Context, login string) (Account, string, error)
	SetAccountPool(ctx context.Context, id int64, pool string) error
}

// Service is the account capability.
type Service struct {
	store Store
	now   func() time.Time
	keys  keyCache
	gate  passwordGate
	// verify checks a password against its hash (verifyPassword; tests
	// count and hold the checks through it).
	verify func(password, phc string) bool
	// hasPool reports whether the egress file defines a pool (SetPoolCheck);
	// nil: none is defined.
	hasPool func(name string) bool
}

// NewService returns a Service; now may be nil for time.Now.
func NewService(store Store, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: store, now: now, gate: newPasswordGate(DefaultPasswordChecks, PasswordCheckWait), verify: verifyPassword}
}

// touchEvery bounds last_used_at writes to one per key per minute, so that
// authentication stays a read on the hot path.
const touchEvery = time.Minute

// Authenticate checks a login and key. A wrong login, unknown or revoked
// key is apperr.Unauthorized; a valid key of a disabled account is
// apperr.AuthMissing (the document's "user authentication missing").
//
// A key the database knows is then trusted from memory for keyCacheTTL, so
// that authentication is no database work on the hot path; a change made
// through this Service takes effect at once here, and within the TTL in
// other processes.
func (s *Service) Authenticate(ctx context.Context, login, key string) (Principal, error) {
	return s.authenticate(ctx, &login, key)
}

// AuthenticateKey checks a key alone: the key names its account. It is
// Mailgun's scheme (user "api", the key as password), as Authenticate.
func (s *Service) AuthenticateKey(ctx context.Context, key string) (Principal, error) {
	return s.authenticate(ctx, nil, key)
}

// authenticate checks key, and login when given.
func (s *Service) authenticate(ctx context.Context, login *string, key string) (Principal, error) {
	hash := hashKey(key)
	now := s.now()
	k, a, ok := s.keys.get(hash, now)
	if !ok {
		var err error
		k, a, err = s.store.KeyByHash(ctx, hash)
		if apperr.CodeOf(err) == apperr.NotFound {
			return Principal{}, apperr.Errorf(apperr.Unauthorized, "Invalid credentials")
		}
		if err != nil {
			return Principal{}, err
		}
		s.keys.put(hash, k, a, now)
	}
	if (login != nil && subtle.ConstantTimeCompare([]byte(*login), []byte(a.Login)) != 1) || k.RevokedAt != nil {
		return Principal{}, apperr.Errorf(apperr.Unauthorized, "Invalid credentials")
	}
	if a.DisabledAt != nil {
		return Principal{}, apperr.Errorf(apperr.AuthMissing, "User authentication missing")
	}
	if k.ExpiresAt != nil && !now.Before(*k.ExpiresAt) {
		return Principal{}, apperr.Errorf(apperr.Unauthorized, "Invalid credentials: this API key expired at %s", k.ExpiresAt.UTC().Format(time.RFC3339))
	}
	if k.LastUsedAt == nil || now.Sub(*k.LastUsedAt) >= touchEvery {
		if err := s.store.TouchKey(ctx, k.ID, now); err != nil {
			return Principal{}, err
		}
		s.keys.touched(hash, now)
	}
	return Principal{AccountID: a.ID, Login: a.Login, KeyID: k.ID, Admin: a.Admin, Scopes: k.Scopes, Domains: k.Domains, ExpiresAt: k.ExpiresAt,
		KeyMember: k.MemberID}, nil
}

// SetAdmin marks an account as an operator, or not.
func (s *Service) SetAdmin(ctx context.Context, login string, admin bool) error {
	a, err := s.User(ctx, login)
	if err != nil {
		return err
	}
	defer s.keys.clear()
	return s.store.SetAdmin(ctx, a.ID, admin)
}

// CreateUser creates an account.
func (s *Service) CreateUser(ctx context.Context, login string) (Account, error) {
	if err := CheckLogin(login); err != nil {
		return Account{}, err
	}
	a, err := s.store.CreateAccount(ctx, login, s.now())
	if apperr.CodeOf(err) == apperr.Conflict {
		return Account{}, apperr.Errorf(apperr.Conflict, "account %q already exists", login)
	}
	return a, err
}

// User returns an account by login.
func (s *Service) User(ctx context.Context, login string) (Account, error) {
	a, err := s.store.AccountByLogin(ctx, login)
	if apperr.CodeOf(err) == apperr.NotFound {
		return Account{}, apperr.Errorf(apperr.NotFound, "account %q not found", login)
	}
	return a, err
}

// Users lists all accounts.
func (s *Service) Users(ctx context.Context) ([]Account, error) { return s.store.ListAccounts(ctx) }

// ErrLastOperator is the store's refusal to disable the last enabled
// operator account.
var ErrLastOperator = errors.New("the last enabled operator account")

// DisableUser disables an account: its keys stop working. The last
// enabled operator account is refused (Conflict): nobody would be left to
// use the operator pages, until the CLI enables it again.
func (s *Service) DisableUser(ctx context.Context, login string) error {
	a, err := s.User(ctx, login)
	if err != nil {
		return err
	}
	defer s.keys.clear()
	err = s.store.DisableAccount(ctx, a.ID, s.now())
	if errors.Is(err, ErrLastOperator) {
		return apperr.Wrap(apperr.Conflict, err, fmt.Sprintf("%s is the last enabled operator account: disabling it would leave "+
			"nobody to run the operator pages. Make another account an operator first (postline user create --admin).", login))
	}
	return err
}

// EnableUser enables a disabled account again: its keys that were not
// revoked work again. Enabling an active account is not an error.
func (s *Service) EnableUser(ctx context.Context, login string) error {
	a, err := s.User(ctx, login)
	if err != nil {
		return err
	}
	defer s.keys.clear()
	return s.store.EnableAccount(ctx, a.ID)
}

// CreateKey makes a new key with every scope for login and returns the
// plain key, which is not recoverable afterwards.
func (s *Service) CreateKey(ctx context.Context, login, name string) (string, Key, error) {
	return s.CreateKeyWith(ctx, login, KeyOptions{Name: name})
}

// CreateKeyWith makes a key limited as o says (scopes and domains already
// checked with CheckScopes and CheckDomains).
func (s *Service) CreateKeyWith(ctx context.Context, login string, o KeyOptions) (string, Key, error) {
	if len(o.Name) > 100 {
		return "", Key{}, apperr.Field("name", "name must be at most 100 characters")
	}
	now := s.now()
	if o.ExpiresAt != nil {
		if !o.ExpiresAt.After(now) {
			return "", Key{}, apperr.Field("expires_at", "expires_at must be in the future")
		}
		if o.ExpiresAt.Sub(now) > MaxKeyLifetime {
			return "", Key{}, apperr.Field("expires_at", "expires_at must be at most 5 years ahead (leave it out for a key that does not expire)")
		}
	}
	a, err := s.User(ctx, login)
	if err != nil {
		return "", Key{}, err
	}
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return "", Key{}, err
	}
	plain := "pl_" + base64.RawURLEncoding.EncodeToString(buf)
	k := Key{AccountID: a.ID, Name: o.Name, Prefix: plain[:10], CreatedAt: now, Scopes: o.Scopes, Domains: o.Domains, ExpiresAt: o.ExpiresAt,
		MemberID: o.MemberID}
	k, err = s.store.CreateKey(ctx, k, hashKey(plain))
	return plain, k, err
}

// Keys lists login's keys, revoked ones included.
func (s *Service) Keys(ctx context.Context, login string) ([]Key, error) {
	a, err := s.User(ctx, login)
	if err != nil {
		return nil, err
	}
	return s.store.ListKeys(ctx, a.ID)
}

// RevokeKey revokes a key by id; revoking twice is not an error.
func (s *Service) RevokeKey(ctx context.Context, id int64) error {
	defer s.keys.clear()
	err := s.store.RevokeKey(ctx, id, s.now())
	if apperr.CodeOf(err) == apperr.NotFound {
		return apperr.Errorf(apperr.NotFound, "key %d not found", id)
	}
	return err
}

// KeyByID returns a key's record (the audit log names API actions by
// their key's name).
func (s *Service) KeyByID(ctx context.Context, id int64) (Key, error) {
	return s.store.KeyByID(ctx, id)
}

// RevokeOwnKey revokes key id of p's account; another account's key is
// NotFound, as a missing one. A limited key may revoke only keys at most
// as broad as itself (Principal.MayRevoke): otherwise apperr.Forbidden.
func (s *Service) RevokeOwnKey(ctx context.Context, p Principal, id int64) error {
	k, err := s.store.KeyByID(ctx, id)
	if apperr.CodeOf(err) == apperr.NotFound || (err == nil && k.AccountID != p.AccountID) {
		return apperr.Errorf(apperr.NotFound, "API key not found")
	}
	if err != nil {
		return err
	}
	if !p.MayRevoke(k) {
		return apperr.Errorf(apperr.Forbidden, "This API key can only revoke keys with no more scopes, domains and lifetime than its own")
	}
	return s.RevokeKey(ctx, id)
}

// BootstrapLogin is the account created on first start.
const BootstrapLogin = "admin"

// Bootstrap creates the admin account with one key when there are no
// accounts at all, and returns the key; created is false otherwise (also
// when another process bootstrapped first).
func (s *Service) Bootstrap(ctx context.Context) (key string, created bool, err error) {
	n, err := s.store.CountAccounts(ctx)
	if err != nil || n > 0 {
		return "", false, err
	}
	a, err := s.CreateUser(ctx, BootstrapLogin)
	if err != nil {
		if apperr.CodeOf(err) == apperr.Conflict {
			return "", false, nil
		}
		return "", false, err
	}
	if err := s.store.SetAdmin(ctx, a.ID, true); err != nil {
		return "", false, err
	}
	key, _, err = s.CreateKey(ctx, BootstrapLogin, "bootstrap")
	return key, err == nil, err
}

func hashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// CheckLogin keeps logins safe for Basic auth (no colon) and for URLs.
func CheckLogin(login string) error {
	if len(login) < 1 || len(login) > 64 {
		return apperr.Field("login", "login must be 1 to 64 characters")
	}
	for _, c := range login {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return apperr.Field("login", "login may contain only a-z, 0-9, '.', '_' and '-'")
		}
	}
	return nil
}
