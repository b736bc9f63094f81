package mailforward

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/mailauth"
	"github.com/postline/postline/internal/receiving"
	"github.com/postline/postline/internal/sending"
)

// Outcomes of a forward, in the `received` entry's actions.
const (
	OutcomeQueued  = "queued"  // handed to the delivery queue: MessageID names it
	OutcomeRefused = "refused" // not sent, for the Reason given
)

// DefaultMaxForwards is Config.MaxForwards' default.
const DefaultMaxForwards = 10

// Intake is the sending side's raw-message intake (sending.Service): a
// forward is prepared and queued as any whole message, with the
// account's suppressions and limits, and kept from being queued twice
// with the intake's idempotency keys.
type Intake interface {
	PrepareRaw(ctx context.Context, in sending.RawInput) (sending.RawPrepared, error)
	AcceptRaw(ctx context.Context, d domain.Domain, accountID int64, m sending.RawMessage) (sending.Accepted, error)
	Reserve(ctx context.Context, accountID int64, domain, key string) (claim string, status int, body []byte, err error)
	Remember(ctx context.Context, accountID int64, domain, key, claim string, status int, body []byte) error
	Forget(ctx context.Context, accountID int64, domain, key, claim string) error
}

// Domains finds the receiving domain (domain.Service).
type Domains interface {
	ByID(ctx context.Context, id int64) (domain.Domain, error)
}

// Config configures a Forwarder; zero values take the defaults.
type Config struct {
	// MaxForwards bounds the forward marks a message may carry and still
	// be forwarded (default DefaultMaxForwards).
	MaxForwards int
	Logger      *slog.Logger
}

// Deps are the services a Forwarder uses.
type Deps struct {
	Domains  Domains
	Intake   Intake
	Resolver mailauth.Resolver // the DMARC policy of the From domain
}

// Forwarder carries out forward("someone@example.org"): it is the
// Address side of receiving.Forwarders.
type Forwarder struct {
	cfg  Config
	deps Deps
}

var _ receiving.Forwarder = (*Forwarder)(nil)

// New returns a Forwarder.
func New(cfg Config, deps Deps) *Forwarder {
	cfg.MaxForwards = cmp.Or(cfg.MaxForwards, DefaultMaxForwards)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Forwarder{cfg: cfg, deps: deps}
}

// errInFlight: the same forward is being queued by another delivery of
// the message; the sender is asked to try again later.
var errInFlight = errors.New("mailforward: the same forward is being queued by another delivery of the message")

// Forward implements receiving.Forwarder for forward(address) actions:
// each is queued, or refused with a reason. An error (a fault of the
// database, or the same forward in flight elsewhere) refuses the whole
// message for now; the forwards this call already queued are not queued
// again when the sender retries.
func (f *Forwarder) Forward(ctx context.Context, h receiving.Handoff) ([]receiving.ActionOutcome, error) {
	out := make([]receiving.ActionOutcome, len(h.Actions))
	refuseAll := func(reason string) ([]receiving.ActionOutcome, error) {
		for i := range out {
			out[i] = refused(reason)
		}
		return out, nil
	}
	dom, err := f.deps.Domains.ByID(ctx, h.DomainID)
	switch {
	case apperr.CodeOf(err) == apperr.NotFound || err == nil && dom.AccountID != h.AccountID:
		return refuseAll("the receiving domain is no longer the account's")
	case err != nil:
		return nil, err
	}
	msg, err := parseMessage(h.Raw)
	if err != nil {
		return refuseAll("the message header cannot be read: " + err.Error())
	}
	j := job{f: f, h: h, dom: dom, msg: msg}
	for i, a := range h.Actions {
		if out[i], err = j.forward(ctx, a.RouteID, a.Address); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func refused(reason string) receiving.ActionOutcome {
	return receiving.ActionOutcome{Outcome: OutcomeRefused, Reason: reason}
}

// maxMarksReason is the refusal of a message with too many marks.
func (f *Forwarder) maxMarksReason(n int) string {
	return fmt.Sprintf("the message was forwarded %d times already (%s fields), the most --inbound-max-forwards (%d) allows",
		n, sending.ForwardMarkHeader, f.cfg.MaxForwards)
}
