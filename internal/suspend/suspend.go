package suspend

import (
	"context"
	"time"
)

// Kind is what a suspension holds.
type Kind string

// The kinds of suspension.
const (
	// Site is a destination: the set of MX hosts a recipient domain shares
	// with others (shaping.SiteName), or a relay host.
	Site Kind = "site"
	// Domain is a sending domain, by name.
	Domain Kind = "domain"
	// Account is a sending account, by login: every domain it owns.
	Account Kind = "account"
	// Tenant is one sending account at one site, "ACCOUNT_ID@SITE": what
	// an automation rule's SuspendTenant holds.
	Tenant Kind = "tenant"
	// Override is an automation rule's SetConfig: not a hold but a limit of
	// a site overridden for a while, "KEY@SITE", the override in Action.
	Override Kind = "config"
)

// ByAutomation is the CreatedBy of what automation rules put in force.
const ByAutomation = "automation"

// Kinds are the kinds in the order the CLI and the API list them.
var Kinds = []Kind{Site, Domain, Account}

// Suspension is one hold the operator put on the queue.
type Suspension struct {
	ID    int64
	Kind  Kind
	Value string // the site name, the domain name or the account login
	// Reason is the operator's note, shown wherever the suspension is.
	Reason    string
	CreatedAt time.Time
	// Until is when the suspension ends by itself; nil: when resumed.
	Until *time.Time
	// CreatedBy names who suspended: an operator's login, or "cli".
	CreatedBy string
	// AccountID is the id of the account an account suspension names, as
	// Store.Suspensions reads it (0 when no account has that login).
	AccountID int64
	// Action, Rule and Reply are set on what an automation rule put in
	// force (CreatedBy ByAutomation): the action as shaping.Action.String
	// writes it ("Suspend", "SetConfig connection_limit=1"), the rule's ID
	// and the reply that set it off.
	Action, Rule, Reply string
	// EndedAt is when the suspension was resumed or replaced; nil when it
	// was neither (it holds, or its Until passed: it expired).
	EndedAt *time.Time
	// Ended says how it ended before its Until: EndResumed or EndReplaced;
	// "" when it did not (EndExpired when the store closed it for a new
	// one after its Until).
	Ended string
}

// How a suspension ends.
const (
	EndExpired  = "expired"  // its Until passed
	EndResumed  = "resumed"  // an operator resumed it
	EndReplaced = "replaced" // a new suspension of the same kind and value took its place
)

// InForce reports whether the suspension holds at now.
func (s Suspension) InForce(now time.Time) bool {
	return s.EndedAt == nil && (s.Until == nil || s.Until.After(now))
}

// End returns when and how the suspension ended, as of now; ok is false
// while it is in force.
func (s Suspension) End(now time.Time) (at time.Time, how string, ok bool) {
	switch {
	case s.EndedAt != nil:
		return *s.EndedAt, s.Ended, true
	case s.Until != nil && !s.Until.After(now):
		return *s.Until, EndExpired, true
	}
	return time.Time{}, "", false
}

// Store keeps suspensions; the queue's claim reads the same rows.
type Store interface {
	// PutSuspension stores s (its ID ignored) and returns it with its ID.
	// A suspension of the same kind and value not ended yet ends at
	// s.CreatedAt (EndReplaced; EndExpired if its Until had passed): there
	// is at most one in force per selector.
	PutSuspension(ctx context.Context, s Suspension) (Suspension, error)
	// Suspensions lists the suspensions in force at now, oldest first.
	Suspensions(ctx context.Context, now time.Time) ([]Suspension, error)
	// DeleteSuspension ends the suspension with that id at now
	// (EndResumed) and returns it; NotFound when there is none in force at
	// now. The row stays, for the history, until pruned.
	DeleteSuspension(ctx context.Context, id int64, now time.Time) (Suspension, error)
	// DeleteSuspensionOf is DeleteSuspension by kind and value.
	DeleteSuspensionOf(ctx context.Context, kind Kind, value string, now time.Time) (Suspension, error)
	// PruneSuspensions deletes the suspensions that ended (expired,
	// resumed or replaced) at or before the time given.
	PruneSuspensions(ctx context.Context, before time.Time) (int64, error)
	// SuspensionHistory lists, newest first and at most limit, the
	// suspensions put in force or ended at or after since, and those in
	// force.
	SuspensionHistory(ctx context.Context, since time.Time, limit int) ([]Suspension, error)
}
