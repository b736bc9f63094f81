package webhook

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/mailgun"
)

// Webhook is one endpoint of a domain.
type Webhook struct {
	ID         int64
	DomainID   int64
	URL        string
	Secret     string       // plain in memory; sealed at rest; shown once
	EventTypes []event.Type // empty: every type of sent mail (received only when named)
	CreatedAt  time.Time

	Cursor        int64     // id of the last log entry dealt with
	Attempts      int       // failed posts in a row
	NextAttemptAt time.Time // not before this after a failure
	LastError     string
	LastSuccessAt *time.Time
	// Unreadable is set when the secret could not be decrypted with this
	// process's secret key: the webhook is listed but does not post.
	Unreadable string

	// Format is how it posts: FormatPostline (batches, Standard Webhooks
	// headers, Secret) or FormatMailgun (each event alone, signed with
	// the account's signing key; Secret is empty).
	Format string
	// MailgunEvent is the Mailgun webhook id a FormatMailgun webhook
	// answers to (mailgun.WebhookIDs).
	MailgunEvent string
}

// The formats of a webhook.
const (
	FormatPostline = "postline"
	FormatMailgun  = "mailgun"
)

// Receives reports whether the webhook posts entry en: by its event types
// (Postline's format) or by its Mailgun webhook id.
func (w Webhook) Receives(en event.Entry) bool {
	if w.Format == FormatMailgun {
		return mailgun.WebhookID(en) == w.MailgunEvent
	}
	return w.Wants(en.Type)
}

// Wants reports whether the webhook receives entries of type t. A
// webhook that names no types gets every type of sent mail; received mail
// (received, post) only when it names them, so that endpoints written for the sending
// log (made before inbound existed) are not sent a kind they never asked
// for.
func (w Webhook) Wants(t event.Type) bool {
	if len(w.EventTypes) == 0 {
		return t != event.Received && t != event.Post
	}
	return slices.Contains(w.EventTypes, t)
}

// Store is the storage of webhooks. Missing rows are apperr.NotFound.
type Store interface {
	// Create stores w with its cursor at the domain's log horizon (its
	// newest entry that can no longer be preceded by one still committing).
	// Create stores w unless its domain has max webhooks already (then an
	// apperr.Invalid naming "url"); the count and the insert are atomic, so
	// concurrent creates cannot pass the limit together.
	Create(ctx context.Context, w Webhook, max int) (Webhook, error)
	List(ctx context.Context, domainID int64) ([]Webhook, error)
	Delete(ctx context.Context, domainID, id int64) error
	// Due lists up to limit webhooks whose next attempt is due and that no
	// live lease holds, longest due first — by (NextAttemptAt, ID), after
	// the position after (keyset paging; the zero Position starts).
	Due(ctx context.Context, now time.Time, after Position, limit int) ([]Webhook, error)
	// Lease takes webhook id for owner until leaseUntil if it is free (or
	// its lease expired) and still at cursor; false when someone else has it.
	Lease(ctx context.Context, id int64, owner string, cursor int64, now, leaseUntil time.Time) (bool, error)
	// Advance records a successful post (posted) or a batch with nothing
	// to post: the new cursor, no failures, and frees the lease.
	Advance(ctx context.Context, id int64, owner string, cursor int64, posted bool, now time.Time) error
	// Fail records a failed post and frees the lease until next, with the
	// cursor at cursor (past the entries of the lease that were posted):
	// failures in a row count from 1 again when the cursor moved.
	Fail(ctx context.Context, id int64, owner string, cursor int64, next time.Time, msg string) error
	// Release frees the lease without recording anything (a post cut off
	// by shutdown).
	Release(ctx context.Context, id int64, owner string) error
	// RecordPost keeps the outcome of one post, and only the newest
	// KeptPosts of each webhook.
	RecordPost(ctx context.Context, p Post) error
	// Posts returns the webhook's newest posts, newest first.
	Posts(ctx context.Context, webhookID int64, limit int) ([]Post, error)

	MailgunStore
	SigningKeys
}

// Post is the outcome of one POST to a webhook, for its owner to look at.
type Post struct {
	WebhookID int64
	At        time.Time
	Status    int    // the HTTP status; 0 when there was no answer
	Error     string // empty when the endpoint answered 2xx
	Entries   int    // log entries the post carried
	Duration  time.Duration
}

// KeptPosts is how many posts of each webhook are kept.
const KeptPosts = 50

// Position is a place in Due's order.
type Position struct {
	NextAttemptAt time.Time
	ID            int64
}

// Posts returns the newest posts of webhook id of domainID, newest first
// (NotFound when the webhook is not the domain's).
func (s *Service) Posts(ctx context.Context, domainID, id int64, limit int) ([]Post, error) {
	list, err := s.store.List(ctx, domainID)
	if err != nil {
		return nil, err
	}
	for _, w := range list {
		if w.ID == id {
			return s.store.Posts(ctx, id, min(max(limit, 1), KeptPosts))
		}
	}
	return nil, apperr.Errorf(apperr.NotFound, "webhook %d not found", id)
}

// Limits on what an owner may configure. MaxPerDomain counts Postline's
// webhooks; Mailgun-format ones are bounded by mailgun.MaxWebhookURLs per
// webhook id instead.
const (
	MaxPerDomain = 10
	MaxURLLen    = 2048
)

// Service manages webhooks.
type Service struct {
	store Store
	now   func() time.Time
}

// NewService returns a Service.
func NewService(st Store, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: st, now: now}
}

// Create validates and stores a new webhook with a fresh secret.
func (s *Service) Create(ctx context.Context, domainID int64, rawURL string, types []string) (Webhook, error) {
	fe := apperr.FieldErrors{}
	u, msg := checkURL(rawURL)
	if msg != "" {
		fe.Add("url", msg)
	}
	var ets []event.Type
	for _, t := range types {
		et := event.Type(strings.TrimSpace(t))
		if !et.Valid() {
			fe.Add("event_types", fmt.Sprintf("unknown event type %q; want one of %s", t, typeList()))
			continue
		}
		if !slices.Contains(ets, et) {
			ets = append(ets, et)
		}
	}
	if err := fe.Err(); err != nil {
		return Webhook{}, err
	}
	secret := make([]byte, 32)
	rand.Read(secret)
	now := s.now().UTC()
	return s.store.Create(ctx, Webhook{DomainID: domainID, URL: u, Secret: "whsec_" + hex.EncodeToString(secret),
		EventTypes: ets, CreatedAt: now, NextAttemptAt: now, Format: FormatPostline}, MaxPerDomain)
}

// checkURL returns a webhook URL as it is stored, or why it is refused.
func checkURL(rawURL string) (string, string) {
	u, err := url.Parse(strings.TrimSpace(rawURL))
	switch {
	case rawURL == "":
		return "", "The url field is required."
	case len(rawURL) > MaxURLLen:
		return "", fmt.Sprintf("must be at most %d characters", MaxURLLen)
	case err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.Fragment != "":
		return "", "must be an absolute http or https URL without credentials or fragment"
	}
	return u.String(), ""
}

func typeList() string {
	var names []string
	for _, t := range event.Types() {
		names = append(names, string(t))
	}
	return strings.Join(names, ", ")
}

// List returns a domain's webhooks, secrets included (callers must not
// show them).
func (s *Service) List(ctx context.Context, domainID int64) ([]Webhook, error) {
	return s.store.List(ctx, domainID)
}

// Delete removes a domain's webhook; another domain's id is NotFound.
func (s *Service) Delete(ctx context.Context, domainID, id int64) error {
	return s.store.Delete(ctx, domainID, id)
}
