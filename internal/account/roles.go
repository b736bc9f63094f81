package account

import (
	"cmp"

	"github.com/postline/postline/internal/apperr"
)

// Role is what a console user may do in an account (issue 32, team
// access). The account itself (its login with a key or its password) is
// always RoleOwner.
type Role string

// The roles, broadest first.
const (
	// RoleOwner does everything, members and the audit log included.
	RoleOwner Role = "owner"
	// RoleDeveloper does everything but manage members and read the
	// audit log: keys, domains and their settings, templates, webhooks,
	// suppressions.
	RoleDeveloper Role = "developer"
	// RoleViewer reads: every page, no change.
	RoleViewer Role = "viewer"
)

// Roles lists the roles in the order forms offer them.
var Roles = []Role{RoleOwner, RoleDeveloper, RoleViewer}

// ParseRole reads a role's name.
func ParseRole(s string) (Role, error) {
	for _, r := range Roles {
		if string(r) == s {
			return r, nil
		}
	}
	return "", apperr.Field("role", "role must be owner, developer or viewer")
}

// RoleOf is p's role: RoleOwner unless it is a member's.
func (p Principal) RoleOf() Role {
	if p.Role == "" {
		return RoleOwner
	}
	return p.Role
}

// MayChange reports whether p may change anything (every role but viewer).
func (p Principal) MayChange() bool { return p.RoleOf() != RoleViewer }

// MayManageTeam reports whether p may manage members and read the audit
// log (owners).
func (p Principal) MayManageTeam() bool { return p.RoleOf() == RoleOwner }

// ActingMember is the team member p acts for: the member signed in, or
// the one who made the key p signed in with; 0 for the account itself.
// What p makes (keys, invitation links) is that member's, and goes with
// its removal.
func (p Principal) ActingMember() int64 { return cmp.Or(p.MemberID, p.KeyMember) }

// IsAccount reports whether p is the account itself (no ActingMember).
// Only it sets the account's console password, which a removed member
// would otherwise keep.
func (p Principal) IsAccount() bool { return p.ActingMember() == 0 }

// Actor names p in the audit log: a member's email, else the account's
// login (keyName, when given, names the API key a request used).
func (p Principal) Actor(keyName string) string {
	switch {
	case p.Email != "":
		return p.Email
	case keyName != "":
		return "api key " + keyName
	}
	return p.Login
}
