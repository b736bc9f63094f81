package suspend

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/postline/postline/internal/apperr"
)

// Config configures a Service. Zero values take the defaults.
type Config struct {
	// Now is the clock suspensions start and end by (default time.Now).
	Now func() time.Time
	// Check canonicalises the value of a domain or account suspension and
	// says whether it names something: a NotFound error when the domain or
	// account does not exist. nil accepts any value.
	Check func(ctx context.Context, kind Kind, value string) (string, error)
	// Refresh is how old the copy Suspended answers from may be
	// (default 1s): a suspension made by another process holds here
	// within it.
	Refresh time.Duration
	// Retention is how long an ended suspension is kept for History
	// (default 7 days).
	Retention time.Duration
}

// DefaultRetention is how long ended suspensions and automation actions
// stay listed.
const DefaultRetention = 7 * 24 * time.Hour

// historyLimit bounds what History returns.
const historyLimit = 500

// Service creates, lists and ends suspensions, and answers whether one
// holds from a copy refreshed at most every Config.Refresh.
type Service struct {
	store Store
	cfg   Config

	mu     sync.Mutex
	cached []Suspension
	read   time.Time // when cached was read (monotonic); zero: read again
}

// New returns the Service over st.
func New(st Store, cfg Config) *Service {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = time.Second
	}
	if cfg.Retention <= 0 {
		cfg.Retention = DefaultRetention
	}
	return &Service{store: st, cfg: cfg}
}

// Request asks for a suspension.
type Request struct {
	Kind  Kind
	Value string
	// Duration is how long it lasts; 0 until resumed.
	Duration time.Duration
	Reason   string
	By       string // who asks: a login, or "cli"
	// Action, Rule and Reply describe an automation rule's action.
	Action, Rule, Reply string
}

// MaxReason bounds the operator's note (of a suspension, of a bounce).
const MaxReason = 500

// CheckReason returns an operator's reason trimmed, or an Invalid error
// on field "reason" when it is longer than MaxReason bytes or holds
// control characters: it is printed by the CLI, logged and sent in
// webhooks, where a line break or an escape sequence would forge lines
// or drive the operator's terminal.
func CheckReason(reason string) (string, error) {
	reason = strings.TrimSpace(reason)
	switch {
	case len(reason) > MaxReason:
		return "", apperr.Field("reason", fmt.Sprintf("at most %d bytes, got %d", MaxReason, len(reason)))
	case !utf8.ValidString(reason):
		return "", apperr.Field("reason", "must be UTF-8 text")
	case strings.IndexFunc(reason, unicode.IsControl) >= 0:
		return "", apperr.Field("reason", "must be one line of text, without control characters (line breaks, tabs, escapes)")
	}
	return reason, nil
}

// Suspend holds what r names, replacing a suspension of the same kind and
// value. An invalid request is an Invalid error naming the field (the
// kind's name for the value, "duration", "reason"); a domain or account
// that does not exist is NotFound.
func (s *Service) Suspend(ctx context.Context, r Request) (Suspension, error) {
	value, err := s.canonical(ctx, r.Kind, r.Value)
	if err != nil {
		return Suspension{}, err
	}
	if r.Duration < 0 {
		return Suspension{}, apperr.Field("duration", "must be positive, or absent for a suspension until resumed")
	}
	reason, err := CheckReason(r.Reason)
	if err != nil {
		return Suspension{}, err
	}
	now := s.cfg.Now().UTC().Truncate(time.Millisecond)
	sp := Suspension{Kind: r.Kind, Value: value, Reason: reason, CreatedAt: now, CreatedBy: r.By,
		Action: r.Action, Rule: r.Rule, Reply: r.Reply}
	if r.Duration > 0 {
		until := now.Add(r.Duration)
		sp.Until = &until
	}
	// Suspensions ended longer ago than the retention are dropped as new
	// ones come.
	if _, err := s.store.PruneSuspensions(ctx, now.Add(-s.cfg.Retention)); err != nil {
		return Suspension{}, err
	}
	sp, err = s.store.PutSuspension(ctx, sp)
	s.invalidate()
	return sp, err
}

// Resume ends the suspension with that id (kept, ended EndResumed, for
// History); NotFound when none is in force.
func (s *Service) Resume(ctx context.Context, id int64) (Suspension, error) {
	sp, err := s.store.DeleteSuspension(ctx, id, s.cfg.Now())
	s.invalidate()
	return sp, err
}

// ResumeOf ends the suspension of kind and value; NotFound when none is
// in force. The value is read as Suspend reads it, so the domain or
// account need not exist any more.
func (s *Service) ResumeOf(ctx context.Context, kind Kind, value string) (Suspension, error) {
	v, err := normalize(kind, value)
	if err != nil {
		return Suspension{}, err
	}
	sp, err := s.store.DeleteSuspensionOf(ctx, kind, v, s.cfg.Now())
	if apperr.CodeOf(err) == apperr.NotFound {
		return sp, apperr.Errorf(apperr.NotFound, "No suspension of %s %s is in force.", kind, v)
	}
	s.invalidate()
	return sp, err
}

// History returns the suspensions put in force or ended within the
// retention, and those in force, newest first (at most 500), read from
// the store.
func (s *Service) History(ctx context.Context) ([]Suspension, error) {
	return s.store.SuspensionHistory(ctx, s.cfg.Now().Add(-s.cfg.Retention), historyLimit)
}

// Now is the Service's clock: what End is asked against.
func (s *Service) Now() time.Time { return s.cfg.Now() }

// List returns the suspensions in force now, read from the store.
func (s *Service) List(ctx context.Context) ([]Suspension, error) {
	return s.store.Suspensions(ctx, s.cfg.Now())
}

// Suspended reports whether deliveries to site are suspended, until when
// (the zero time: until resumed) and why. It answers from the copy at
// most Config.Refresh old; when the store cannot be read it answers from
// the last copy read (nothing, if none was), so a database hiccup does
// not stop delivery everywhere.
func (s *Service) Suspended(ctx context.Context, site string) (until time.Time, reason string, ok bool) {
	sp, ok := s.Holding(ctx, Site, strings.ToLower(strings.TrimSuffix(site, ".")))
	if !ok {
		return time.Time{}, "", false
	}
	if sp.Until != nil {
		until = *sp.Until
	}
	return until, sp.Reason, true
}

// Holding returns the suspension of kind and value in force, from the
// same copy as Suspended.
func (s *Service) Holding(ctx context.Context, kind Kind, value string) (Suspension, bool) {
	return s.Match(ctx, func(sp Suspension) bool { return sp.Kind == kind && sp.Value == value })
}

// Match returns the first suspension in force that ok accepts, from the
// same copy as Suspended.
func (s *Service) Match(ctx context.Context, ok func(Suspension) bool) (Suspension, bool) {
	now := s.cfg.Now()
	for _, sp := range s.current(ctx) {
		if sp.InForce(now) && ok(sp) {
			return sp, true
		}
	}
	return Suspension{}, false
}

// Any reports whether a suspension of kind is in force (from the copy):
// callers skip the work of naming a delivery's site when none is.
func (s *Service) Any(ctx context.Context, kind Kind) bool {
	_, ok := s.Match(ctx, func(sp Suspension) bool { return sp.Kind == kind })
	return ok
}

// Canonical reads a selector's value as Suspend does: lowercase names,
// and NotFound for a domain or account that does not exist.
func (s *Service) Canonical(ctx context.Context, kind Kind, value string) (string, error) {
	return s.canonical(ctx, kind, value)
}

func (s *Service) current(ctx context.Context) []Suspension {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.read.IsZero() && time.Since(s.read) < s.cfg.Refresh {
		return s.cached
	}
	list, err := s.store.Suspensions(ctx, s.cfg.Now())
	if err == nil {
		s.cached, s.read = list, time.Now()
	}
	return s.cached
}

func (s *Service) invalidate() {
	s.mu.Lock()
	s.read = time.Time{}
	s.mu.Unlock()
}

// canonical checks a value and returns it as stored.
func (s *Service) canonical(ctx context.Context, kind Kind, value string) (string, error) {
	v, err := normalize(kind, value)
	if err != nil || kind == Site || s.cfg.Check == nil {
		return v, err
	}
	return s.cfg.Check(ctx, kind, v)
}

// normalize reads a value the way every door writes it: site and domain
// names in lowercase without a trailing dot.
func normalize(kind Kind, value string) (string, error) {
	v := strings.TrimSpace(value)
	switch kind {
	case Site, Domain, Tenant, Override:
		v = strings.ToLower(strings.TrimSuffix(v, "."))
	case Account:
	default:
		return "", apperr.Field("kind", "want site, domain or account")
	}
	if v == "" {
		return "", apperr.Field(string(kind), "required")
	}
	if len(v) > 1000 || strings.IndexFunc(v, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) >= 0 {
		return "", apperr.Field(string(kind), "not a "+string(kind)+" name")
	}
	return v, nil
}

// All returns every suspension in force that ok accepts, from the same
// copy as Suspended.
func (s *Service) All(ctx context.Context, ok func(Suspension) bool) []Suspension {
	now := s.cfg.Now()
	var out []Suspension
	for _, sp := range s.current(ctx) {
		if sp.InForce(now) && ok(sp) {
			out = append(out, sp)
		}
	}
	return out
}
