package account

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/postline/postline/internal/apperr"
)

// TeamConfig bounds an account's team.
type TeamConfig struct {
	// MaxMembers is the most members per account, pending ones included
	// (--members-per-account, default 50).
	MaxMembers int
	// MaxPending is the most invitations per account not yet used nor
	// expired (--member-invites-per-account, default 20).
	MaxPending int
	// InviteTTL is how long an invitation link works (24 hours).
	InviteTTL time.Duration
}

// Team invites members, checks their passwords and changes their roles.
// Password work goes through the account service's gate and argon2id.
type Team struct {
	acc   *Service
	store MemberStore
	cfg   TeamConfig
}

// NewTeam returns the team service over acc's clock and password checks.
func NewTeam(acc *Service, st MemberStore, cfg TeamConfig) *Team {
	cfg.MaxMembers = cmp.Or(cfg.MaxMembers, 50)
	cfg.MaxPending = cmp.Or(cfg.MaxPending, 20)
	cfg.InviteTTL = cmp.Or(cfg.InviteTTL, 24*time.Hour)
	return &Team{acc: acc, store: st, cfg: cfg}
}

// InviteTTL is how long a link works.
func (t *Team) InviteTTL() time.Duration { return t.cfg.InviteTTL }

// maxInviteToken bounds a token read from a link before it is hashed.
const maxInviteToken = 100

// Invite adds email to accountID's team with role, or sends a new link to
// a member of the account whose invitation is still pending (setting its
// role), and returns the link's token: shown once, stored hashed, good
// for InviteTTL and once.
func (t *Team) Invite(ctx context.Context, accountID int64, email string, role Role) (string, Member, error) {
	return t.InviteBy(ctx, accountID, 0, email, role)
}

// InviteBy is Invite by a member (by, 0: the account itself): removing
// that member expires the link if it is still unused.
func (t *Team) InviteBy(ctx context.Context, accountID, by int64, email string, role Role) (string, Member, error) {
	email, err := CheckEmail(email)
	if err != nil {
		return "", Member{}, err
	}
	if _, err := ParseRole(string(role)); err != nil {
		return "", Member{}, err
	}
	token := randomToken()
	now := t.acc.now().UTC().Truncate(time.Millisecond)
	expires := now.Add(t.cfg.InviteTTL)
	b := MemberBounds{MaxMembers: t.cfg.MaxMembers, MaxPending: t.cfg.MaxPending, Now: now}
	old, err := t.store.MemberByEmail(ctx, email)
	switch {
	case err == nil && (old.AccountID != accountID || old.PasswordSet):
		return "", Member{}, errMemberTaken(email)
	case err == nil: // pending, or its link expired: a new link
		old.Role, old.InviteExpiresAt, old.InviteUsedAt, old.InvitedBy = role, &expires, nil, by
		if err := t.store.ReinviteMember(ctx, old, hashToken(token), b); err != nil {
			return "", Member{}, t.boundError(err)
		}
		return token, old, nil
	case apperr.CodeOf(err) != apperr.NotFound:
		return "", Member{}, err
	}
	m := Member{AccountID: accountID, Email: email, Role: role, CreatedAt: now, InviteExpiresAt: &expires, InvitedBy: by}
	m, err = t.store.CreateMember(ctx, m, hashToken(token), b)
	if apperr.CodeOf(err) == apperr.Conflict { // added at the same moment
		return "", Member{}, errMemberTaken(email)
	}
	if err != nil {
		return "", Member{}, t.boundError(err)
	}
	return token, m, nil
}

func errMemberTaken(email string) error {
	return apperr.Field("email", email+" is already a member (of this account or another); remove it first to invite it again")
}

func (t *Team) boundError(err error) error {
	switch {
	case errors.Is(err, ErrTooManyMembers):
		return apperr.Wrap(apperr.Unprocessable, err, fmt.Sprintf("An account has at most %d members (members-per-account): "+
			"remove one before inviting another.", t.cfg.MaxMembers))
	case errors.Is(err, ErrTooManyInvites):
		return apperr.Wrap(apperr.Unprocessable, err, fmt.Sprintf("An account has at most %d pending invitations "+
			"(member-invites-per-account): wait for one to be used or to expire, or remove one.", t.cfg.MaxPending))
	}
	return err
}

// CheckEmail folds a member's address to lower case and checks it is one
// address a sign-in form can carry.
func CheckEmail(email string) (string, error) {
	email = strings.ToLower(strings.TrimSpace(email))
	at := strings.LastIndexByte(email, '@')
	if len(email) > 254 || at < 1 || at == len(email)-1 || strings.ContainsAny(email, " \t\r\n\x00<>,;:\"") {
		return "", apperr.Field("email", "email must be one address (name@example.com), at most 254 characters")
	}
	return email, nil
}

// Why an invitation link no longer works (InviteError.Why).
const (
	InviteUnknown = "unknown" // no such link (mistyped, or replaced by a newer one)
	InviteUsed    = "used"    // its password was set already
	InviteExpired = "expired" // past InviteTTL
)

// InviteError is a link that does not work; it comes wrapped in
// apperr.NotFound.
type InviteError struct{ Why string }

func (e *InviteError) Error() string { return "invitation " + e.Why }

// Invitation returns the member a link's token invites, while the link
// works.
func (t *Team) Invitation(ctx context.Context, token string) (Member, error) {
	bad := func(why string) (Member, error) {
		return Member{}, apperr.Wrap(apperr.NotFound, &InviteError{Why: why}, "this invitation link "+why)
	}
	if token == "" || len(token) > maxInviteToken {
		return bad(InviteUnknown)
	}
	m, err := t.store.MemberByInvite(ctx, hashToken(token))
	switch {
	case apperr.CodeOf(err) == apperr.NotFound:
		return bad(InviteUnknown)
	case err != nil:
		return Member{}, err
	case m.InviteUsedAt != nil:
		return bad(InviteUsed)
	case m.InviteExpiresAt == nil || !t.acc.now().Before(*m.InviteExpiresAt):
		return bad(InviteExpired)
	}
	return m, nil
}

// Join sets the password of the member a link invites, once.
func (t *Team) Join(ctx context.Context, token, password string) (Member, error) {
	m, err := t.Invitation(ctx, token)
	if err != nil {
		return Member{}, err
	}
	if err := checkPassword(password); err != nil {
		return Member{}, err
	}
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return Member{}, err
	}
	leave, err := t.acc.gate.enter(ctx)
	if err != nil {
		return Member{}, err
	}
	hash := hashPassword(password, salt)
	leave()
	if err := t.store.AcceptInvite(ctx, m.ID, hashToken(token), hash, t.acc.now()); apperr.CodeOf(err) == apperr.NotFound {
		return t.Invitation(ctx, token) // used at the same moment: says so
	} else if err != nil {
		return Member{}, err
	}
	m.PasswordSet = true
	return m, nil
}

// CheckPassword signs a member in with its email and password, as
// Service.CheckPassword does for accounts: every failure is the same
// apperr.Unauthorized, a disabled account apperr.AuthMissing.
func (t *Team) CheckPassword(ctx context.Context, email, password string) (Principal, error) {
	email = strings.ToLower(strings.TrimSpace(email))
	m, a, hash, err := t.store.MemberPassword(ctx, email)
	if err != nil && apperr.CodeOf(err) != apperr.NotFound {
		return Principal{}, err
	}
	leave, gerr := t.acc.gate.enter(ctx)
	if gerr != nil {
		return Principal{}, gerr
	}
	ok := t.acc.verify(password, hash)
	leave()
	if !ok || err != nil || hash == "" {
		return Principal{}, apperr.Errorf(apperr.Unauthorized, "Invalid credentials")
	}
	if a.DisabledAt != nil {
		return Principal{}, apperr.Errorf(apperr.AuthMissing, "User authentication missing")
	}
	if err := t.store.TouchMemberSignIn(ctx, m.ID, t.acc.now()); err != nil {
		return Principal{}, err
	}
	return Principal{AccountID: a.ID, Login: a.Login, Admin: a.Admin && m.Role == RoleOwner, MemberID: m.ID, Email: m.Email, Role: m.Role}, nil
}

// Members lists an account's members.
func (t *Team) Members(ctx context.Context, accountID int64) ([]Member, error) {
	return t.store.ListMembers(ctx, accountID)
}

// SetRole changes a member's role; it holds from the member's next
// request. Another account's member is NotFound.
func (t *Team) SetRole(ctx context.Context, accountID, id int64, role Role) (Member, error) {
	if _, err := ParseRole(string(role)); err != nil {
		return Member{}, err
	}
	m, err := t.store.MemberByID(ctx, accountID, id)
	if err != nil {
		return Member{}, err
	}
	m.Role = role
	return m, t.store.SetMemberRole(ctx, accountID, id, role)
}

// Remove deletes a member, ends its sessions (at their next request),
// expires the unused invitation links it sent and revokes the keys it made (at once in this process; within the key
// cache's TTL in others, as any revocation).
func (t *Team) Remove(ctx context.Context, accountID, id int64) (Member, error) {
	m, err := t.store.MemberByID(ctx, accountID, id)
	if err != nil {
		return Member{}, err
	}
	defer t.acc.keys.clear()
	return m, t.store.DeleteMember(ctx, accountID, id, t.acc.now())
}

// RemoveByEmail removes accountID's member with that (folded) email; a
// member of another account is NotFound.
func (t *Team) RemoveByEmail(ctx context.Context, accountID int64, email string) (Member, error) {
	m, err := t.store.MemberByEmail(ctx, strings.ToLower(email))
	if err == nil && m.AccountID != accountID {
		err = apperr.Errorf(apperr.NotFound, "member not found")
	}
	if apperr.CodeOf(err) == apperr.NotFound {
		return Member{}, apperr.Errorf(apperr.NotFound, "%s is not a member of this account", email)
	}
	if err != nil {
		return Member{}, err
	}
	return t.Remove(ctx, accountID, m.ID)
}
