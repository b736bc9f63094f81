// Package audit is an account's record of who did what: keys created and
// revoked, domains added, changed, verified and deleted, suppressions
// added and removed, webhooks, templates, members and passwords. Entries
// are written after the change they record succeeded, and a failure to
// write one is logged, never turned into the change's failure: the change
// is done. They are kept for the log's retention (--log-retention).
package audit

import (
	"cmp"
	"context"
	"log/slog"
	"time"
	"unicode/utf8"
)

// The actions recorded.
const (
	KeyCreated          = "key.created"
	KeyRevoked          = "key.revoked"
	DomainAdded         = "domain.added"
	DomainChanged       = "domain.changed"
	DomainDeleted       = "domain.deleted"
	DomainVerified      = "domain.verified"
	SuppressionAdded    = "suppression.added"
	SuppressionRemoved  = "suppression.removed"
	SuppressionsRemoved = "suppressions.removed" // bulk: the target says how many
	SuppressionsImport  = "suppressions.imported"
	WebhookCreated      = "webhook.created"
	WebhookDeleted      = "webhook.deleted"
	TemplateCreated     = "template.created"
	TemplateChanged     = "template.changed"
	TemplateDeleted     = "template.deleted"
	MemberInvited       = "member.invited"
	MemberRoleChanged   = "member.role_changed"
	MemberRemoved       = "member.removed"
	PasswordSet         = "password.set"
	PasswordRemoved     = "password.removed"
	MessageCancelled    = "message.cancelled"
	AccountDisabled     = "account.disabled" // by an operator
	AccountEnabled      = "account.enabled"  // by an operator
)

// Entry is one thing done.
type Entry struct {
	ID        int64
	AccountID int64
	At        time.Time
	// Actor is a member's email, the account's login, or "api key NAME".
	Actor  string
	Action string
	// Target is what was acted on: a domain, an address, a key's name.
	Target string
	// Client is the address the request came from ("cli" for commands).
	Client string
}

// Filter pages an account's entries, newest first: Before is the id of
// the last entry of the previous page (0: the newest).
type Filter struct {
	AccountID int64
	Before    int64
	Limit     int
}

// Store keeps entries.
type Store interface {
	AddAudit(ctx context.Context, e Entry) (int64, error)
	ListAudit(ctx context.Context, f Filter) ([]Entry, error)
	// PruneAudit deletes at most batch entries older than before.
	PruneAudit(ctx context.Context, before time.Time, batch int) (int64, error)
}

// Page is one page of entries; Next is the Before of the next (older)
// page, 0 when this is the last.
type Page struct {
	Entries []Entry
	Next    int64
}

// Service records and reads the log.
type Service struct {
	store Store
	now   func() time.Time
	log   *slog.Logger
}

// NewService returns the audit log; now and log may be nil.
func NewService(st Store, now func() time.Time, log *slog.Logger) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: st, now: now, log: cmp.Or(log, slog.Default())}
}

// maxField bounds each text of an entry: targets come from users.
const maxField = 300

// Record writes e at the current time; a failure is logged.
func (s *Service) Record(ctx context.Context, e Entry) {
	e.At = s.now().UTC().Truncate(time.Millisecond)
	e.Actor, e.Action, e.Target, e.Client = clip(e.Actor), clip(e.Action), clip(e.Target), clip(e.Client)
	if _, err := s.store.AddAudit(context.WithoutCancel(ctx), e); err != nil {
		s.log.Error("audit: entry not recorded", "account", e.AccountID, "actor", e.Actor, "action", e.Action,
			"target", e.Target, "error", err)
	}
}

func clip(v string) string {
	if len(v) <= maxField {
		return v
	}
	v = v[:maxField]
	for !utf8.ValidString(v) {
		v = v[:len(v)-1]
	}
	return v + "…"
}

// Page sizes.
const (
	DefaultLimit = 50
	MaxLimit     = 500
)

// List returns one page of an account's entries, newest first.
func (s *Service) List(ctx context.Context, f Filter) (Page, error) {
	if f.Limit <= 0 {
		f.Limit = DefaultLimit
	}
	f.Limit = min(f.Limit, MaxLimit)
	want := f.Limit
	f.Limit++
	es, err := s.store.ListAudit(ctx, f)
	if err != nil {
		return Page{}, err
	}
	p := Page{Entries: es}
	if len(es) > want {
		p.Entries = es[:want]
		p.Next = p.Entries[want-1].ID
	}
	return p, nil
}
