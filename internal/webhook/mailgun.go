package webhook

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/mailgun"
)

// MailgunStore keeps a domain's Mailgun-format webhooks: for each Mailgun
// webhook id, up to mailgun.MaxWebhookURLs URLs, each a FormatMailgun
// webhook with its own cursor (one failing URL does not hold the others).
type MailgunStore interface {
	// SetMailgun replaces the URLs of the domain's webhook id with urls
	// (none removes them), keeping the cursor of each URL that stays and
	// starting new ones at the log's horizon, in one transaction after
	// checking cond. It returns the URLs it had, oldest first.
	SetMailgun(ctx context.Context, domainID int64, id string, urls []string, now time.Time, cond SetCondition) ([]string, error)
}

// SetCondition is what SetMailgun requires of the webhook id's URLs.
type SetCondition int

const (
	// MustBeNew refuses an id that has URLs (Mailgun's create).
	MustBeNew SetCondition = iota
	// MustExist refuses an id without URLs as NotFound (update, delete).
	MustExist
)

// ErrMailgunExists and ErrMailgunNotFound are SetMailgun's refusals, in
// Mailgun's words.
var (
	ErrMailgunExists   = apperr.Field("id", "Webhook already exists; change its urls with PUT /v3/domains/{domain}/webhooks/{id}")
	ErrMailgunNotFound = apperr.Errorf(apperr.NotFound, "Webhook not found")
)

// MailgunWebhooks returns the domain's Mailgun webhook ids and their URLs.
func (s *Service) MailgunWebhooks(ctx context.Context, domainID int64) (map[string][]string, error) {
	list, err := s.store.List(ctx, domainID)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, w := range list {
		if w.Format == FormatMailgun {
			out[w.MailgunEvent] = append(out[w.MailgunEvent], w.URL)
		}
	}
	return out, nil
}

// SetMailgunWebhook validates id and urls (one to mailgun.MaxWebhookURLs;
// none with MustExist removes the id) and sets them; it returns the URLs
// the id had.
func (s *Service) SetMailgunWebhook(ctx context.Context, domainID int64, id string, urls []string, cond SetCondition) ([]string, error) {
	fe := apperr.FieldErrors{}
	if !mailgun.ValidWebhookID(id) {
		fe.Add("id", fmt.Sprintf("unknown webhook id %q; the ids are %s", id, strings.Join(mailgun.WebhookIDs, ", ")))
	}
	var clean []string
	for _, raw := range urls {
		u, msg := checkURL(raw)
		if msg != "" {
			fe.Add("url", fmt.Sprintf("%q %s", raw, msg))
			continue
		}
		if !slices.Contains(clean, u) {
			clean = append(clean, u)
		}
	}
	deleting := urls == nil && cond == MustExist
	switch {
	case len(urls) == 0 && !deleting:
		fe.Add("url", "The url parameter is required (up to 3, repeated).")
	case len(clean) > mailgun.MaxWebhookURLs:
		fe.Add("url", fmt.Sprintf("at most %d urls per webhook; %d given", mailgun.MaxWebhookURLs, len(clean)))
	}
	if err := fe.Err(); err != nil {
		return nil, err
	}
	return s.store.SetMailgun(ctx, domainID, id, clean, s.now().UTC(), cond)
}

// SigningKeys keeps each account's webhook signing key, sealed at rest.
type SigningKeys interface {
	// SigningKey returns the account's key, "" when it has none yet.
	SigningKey(ctx context.Context, accountID int64) (string, error)
	// SetSigningKey stores key as the account's: always when replace,
	// else only when it has none.
	SetSigningKey(ctx context.Context, accountID int64, key string, replace bool) error
	// DomainAccount returns the id of the account that owns the domain.
	DomainAccount(ctx context.Context, domainID int64) (int64, error)
}

// SigningKey returns the account's webhook signing key (Mailgun's "HTTP
// webhook signing key"), making it on first use.
func (s *Service) SigningKey(ctx context.Context, accountID int64) (string, error) {
	key, err := s.store.SigningKey(ctx, accountID)
	if err != nil || key != "" {
		return key, err
	}
	// Two first uses at once: the second set is a no-op and both read the
	// first's key.
	if err := s.store.SetSigningKey(ctx, accountID, mailgun.NewSigningKey(), false); err != nil {
		return "", err
	}
	return s.store.SigningKey(ctx, accountID)
}

// RotateSigningKey gives the account a new signing key and returns it;
// posts signed from then on use it.
func (s *Service) RotateSigningKey(ctx context.Context, accountID int64) (string, error) {
	key := mailgun.NewSigningKey()
	return key, s.store.SetSigningKey(ctx, accountID, key, true)
}

// domainSigningKey is the signing key of the domain's account.
func (s *Service) domainSigningKey(ctx context.Context, domainID int64) (string, error) {
	acc, err := s.store.DomainAccount(ctx, domainID)
	if err != nil {
		return "", err
	}
	return s.SigningKey(ctx, acc)
}
