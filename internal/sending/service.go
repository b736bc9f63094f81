package sending

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/attach"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/message"
	"github.com/postline/postline/internal/suppression"
	"github.com/postline/postline/internal/templates"
)

// Config configures the Service.
type Config struct {
	Limits Limits
	// Sealer encrypts the attachment options (which may hold a ZIP
	// password) before they are stored; nil stores them as given.
	Sealer Sealer
	Now    func() time.Time
	// Templates finds stored templates; nil refuses the template field.
	Templates TemplateLoader
	// MaxSchedule bounds deliver_at (default DefaultMaxSchedule).
	MaxSchedule time.Duration
	// CheckFiles runs attach.Validate's checks of a request's files, in the
	// attachment child process (attachproc.Runner.Check); nil runs them
	// here.
	CheckFiles func(ctx context.Context, files []attach.File, opts attach.Options) error
	// MaxRenderedBytes bounds what one request stores: every recipient's
	// rendered message with its copy of the attachments (default
	// DefaultMaxRenderedBytes).
	MaxRenderedBytes int64
	// Volume counts an account's stored bytes per UTC day against
	// DailyBytes (default DefaultDailyBytes); nil counts nothing.
	Volume     Volume
	DailyBytes int64
	// EnqueueLinger, when set, lets a group of accepted requests wait up
	// to this long for the requests arriving with it while the load is
	// concurrent (never after a group of one). Worth it where commits run
	// one at a time (SQLite's one writer); see the README.
	EnqueueLinger time.Duration
}

// Sealer encrypts values kept until a job has used them (secret.Box).
type Sealer interface {
	Seal(plain []byte) string
	Open(sealed string) ([]byte, error)
}

// Service accepts sends.
type Service struct {
	store  Store
	events *event.Service
	supp   *suppression.Service
	cfg    Config
	wake   func() // nudges the local workers after an enqueue

	enqueues *groupCommit[EnqueueJob] // group commit of accepted requests
}

// NewService returns a Service. wake may be nil.
func NewService(st Store, events *event.Service, supp *suppression.Service, cfg Config, wake func()) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if wake == nil {
		wake = func() {}
	}
	cfg.Limits = cfg.Limits.withDefaults()
	return &Service{store: st, events: events, supp: supp, cfg: cfg, wake: wake,
		enqueues: &groupCommit[EnqueueJob]{max: enqueueGroupMax, linger: cfg.EnqueueLinger, commit: st.EnqueueMany}}
}

// Limits returns the request limits in force.
func (s *Service) Limits() Limits { return s.cfg.Limits }

// Accepted is the answer to an accepted request.
type Accepted struct {
	MessageIDs []string // one per queued recipient, without angle brackets
	// MessageID is the one Message-ID of every copy when the request
	// asked for one (Request.OneMessageID), also when no copy was queued
	// (every recipient suppressed: their failed entries carry it).
	MessageID   string
	Queued      int
	Suppressed  int
	Attachments int
	Watermarked int // attachments the watermark applies to (PDF, PNG, JPEG)
	// DeliverAt is when the messages are due (zero: at once).
	DeliverAt time.Time
}

// Accept validates a request for domain d and queues one delivery per
// recipient that is not suppressed, committing before it returns.
func (s *Service) Accept(ctx context.Context, d domain.Domain, accountID int64, r Request) (Accepted, error) {
	now := s.cfg.Now().UTC().Truncate(time.Millisecond)
	p, err := s.personalise(ctx, d.ID, &r, now)
	if err != nil {
		return Accepted{}, err
	}
	c, err := validate(r, d.Name, s.cfg.Limits)
	if err != nil {
		return Accepted{}, err
	}
	if err := s.checkRequestSenders(ctx, d, r, c.headers); err != nil {
		return Accepted{}, err
	}
	oneID, err := s.oneMessageID(ctx, d, r)
	if err != nil {
		return Accepted{}, err
	}
	opts, err := attach.ParseOptions(r.Options)
	if err != nil {
		return Accepted{}, err
	}
	files := make([]attach.File, len(r.Attachments))
	for i, a := range r.Attachments {
		files[i] = attach.File{Name: a.Filename, ContentType: a.ContentType, Data: a.Data}
	}
	check := attach.Validate
	if s.cfg.CheckFiles != nil {
		check = func(files []attach.File, opts attach.Options) error { return s.cfg.CheckFiles(ctx, files, opts) }
	}
	if err := check(files, opts); err != nil {
		return Accepted{}, err
	}
	if !d.Verified() {
		return Accepted{}, apperr.Errorf(apperr.Unprocessable, "Domain %s is not verified: publish its DNS records and verify it first.", d.Name)
	}
	if d.Delivery.Mode == "" {
		return Accepted{}, apperr.Errorf(apperr.Unprocessable, "Domain %s has no delivery settings.", d.Name)
	}
	if err := d.CheckReadable(); err != nil {
		return Accepted{}, err
	}
	verdicts, err := s.supp.Screen(ctx, d.ID, c.to)
	if err != nil {
		return Accepted{}, err
	}
	if p.percent {
		p.srcHeaders = c.headers
		if !p.batch() {
			_, c.headers = p.renderPercent(nil)
		}
	}
	if t := r.trackOverride(d); t != "" {
		// After validation, which refuses X-Postline-* from senders.
		c.headers = maps.Clone(c.headers)
		c.headers[trackHeader] = t
		if p.srcHeaders != nil {
			p.srcHeaders = c.headers
		}
	}
	if r.TestMode {
		return s.acceptTest(ctx, d, accountID, r, c, oneID, now)
	}
	if p.batch() {
		return s.acceptBatch(ctx, d, accountID, r, c, p, verdicts, oneID, now)
	}
	// One message for every recipient: stored once.
	size := storedBytes(templates.Rendered{Subject: r.Subject, Text: r.Text, HTML: r.HTML}, c.headers, attachmentBytes(r.Attachments))
	if size > s.maxRendered() {
		return Accepted{}, s.tooMuchRendered("body", len(c.to), size)
	}
	if err := s.spendDaily(ctx, accountID, size); err != nil {
		return Accepted{}, err
	}
	snd := &Send{DomainID: d.ID, AccountID: accountID, From: strings.TrimSpace(r.From), FromName: r.FromName,
		ReplyTo: strings.TrimSpace(r.ReplyTo), Subject: r.Subject, Text: r.Text, HTML: r.HTML, Headers: c.headers,
		Options: sealOptions(s.cfg.Sealer, r.Options), Tags: r.Tags, CreatedAt: now, Addressing: c.addressing, DeliverAt: p.deliverAtPtr()}
	var ds []Delivery
	var dropped []event.Entry
	for _, to := range c.to {
		id := cmp.Or(oneID, strings.Trim(message.NewMessageID(d.Name), "<>"))
		if v := verdicts[to]; v.Suppressed {
			dropped = append(dropped, entry(d.ID, id, event.Failed, snd, to, now, map[string]any{
				"reason": "suppressed", "suppression": string(v.By.Type), "suppressed_by": v.By.Recipient}))
			continue
		}
		ds = append(ds, Delivery{DomainID: d.ID, MessageID: id, Recipient: to, State: StatePending,
			NextAttemptAt: p.at(now), CreatedAt: now, Sender: snd.From, Subject: snd.Subject, Tags: snd.Tags})
	}
	if err := s.commitSend(ctx, snd, r.Attachments, ds, dropped, queuedDetails(len(r.Attachments), p, now)); err != nil {
		return Accepted{}, err
	}
	acc := Accepted{Queued: len(ds), Suppressed: len(dropped), Attachments: len(r.Attachments), DeliverAt: p.deliverAt, MessageID: oneID}
	if opts.Watermark.Enabled {
		acc.Watermarked = attach.Watermarkable(files)
	}
	for _, dl := range ds {
		acc.MessageIDs = append(acc.MessageIDs, dl.MessageID)
	}
	if acc.MessageIDs == nil {
		acc.MessageIDs = []string{}
	}
	return acc, nil
}

// Message is the API's summary sentence for an accepted request.
func (a Accepted) Message() string {
	msg := fmt.Sprintf("Email queued for %d recipient(s) as %d job(s) with %d attachment(s).", a.Queued, a.Queued, a.Attachments)
	if a.Suppressed > 0 {
		msg += fmt.Sprintf(" %d other recipient(s) suppressed and not sent.", a.Suppressed)
	}
	if a.Watermarked > 0 {
		msg += fmt.Sprintf(" %d attachment(s) will be watermarked.", a.Watermarked)
	}
	if !a.DeliverAt.IsZero() {
		msg += " Scheduled for " + a.DeliverAt.UTC().Format(time.RFC3339) + "."
	}
	return msg
}

func entry(domainID int64, messageID string, t event.Type, s *Send, to string, at time.Time, details map[string]any) event.Entry {
	return event.Entry{DomainID: domainID, MessageID: messageID, Type: t, Sender: s.From, Recipient: to,
		Subject: s.Subject, Tags: s.Tags, CreatedAt: at, Details: event.NewDetails(event.WithUserVariables(details, s.Headers[event.UserVariablesHeader]))}
}

// IdempotencyPending is how long a reserved Idempotency-Key whose request
// has not finished blocks another request with it (then the first is taken
// to have died).
const IdempotencyPending = 10 * time.Minute // beyond the 5-minute upload timeout and the intake

// IdempotencyKept is how long a key's answer is replayed; older keys are
// deleted (PruneIdempotencyKeys).
const IdempotencyKept = 24 * time.Hour

// Reserve claims an Idempotency-Key for a request; see Store.Reserve.
// Keys are per account and domain: the same key on two domains is two keys.
// The claim is the returned token: Remember and Forget act only while it
// is still this request's.
func (s *Service) Reserve(ctx context.Context, accountID int64, domain, key string) (claim string, status int, body []byte, err error) {
	now := s.cfg.Now()
	b := make([]byte, 16)
	rand.Read(b)
	token := hex.EncodeToString(b)
	ok, status, body, err := s.store.Reserve(ctx, accountID, domain+" "+key, token, now, now.Add(-IdempotencyKept), now.Add(-IdempotencyPending))
	if !ok {
		token = ""
	}
	return token, status, body, err
}

// Remember stores the answer given under a claimed key.
func (s *Service) Remember(ctx context.Context, accountID int64, domain, key, claim string, status int, body []byte) error {
	return s.store.Remember(ctx, accountID, domain+" "+key, claim, status, body)
}

// Forget releases a claimed key whose request failed before anything was
// stored.
func (s *Service) Forget(ctx context.Context, accountID int64, domain, key, claim string) error {
	return s.store.Forget(ctx, accountID, domain+" "+key, claim)
}

// PruneIdempotencyKeys deletes the keys older than IdempotencyKept and
// returns how many.
func (s *Service) PruneIdempotencyKeys(ctx context.Context) (int64, error) {
	return s.store.PruneIdempotencyKeys(ctx, s.cfg.Now().Add(-IdempotencyKept), 1000)
}

// sealOptions seals non-empty attachment options: a password given for a
// ZIP must never reach the database (or its write-ahead log) in clear.
func sealOptions(s Sealer, options string) string {
	if s == nil || strings.TrimSpace(options) == "" {
		return options
	}
	return s.Seal([]byte(options))
}

// openOptions reverses sealOptions; a value in clear (stored before the
// options were sealed) is returned as it is.
func openOptions(s Sealer, stored string) (string, error) {
	if s == nil || !strings.HasPrefix(stored, "v1:") {
		return stored, nil
	}
	plain, err := s.Open(stored)
	if err != nil {
		return "", fmt.Errorf("sending: attachment options cannot be decrypted with this server's secret key: %w", err)
	}
	return string(plain), nil
}

// commitSend queues ds with their queued entries (details as given) and,
// in the same transaction, the entries of the recipients dropped as
// suppressed; with no delivery, only those entries are recorded.
func (s *Service) commitSend(ctx context.Context, snd *Send, atts []Attachment, ds []Delivery, dropped []event.Entry,
	details map[string]any) error {
	if len(ds) == 0 {
		if len(dropped) == 0 {
			return nil
		}
		return s.events.Record(ctx, dropped...)
	}
	err := s.enqueue(ctx, EnqueueJob{Send: snd, Attachments: atts, Deliveries: ds, Entries: func(ds []Delivery) []event.Entry {
		out := make([]event.Entry, len(ds))
		for i, dl := range ds {
			out[i] = entry(snd.DomainID, dl.MessageID, event.Queued, snd, dl.Recipient, snd.CreatedAt, details)
		}
		// The suppressed recipients' entries commit with the rest: after
		// the commit nothing may fail the request (its Idempotency-Key
		// would be freed and a retry send again).
		return append(out, dropped...)
	}})
	if err != nil {
		return err
	}
	s.events.Wake(snd.DomainID)
	s.wake()
	return nil
}
