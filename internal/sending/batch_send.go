package sending

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/message"
	"github.com/postline/postline/internal/suppression"
)

// MaxBatchAttachmentBytes bounds what a batch stores for its attachments:
// every recipient's message is its own send with its own copy.
const MaxBatchAttachmentBytes = 50 << 20

// acceptBatch queues one message per recipient, each rendered with its
// variables, in one transaction: all of them or none.
func (s *Service) acceptBatch(ctx context.Context, d domain.Domain, accountID int64, r Request, c checked, p personal,
	verdicts map[string]suppression.Verdict, now time.Time) (Accepted, error) {
	var size int64
	for _, a := range r.Attachments {
		size += int64(len(a.Data))
	}
	if total := size * int64(len(c.to)); total > MaxBatchAttachmentBytes {
		return Accepted{}, apperr.Field("attachments", fmt.Sprintf("A batch stores the attachments once per recipient: %d recipients × %d bytes is more than %d bytes; send smaller batches.",
			len(c.to), size, MaxBatchAttachmentBytes))
	}
	for addr := range p.perRecipient {
		if !slices.Contains(c.to, addr) {
			return Accepted{}, apperr.Field("recipient_variables", fmt.Sprintf("The recipient_variables key %s is not one of the recipients.", addr))
		}
	}
	options := sealOptions(s.cfg.Sealer, r.Options)
	details := queuedDetails(len(r.Attachments), p, now)
	var jobs []EnqueueJob
	var dropped []event.Entry
	acc := Accepted{MessageIDs: []string{}, Attachments: len(r.Attachments), DeliverAt: p.deliverAt}
	for _, to := range c.to {
		out, headers, err := p.renderFor(to)
		if err != nil {
			return Accepted{}, err
		}
		if !p.percent {
			headers = c.headers
		}
		snd := &Send{DomainID: d.ID, AccountID: accountID, From: strings.TrimSpace(r.From), FromName: r.FromName,
			ReplyTo: strings.TrimSpace(r.ReplyTo), Subject: out.Subject, Text: out.Text, HTML: out.HTML, Headers: headers,
			Options: options, Tags: r.Tags, CreatedAt: now, DeliverAt: p.deliverAtPtr()}
		if name := c.addressing.NameOf(to); name != "" {
			snd.Addressing = Addressing{To: []message.Mailbox{{Name: name, Addr: to}}}
		}
		id := strings.Trim(message.NewMessageID(d.Name), "<>")
		if v := verdicts[to]; v.Suppressed {
			dropped = append(dropped, entry(d.ID, id, event.Failed, snd, to, now, map[string]any{
				"reason": "suppressed", "suppression": string(v.By.Type), "suppressed_by": v.By.Recipient}))
			acc.Suppressed++
			continue
		}
		dl := Delivery{DomainID: d.ID, MessageID: id, Recipient: to, State: StatePending, NextAttemptAt: p.at(now),
			CreatedAt: now, Sender: snd.From, Subject: snd.Subject, Tags: snd.Tags}
		jobs = append(jobs, EnqueueJob{Send: snd, Attachments: r.Attachments, Deliveries: []Delivery{dl},
			Entries: func(ds []Delivery) []event.Entry {
				return []event.Entry{entry(snd.DomainID, ds[0].MessageID, event.Queued, snd, ds[0].Recipient, now, details)}
			}})
		acc.MessageIDs = append(acc.MessageIDs, id)
	}
	acc.Queued = len(jobs)
	if len(jobs) == 0 {
		return acc, s.events.Record(ctx, dropped...)
	}
	// The suppressed recipients' entries commit with the rest, as in
	// commitSend.
	first := jobs[0].Entries
	jobs[0].Entries = func(ds []Delivery) []event.Entry { return append(first(ds), dropped...) }
	if err := s.store.EnqueueMany(ctx, jobs); err != nil {
		return Accepted{}, err
	}
	s.events.Wake(d.ID)
	s.wake()
	return acc, nil
}

// queuedDetails are the details of a queued entry.
func queuedDetails(attachments int, p personal, now time.Time) map[string]any {
	m := map[string]any{"attachments": attachments}
	if p.deliverAt.After(now) {
		m["deliver_at"] = p.deliverAt.UTC().Format("2006-01-02T15:04:05.000Z07:00")
	}
	return m
}

// acceptTest logs a queued entry per recipient, marked testmode, and
// queues nothing: the request was checked as a real one would be.
func (s *Service) acceptTest(ctx context.Context, d domain.Domain, accountID int64, r Request, c checked, now time.Time) (Accepted, error) {
	snd := &Send{DomainID: d.ID, AccountID: accountID, From: strings.TrimSpace(r.From), Subject: r.Subject, Tags: r.Tags}
	acc := Accepted{MessageIDs: []string{}}
	var entries []event.Entry
	for _, to := range c.to {
		id := strings.Trim(message.NewMessageID(d.Name), "<>")
		entries = append(entries, entry(d.ID, id, event.Queued, snd, to, now, map[string]any{"testmode": true}))
		acc.MessageIDs = append(acc.MessageIDs, id)
	}
	return acc, s.events.Record(ctx, entries...)
}
