package account

import (
	"context"
	"errors"
	"time"
)

// Member is a console user of an account besides the account itself. It
// is invited with a one-time link (Team.Invite) where it sets its
// password, then signs in with its email and that password.
type Member struct {
	ID        int64
	AccountID int64
	Email     string // folded to lower case; unique in the installation
	Role      Role
	// PasswordSet is false while the invitation is pending.
	PasswordSet bool
	// InviteExpiresAt is when the last link sent stops working (nil: none
	// was sent); InviteUsedAt when it was used.
	InviteExpiresAt *time.Time
	InviteUsedAt    *time.Time
	CreatedAt       time.Time
	LastSignInAt    *time.Time
	// InvitedBy is the member who sent the current link (0: the account
	// itself): removing it expires the link if still unused.
	InvitedBy int64
}

// Pending reports an invitation not yet taken up at now: no password,
// the link still good.
func (m Member) Pending(now time.Time) bool {
	return !m.PasswordSet && m.InviteExpiresAt != nil && now.Before(*m.InviteExpiresAt)
}

// MemberBounds are the limits a new invitation is checked against, in the
// store's transaction: members per account (pending ones included), and
// pending invitations per account (links not used nor expired at Now).
type MemberBounds struct {
	MaxMembers int
	MaxPending int
	Now        time.Time
}

// The store's refusals past MemberBounds.
var (
	ErrTooManyMembers = errors.New("the account has its most members")
	ErrTooManyInvites = errors.New("the account has its most pending invitations")
)

// MemberStore keeps members. Missing rows (or another account's) are
// apperr.NotFound; an email already taken is apperr.Conflict.
type MemberStore interface {
	// CreateMember stores a pending member with its invitation's hash,
	// unless the account is at a bound (ErrTooManyMembers,
	// ErrTooManyInvites).
	CreateMember(ctx context.Context, m Member, inviteHash string, b MemberBounds) (Member, error)
	// ReinviteMember replaces a member's link (and sets its role), within
	// the pending bound.
	ReinviteMember(ctx context.Context, m Member, inviteHash string, b MemberBounds) error
	ListMembers(ctx context.Context, accountID int64) ([]Member, error)
	MemberByID(ctx context.Context, accountID, id int64) (Member, error)
	MemberByEmail(ctx context.Context, email string) (Member, error)
	MemberByInvite(ctx context.Context, inviteHash string) (Member, error)
	SetMemberRole(ctx context.Context, accountID, id int64, role Role) error
	// DeleteMember removes a member and its sessions, revokes the keys it
	// made and expires the unused invitation links it sent, at now.
	DeleteMember(ctx context.Context, accountID, id int64, now time.Time) error
	// AcceptInvite sets the password of the member whose link inviteHash
	// is, if the link is unused and not expired at now, and marks it used;
	// otherwise apperr.NotFound.
	AcceptInvite(ctx context.Context, id int64, inviteHash, passwordHash string, now time.Time) error
	// MemberPassword returns the member with that email, its account and
	// its password hash ("" while pending).
	MemberPassword(ctx context.Context, email string) (Member, Account, string, error)
	TouchMemberSignIn(ctx context.Context, id int64, now time.Time) error
}
