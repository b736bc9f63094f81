package webhook

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"

	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/mailgun"
)

// Test posts one made-up event to w the way its real posts go (its
// format and signature, the guard against private addresses, the
// timeout) so that its owner can check the endpoint: a "delivered" entry
// (or the first type w receives) for test@ the domain, with details
// {"test": true}. It returns the endpoint's status (0 without an answer)
// and, when the post failed, why in words. Nothing is recorded: w's
// cursor, retries and recent posts are as they were.
func (d *Dispatcher) Test(ctx context.Context, w Webhook) (int, string) {
	if w.Unreadable != "" {
		return 0, w.Unreadable
	}
	name, err := d.domains(ctx, w.DomainID)
	if err != nil {
		return 0, d.failureText(err)
	}
	b := make([]byte, 8)
	rand.Read(b)
	tag := hex.EncodeToString(b)
	en := event.Entry{DomainID: w.DomainID, MessageID: "test-" + tag + "@" + name, Type: event.Delivered,
		Sender: "test@" + name, Recipient: "recipient@example.com", Subject: "Postline webhook test",
		CreatedAt: d.cfg.Now().UTC(), Details: event.NewDetails(map[string]any{"test": true})}
	for _, t := range event.Types() {
		if w.Receives(en) {
			break
		}
		en.Type = t
	}
	if !w.Receives(en) {
		return 0, "the webhook receives no event type a test can show"
	}
	var status int
	if w.Format == FormatMailgun {
		var key string
		if key, err = d.keys.domainSigningKey(ctx, w.DomainID); err == nil {
			status, err = d.postMailgun(ctx, w, key, mailgun.Item(en, nil))
		}
	} else {
		status, err = d.postBatch(ctx, w, name, "msg_"+tag+"_test", []event.Entry{en})
	}
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return status, "the test was cancelled"
		}
		return status, d.failureText(err)
	}
	return status, ""
}
