package sending

import (
	"context"
	"strings"
	"time"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/event"
)

// StateOf is a message's recipient as the API shows it, by the service's
// clock (the one the queue runs on).
func (s *Service) StateOf(d MessageDelivery) string { return MessageState(d, s.cfg.Now()) }

// MessageState is a message's recipient as the API shows it: the queue's
// state, with "scheduled" for a delivery waiting for its deliver_at.
func MessageState(d MessageDelivery, now time.Time) string {
	if d.State == StatePending && d.Attempts == 0 && d.DeliverAt != nil && d.DeliverAt.After(now) {
		return "scheduled"
	}
	return d.State
}

// Message returns a message's deliveries; a message id that is not the
// domain's is NotFound.
func (s *Service) Message(ctx context.Context, domainID int64, messageID string) ([]MessageDelivery, error) {
	ds, err := s.store.MessageDeliveries(ctx, domainID, cleanMessageID(messageID))
	if err == nil && len(ds) == 0 {
		err = apperr.Errorf(apperr.NotFound, "Message not found")
	}
	return ds, err
}

// Cancel stops the message's deliveries that have not been tried yet or
// wait for a retry; they are logged as failed with reason "cancelled". It
// is a Conflict when nothing is left to cancel (sent, being sent, or
// cancelled before).
func (s *Service) Cancel(ctx context.Context, domainID int64, messageID string) ([]Delivery, error) {
	id := cleanMessageID(messageID)
	if _, err := s.Message(ctx, domainID, id); err != nil {
		return nil, err
	}
	now := s.cfg.Now().UTC().Truncate(time.Millisecond)
	ds, err := s.store.CancelMessage(ctx, domainID, id, now, func(ds []Delivery) []event.Entry {
		out := make([]event.Entry, len(ds))
		for i, d := range ds {
			out[i] = event.Entry{DomainID: d.DomainID, MessageID: d.MessageID, Type: event.Failed, Sender: d.Sender,
				Recipient: d.Recipient, Subject: d.Subject, Tags: d.Tags, CreatedAt: now,
				Details: event.NewDetails(map[string]any{"reason": "cancelled", "attempts": d.Attempts})}
		}
		return out
	})
	if err != nil {
		return nil, err
	}
	if len(ds) == 0 {
		return nil, apperr.Errorf(apperr.Conflict, "Nothing to cancel: the message was sent, is being sent, or was cancelled already.")
	}
	s.events.Wake(domainID)
	return ds, nil
}

// cleanMessageID accepts an id with or without its angle brackets.
func cleanMessageID(id string) string { return strings.Trim(strings.TrimSpace(id), "<>") }

// SendHeaders returns the custom headers the messages were sent with, by
// message id (the /v3/ events read Mailgun's user variables from them).
func (s *Service) SendHeaders(ctx context.Context, domainID int64, messageIDs []string) (map[string]map[string]string, error) {
	if len(messageIDs) == 0 {
		return map[string]map[string]string{}, nil
	}
	return s.store.SendHeaders(ctx, domainID, messageIDs)
}
