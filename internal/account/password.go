package account

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"

	"github.com/postline/postline/internal/apperr"
)

// Password rules and the argon2id cost (OWASP's minimum: 19 MiB, two
// passes, one lane; about 40 ms on one core here, which the sign-in rate
// limit makes affordable and guessing slow).
const (
	MinPasswordLen = 12
	MaxPasswordLen = 256
	argonMemoryKiB = 19 * 1024
	argonTime      = 2
	argonThreads   = 1
	argonKeyLen    = 32
)

// dummyHash is compared against when the login has no password or does
// not exist, so that the answer takes as long either way.
// It is made on first use: hashing costs tens of milliseconds, which
// commands that never check a password should not pay at start.
var dummyHash = sync.OnceValue(func() string { return hashPassword("postline-no-password-here", make([]byte, 16)) })

// SetPassword sets login's console password (or, when password is empty,
// removes it: the account then signs in with an API key only).
func (s *Service) SetPassword(ctx context.Context, login, password string) error {
	a, err := s.User(ctx, login)
	if err != nil {
		return err
	}
	if password == "" {
		return s.store.SetPasswordHash(ctx, a.ID, "")
	}
	if err := checkPassword(password); err != nil {
		return err
	}
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return err
	}
	leave, err := s.gate.enter(ctx)
	if err != nil {
		return err
	}
	hash := hashPassword(password, salt)
	leave()
	return s.store.SetPasswordHash(ctx, a.ID, hash)
}

// PasswordRule states what a console password must be: forms show it
// and errors quote it, so that what is asked is what is checked.
func PasswordRule() string {
	return fmt.Sprintf("at least %d characters, at most %d bytes", MinPasswordLen, MaxPasswordLen)
}

func checkPassword(p string) error {
	switch n := utf8.RuneCountInString(p); {
	case !utf8.ValidString(p) || strings.ContainsRune(p, 0):
		return apperr.Field("password", "password must be valid UTF-8 without NUL characters")
	case n < MinPasswordLen || len(p) > MaxPasswordLen:
		return apperr.Field("password", "password must be "+PasswordRule())
	}
	return nil
}

// CheckPassword signs login in with a password. Every failure (no such
// login, no password set, a wrong one) is the same apperr.Unauthorized; a
// disabled account is apperr.AuthMissing. When the password checks
// running at once are at their bound for longer than PasswordCheckWait it
// is apperr.RateLimited, and nothing was checked.
func (s *Service) CheckPassword(ctx context.Context, login, password string) (Principal, error) {
	a, hash, err := s.store.PasswordHash(ctx, login)
	if err != nil && apperr.CodeOf(err) != apperr.NotFound {
		return Principal{}, err
	}
	leave, gerr := s.gate.enter(ctx)
	if gerr != nil {
		return Principal{}, gerr
	}
	ok := s.verify(password, hash)
	leave()
	if !ok || err != nil || hash == "" {
		return Principal{}, apperr.Errorf(apperr.Unauthorized, "Invalid credentials")
	}
	if a.DisabledAt != nil {
		return Principal{}, apperr.Errorf(apperr.AuthMissing, "User authentication missing")
	}
	return Principal{AccountID: a.ID, Login: a.Login, Admin: a.Admin}, nil
}

// hashPassword returns the PHC string of password under salt.
func hashPassword(password string, salt []byte) string {
	key := argon2.IDKey([]byte(password), salt, argonTime, argonMemoryKiB, argonThreads, argonKeyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemoryKiB, argonTime, argonThreads,
		base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(key))
}

// verifyPassword checks password against a PHC string, with the cost the
// string records (so hashes survive a change of the defaults). An empty or
// malformed hash is checked against a dummy and fails.
func verifyPassword(password, phc string) bool {
	var m, t uint32
	var p uint8
	parts := strings.Split(phc, "$")
	good := len(parts) == 6 && parts[1] == "argon2id"
	if good {
		_, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &m, &t, &p)
		good = err == nil && m >= 8*1024 && m <= 1<<20 && t >= 1 && t <= 10 && p >= 1 && p <= 16
	}
	var salt, want []byte
	if good {
		var err1, err2 error
		salt, err1 = base64.RawStdEncoding.DecodeString(parts[4])
		want, err2 = base64.RawStdEncoding.DecodeString(parts[5])
		good = err1 == nil && err2 == nil && len(want) >= 16
	}
	if !good {
		verifyPassword(password, dummyHash()) // the same work as a real check
		return false
	}
	got := argon2.IDKey([]byte(password), salt, t, m, p, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1
}
