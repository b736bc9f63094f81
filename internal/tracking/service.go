package tracking

import (
	"context"
	"fmt"
	"time"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/suppression"
)

// Target is the delivery a token or a bounce address leads to, with what
// its log entries need.
type Target struct {
	DeliveryID int64
	SendID     int64
	DomainID   int64
	MessageID  string // without angle brackets
	Recipient  string
	Sender     string
	Subject    string
	Tags       string
	State      string
	UserVars   string // the send's user variables JSON, "" for none
}

// Column names a first-time marker on the delivery.
type Column string

// The markers that make details.first true exactly once per delivery.
const (
	NoMark         Column = ""
	OpenedAt       Column = "opened_at"
	ClickedAt      Column = "clicked_at"
	UnsubscribedAt Column = "unsubscribed_at"
	ComplainedAt   Column = "complained_at"
)

// Mark is one piece of feedback about a delivery, recorded in one
// transaction: the marker (when Column is set and still empty), the
// suppression (when not nil; an existing one is kept), the move of a
// delivered message to bounced (when Bounced), and the entries.
type Mark struct {
	DeliveryID  int64
	Column      Column
	At          time.Time
	Suppression *suppression.Entry
	Bounced     bool
	// Entries makes the log entries once the transaction knows whether
	// this was the first of its kind.
	Entries func(first bool) []event.Entry
}

// Store is the storage tracking and inbound bounces need.
type Store interface {
	// Target returns a delivery; apperr.NotFound when it does not exist.
	Target(ctx context.Context, deliveryID int64) (Target, error)
	// SendHTML returns the HTML body of a send as accepted.
	SendHTML(ctx context.Context, sendID int64) (string, error)
	// Record writes m; first reports whether m set its Column.
	Record(ctx context.Context, m Mark) (first bool, err error)
	// RecordAll writes every mark in one transaction: all or none.
	RecordAll(ctx context.Context, marks []Mark) error
	// IsTrackingHost reports whether host is some domain's tracking domain.
	IsTrackingHost(ctx context.Context, host string) (bool, error)
}

// Entry is a log entry about t.
func (t Target) Entry(typ event.Type, at time.Time, details map[string]any) event.Entry {
	return event.Entry{DomainID: t.DomainID, MessageID: t.MessageID, Type: typ, Sender: t.Sender,
		Recipient: t.Recipient, Subject: t.Subject, Tags: t.Tags, CreatedAt: at.UTC(), Details: event.NewDetails(event.WithUserVariables(details, t.UserVars))}
}

// Client is who followed a tracking URL.
type Client struct {
	IP        string
	UserAgent string
	// Probe is true for requests that must not count (HEAD).
	Probe bool
}

// Service answers tracking URLs.
type Service struct {
	store  Store
	events *event.Service
	signer Signer
	now    func() time.Time
	hosts  hostCache
	repeat repeatCache
	own    map[string]bool // the service's own host names (ServeOn)
	// allow says whether a client address may still record (LimitAddresses).
	allow func(ctx context.Context, ip string) bool
}

// LimitAddresses makes opens and clicks from an address that allow
// refuses answer as usual but record nothing: one client replaying
// tracking URLs cannot flood an account's log and counts. Unsubscribes
// are not limited: each is logged once per delivery anyway, and a
// recipient's request to stop mail must never be dropped.
func (s *Service) LimitAddresses(allow func(ctx context.Context, ip string) bool) { s.allow = allow }

// NewService returns a Service; events may be nil (no live-tail wake-ups).
func NewService(st Store, events *event.Service, signer Signer, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: st, events: events, signer: signer, now: now}
}

// errUnknown is the one answer for a token that is forged, altered, or
// names a delivery that no longer exists.
var errUnknown = apperr.Errorf(apperr.NotFound, "unknown or expired tracking link")

func (s *Service) target(ctx context.Context, k Kind, text string) (Token, Target, error) {
	tok, ok := s.signer.Decode(k, text)
	if !ok {
		return tok, Target{}, errUnknown
	}
	t, err := s.store.Target(ctx, tok.DeliveryID)
	if apperr.CodeOf(err) == apperr.NotFound {
		return tok, t, errUnknown
	}
	return tok, t, err
}

// Open records an open of the message the token names.
func (s *Service) Open(ctx context.Context, text string, c Client) error {
	_, t, err := s.target(ctx, Open, text)
	if err != nil || c.Probe || !s.allowed(ctx, c) {
		return err
	}
	details := clientDetails(c)
	if p := imageProxy(c.UserAgent); p != "" {
		details["proxy"] = p
	}
	return s.record(ctx, t, OpenedAt, event.Opened, details, nil, classifyOpen(c))
}

// Click records a click and returns the URL to redirect to: the link at
// the token's index in the message as sent, never anything the request says.
func (s *Service) Click(ctx context.Context, text string, c Client) (string, error) {
	tok, t, err := s.target(ctx, Click, text)
	if err != nil {
		return "", err
	}
	body, err := s.store.SendHTML(ctx, t.SendID)
	if err != nil {
		return "", err
	}
	links := Links(body)
	if tok.Link >= len(links) {
		return "", errUnknown
	}
	if c.Probe || !s.allowed(ctx, c) {
		return links[tok.Link], nil
	}
	details := clientDetails(c)
	details["url"], details["link_index"] = links[tok.Link], tok.Link
	return links[tok.Link], s.record(ctx, t, ClickedAt, event.Clicked, details, nil, classifyClick(c))
}

// Check reports whether an unsubscribe token is valid, for the
// confirmation page (which must not unsubscribe: link scanners GET it).
func (s *Service) Check(ctx context.Context, text string) (Target, error) {
	_, t, err := s.target(ctx, Unsubscribe, text)
	return t, err
}

// Unsubscribe adds an unsubscribe suppression for the token's recipient on
// its domain and records `unsubscribed`. source says how: "link" (the
// confirmation page), "one_click" (RFC 8058 POST) or "mailto".
func (s *Service) Unsubscribe(ctx context.Context, text, source string, c Client) (Target, error) {
	_, t, err := s.target(ctx, Unsubscribe, text)
	if err != nil {
		return t, err
	}
	return t, s.UnsubscribeTarget(ctx, t, source, clientDetails(c))
}

// UnsubscribeTarget unsubscribes t's recipient (also used for complaints
// and mailto unsubscribes arriving by SMTP).
func (s *Service) UnsubscribeTarget(ctx context.Context, t Target, source string, details map[string]any) error {
	if _, err := s.store.Record(ctx, UnsubscribeMark(t, source, details, s.now())); err != nil {
		return err
	}
	if s.events != nil {
		s.events.Wake(t.DomainID)
	}
	return nil
}

// UnsubscribeMark is the Mark that unsubscribes t's recipient: an
// unsubscribe suppression with source, and `unsubscribed` with details
// (source and first added). Only the first unsubscribe of a delivery is
// logged (and, apart, its first complaint): people and mail clients
// repeat them, and the log must say what happened, once.
func UnsubscribeMark(t Target, source string, details map[string]any, at time.Time) Mark {
	src := source
	supp := &suppression.Entry{DomainID: t.DomainID, Type: suppression.Unsubscribe, RecipientType: suppression.Email,
		Recipient: event.Fold(t.Recipient), Source: &src, CreatedAt: at.UTC()}
	details["source"] = source
	col := UnsubscribedAt
	if source == "complaint" {
		col = ComplainedAt
	}
	return Mark{DeliveryID: t.DeliveryID, Column: col, At: at, Suppression: supp,
		Entries: func(first bool) []event.Entry {
			if !first {
				return nil
			}
			details["first"] = true
			return []event.Entry{t.Entry(event.Unsubscribed, at, details)}
		}}
}

// record writes one entry; bot-looking requests are logged with their
// reason but never take the first-of-its-kind marker.
func (s *Service) record(ctx context.Context, t Target, col Column, typ event.Type, details map[string]any,
	supp *suppression.Entry, bot string) error {
	if bot != "" {
		details["bot"], col = bot, NoMark
	}
	at := s.now()
	// Unsubscribes are never skipped: they are idempotent, and a retry after
	// a failed write must write.
	key := ""
	if supp == nil {
		key = fmt.Sprintf("%s\x00%d\x00%v\x00%v\x00%v", typ, t.DeliveryID, details["link_index"], details["ip"], details["user_agent"])
		if s.repeat.recent(key, at) {
			return nil
		}
	}
	_, err := s.store.Record(ctx, Mark{DeliveryID: t.DeliveryID, Column: col, At: at, Suppression: supp,
		Entries: func(first bool) []event.Entry {
			details["first"] = first
			return []event.Entry{t.Entry(typ, at, details)}
		}})
	if err != nil {
		return err
	}
	if key != "" {
		s.repeat.note(key, at) // only a hit that was written makes repeats skippable
	}
	if s.events != nil {
		s.events.Wake(t.DomainID)
	}
	return nil
}

func (s *Service) allowed(ctx context.Context, c Client) bool {
	return s.allow == nil || s.allow(ctx, c.IP)
}

func clientDetails(c Client) map[string]any {
	d := map[string]any{"ip": c.IP}
	if c.UserAgent != "" {
		d["user_agent"] = truncate(c.UserAgent, 512)
	}
	return d
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 { // do not cut a UTF-8 sequence
		n--
	}
	return s[:n]
}
