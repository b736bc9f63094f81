package inboundpost

import (
	"context"
	"time"

	"github.com/postline/postline/internal/inboundroute"
	"github.com/postline/postline/internal/receiving"
)

// OutcomeQueued is a handed-on action's outcome once its post is queued.
const OutcomeQueued = "queued"

// Outbox is the receiving.Forwarder of forward(URL) actions and store
// notifications: it queues one post per action, durably, and answers
// "queued" with the post's token (details.post of the action in the
// received entry). The Dispatcher posts them.
type Outbox struct {
	store Store
	now   func() time.Time
}

var _ receiving.Forwarder = (*Outbox)(nil)

// NewOutbox returns an Outbox; now may be nil.
func NewOutbox(st Store, now func() time.Time) *Outbox {
	if now == nil {
		now = time.Now
	}
	return &Outbox{store: st, now: now}
}

// Forward implements receiving.Forwarder. An error (the outbox could not
// be written) refuses the message for now, with nothing recorded.
func (o *Outbox) Forward(ctx context.Context, h receiving.Handoff) ([]receiving.ActionOutcome, error) {
	now := o.now().UTC().Truncate(time.Millisecond)
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
	if err := o.store.Enqueue(ctx, posts); err != nil {
		return nil, err
	}
	return out, nil
}
