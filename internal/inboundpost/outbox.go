package inboundpost

import (
	"context"
	"time"

	"github.com/postline/postline/internal/inboundroute"
	"github.com/postline/postline/internal/receiving"
)

// OutcomeQueued is a handed-on action's outcome once its post is queued.
const OutcomeQueued = "queued"

// DefaultMaxPendingBytes is OutboxConfig.MaxPendingBytes' default.
const DefaultMaxPendingBytes = 1 << 30

// OutboxConfig configures an Outbox; zero values take the defaults.
type OutboxConfig struct {
	// MaxPendingBytes bounds the bytes of the messages an account's
	// pending posts hold (--inbound-post-bytes-per-account): each post
	// keeps its own copy of the message until it ends, so one message to
	// 50 recipients of a route with 10 URLs is 500 copies, kept for the
	// retry window while the URLs fail. Past it a message is refused for
	// now (receiving.ErrPostsFull, 452).
	MaxPendingBytes int64
	Now             func() time.Time
}

// Outbox is the receiving.Forwarder of forward(URL) actions and store
// notifications: it queues one post per action, durably, and answers
// "queued" with the post's token (details.post of the action in the
// received entry). The Dispatcher posts them.
type Outbox struct {
	store Store
	cfg   OutboxConfig
}

var _ receiving.Forwarder = (*Outbox)(nil)

// NewOutbox returns an Outbox.
func NewOutbox(st Store, cfg OutboxConfig) *Outbox {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxPendingBytes <= 0 {
		cfg.MaxPendingBytes = DefaultMaxPendingBytes
	}
	return &Outbox{store: st, cfg: cfg}
}

// Forward implements receiving.Forwarder. An error (the outbox could not
// be written, or the account's pending posts hold their most:
// receiving.ErrPostsFull) refuses the message for now, with nothing
// recorded.
func (o *Outbox) Forward(ctx context.Context, h receiving.Handoff) ([]receiving.ActionOutcome, error) {
	now := o.cfg.Now().UTC().Truncate(time.Millisecond)
	out := make([]receiving.ActionOutcome, len(h.Actions))
	posts := make([]Post, 0, len(h.Actions))
	for i, a := range h.Actions {
		kind, url, stored := KindForward, a.URL, ""
		if a.Kind == inboundroute.KindStore {
			kind, url, stored = KindNotify, a.Notify, h.StoredID
		}
		if url == "" { // not a URL action: Forwarders gives this side none
			out[i] = receiving.ActionOutcome{Outcome: receiving.OutcomeUnsupported, Reason: "not a URL action"}
			continue
		}
		p := Post{Token: NewToken(h.AccountID, h.Recipient, a.RouteID, i, kind, url, stored, h.Digest),
			AccountID: h.AccountID, DomainID: h.DomainID, RouteID: a.RouteID, Kind: kind, URL: url, Format: a.Format,
			Recipient: h.Recipient, Sender: h.Envelope.MailFrom, MessageID: h.MessageID, StoredID: stored, Raw: h.Raw,
			State: StatePending, NextAttemptAt: now, CreatedAt: now}
		if p.Format == "" {
			p.Format = inboundroute.FormatMailgun
		}
		posts = append(posts, p)
		out[i] = receiving.ActionOutcome{Outcome: OutcomeQueued, Details: map[string]any{"post": p.Token, "format": p.Format}}
	}
	if err := o.store.Enqueue(ctx, posts, o.cfg.MaxPendingBytes); err != nil {
		return nil, err
	}
	return out, nil
}
