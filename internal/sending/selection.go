package sending

import (
	"context"
	"time"

	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/suspend"
)

// Selector picks waiting deliveries: those going to a site, or sent from a
// sending domain or an account. The zero Selector picks every one.
type Selector struct {
	Kind  suspend.Kind // "" for all
	Value string
}

// Destination is where waiting deliveries go: through a relay host, or
// straight to the MX hosts of a recipient domain. Its site is what
// SiteResolver names.
type Destination struct {
	RelayHost string // the relay of an SMTP-relay domain; "" for direct delivery
	Domain    string // the recipients' domain, lowercase, for direct delivery
}

// SiteResolver names the site mail to a destination goes to: the relay
// host, or the recipient domain's MX hosts named as shaping.SiteName
// names them (the domain itself when it has no MX records).
type SiteResolver interface {
	SiteOf(ctx context.Context, dest Destination) (string, error)
}

// GroupCount is how many waiting deliveries of one group are in one state,
// as the store counts them: by sending domain name, by account login, or
// by destination (for sites).
type GroupCount struct {
	Name  string      // the domain's name or the account's login; "" by destination
	Dest  Destination // by destination only
	State string      // pending, deferred or sending
	N     int
	// Held is how many of the N were put back because a site suspension
	// (or an automation rule's SuspendTenant) holds them (held_site).
	Held int
}

// Selection is a Selector as the store applies it: one of Domain, Account,
// or a site's destinations and the deliveries held for it; none set
// selects every delivery.
type Selection struct {
	Domain  string // sending domain name
	Account string // account login
	// Site selects the deliveries held for the site (held_site), and
	// those going to the site's relay hosts and recipient domains.
	Site        string
	RelayHosts  []string
	RcptDomains []string
}

// ControlStore is the queue control's access to the deliveries table.
type ControlStore interface {
	// QueueGroups counts the waiting deliveries (pending, deferred,
	// sending) by state and by sending domain (by suspend.Domain), account
	// (suspend.Account) or destination (suspend.Site).
	QueueGroups(ctx context.Context, by suspend.Kind) ([]GroupCount, error)
	// RetrySelected makes the selected deferred deliveries that are not
	// due yet due at now, and returns how many.
	RetrySelected(ctx context.Context, sel Selection, now time.Time) (int64, error)
	// FailSelected fails at most limit selected pending or deferred
	// deliveries with message as their last message, records
	// entries(them) in the same transaction and returns them. A delivery
	// being attempted is never taken.
	FailSelected(ctx context.Context, sel Selection, message string, now time.Time, limit int,
		entries func([]Delivery) []event.Entry) ([]Delivery, error)
	// WakeHeldSite makes the pending and deferred deliveries held for site
	// due at now, no longer marked held, and returns how many.
	WakeHeldSite(ctx context.Context, site string, now time.Time) (int64, error)
}

// HoldStore puts back a claimed delivery whose site, sending domain or
// account is suspended: not an attempt (its count is given back, and a
// delivery never attempted is pending again), due at next, marked as
// held for site when site is not "".
type HoldStore interface {
	HoldDelivery(ctx context.Context, id int64, owner, site string, next time.Time) error
}
