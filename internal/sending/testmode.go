package sending

import (
	"cmp"
	"context"
	"strings"
	"time"

	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/message"
)

// acceptTest logs a queued entry per recipient, marked testmode, and
// queues nothing: the request was checked as a real one would be.
func (s *Service) acceptTest(ctx context.Context, d domain.Domain, accountID int64, r Request, c checked, oneID string, now time.Time) (Accepted, error) {
	snd := &Send{DomainID: d.ID, AccountID: accountID, From: strings.TrimSpace(r.From), Subject: r.Subject, Tags: r.Tags}
	acc := Accepted{MessageIDs: []string{}, MessageID: oneID}
	var entries []event.Entry
	for _, to := range c.to {
		id := cmp.Or(oneID, strings.Trim(message.NewMessageID(d.Name), "<>"))
		entries = append(entries, entry(d.ID, id, event.Queued, snd, to, now, map[string]any{"testmode": true}))
		acc.MessageIDs = append(acc.MessageIDs, id)
	}
	return acc, s.events.Record(ctx, entries...)
}
