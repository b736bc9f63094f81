package sending

import (
	"cmp"
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
	"github.com/postline/postline/internal/templates"
)

// MaxBatchAttachmentBytes bounds what a batch stores for its attachments:
// every recipient's message is its own send with its own copy.
const MaxBatchAttachmentBytes = 50 << 20

// A batch commits in chunks of at most this many messages or bytes, each
// chunk one transaction: its memory and its hold on the database's writer
// stay bounded whatever the batch's size.
const (
	batchChunkMessages = 100
	batchChunkBytes    = 8 << 20
)

// rendered is one recipient's message of a batch.
type rendered struct {
	out     templates.Rendered
	headers map[string]string
	size    int64 // storedBytes
}

// acceptBatch queues one message per recipient, each rendered with its
// variables. The whole batch is rendered and sized first, so that one
// recipient that cannot be rendered, a batch past the request bound or
// past the account's bytes of the day queues nothing; then it is rendered
// again chunk by chunk, each chunk committed as it is built.
func (s *Service) acceptBatch(ctx context.Context, d domain.Domain, accountID int64, r Request, c checked, p personal,
	verdicts map[string]suppression.Verdict, oneID string, now time.Time) (Accepted, error) {
	atts := attachmentBytes(r.Attachments)
	if total := atts * int64(len(c.to)); total > MaxBatchAttachmentBytes {
		return Accepted{}, apperr.Field("attachments", fmt.Sprintf("A batch stores the attachments once per recipient: %d recipients × %d bytes is more than %d bytes; send smaller batches.",
			len(c.to), atts, MaxBatchAttachmentBytes))
	}
	for addr := range p.perRecipient {
		if !slices.Contains(c.to, addr) {
			return Accepted{}, apperr.Field("recipient_variables", fmt.Sprintf("The recipient_variables key %s is not one of the recipients.", addr))
		}
	}
	kept, stored, err := s.sizeBatch(c, p, verdicts, atts)
	if err != nil {
		return Accepted{}, err
	}
	if err := s.spendDaily(ctx, accountID, stored); err != nil {
		return Accepted{}, err
	}
	// Rendering again costs what sizing did, which the deadline bounded;
	// this one only guards against the unforeseen.
	p.deadline = time.Now().Add(4 * templates.RenderTimeout)
	options := sealOptions(s.cfg.Sealer, r.Options)
	details := queuedDetails(len(r.Attachments), p, now)
	acc := Accepted{MessageIDs: []string{}, Attachments: len(r.Attachments), DeliverAt: p.deliverAt, MessageID: oneID}
	var chunk []EnqueueJob
	var chunkBytes int64
	var dropped []event.Entry
	toQueue := len(c.to)
	for _, to := range c.to {
		if verdicts[to].Suppressed {
			toQueue--
		}
	}
	commit := func() error {
		if len(chunk) == 0 {
			return nil
		}
		// The suppressed recipients' entries commit with the messages, as
		// in commitSend.
		first, more := chunk[0].Entries, dropped
		chunk[0].Entries = func(ds []Delivery) []event.Entry { return append(first(ds), more...) }
		if err := s.store.EnqueueMany(ctx, chunk); err != nil {
			return partly(acc.MessageIDs, toQueue, err)
		}
		for _, j := range chunk {
			acc.MessageIDs = append(acc.MessageIDs, j.Deliveries[0].MessageID)
		}
		chunk, chunkBytes, dropped = nil, 0, nil
		s.events.Wake(d.ID)
		s.wake()
		return nil
	}
	for i, to := range c.to {
		var m rendered
		if i < len(kept) {
			m, kept[i] = kept[i], rendered{}
		} else if m, err = s.renderBatchMessage(c, p, to, atts); err != nil {
			return Accepted{}, partly(acc.MessageIDs, toQueue, err)
		}
		snd := &Send{DomainID: d.ID, AccountID: accountID, From: strings.TrimSpace(r.From), FromName: r.FromName,
			ReplyTo: strings.TrimSpace(r.ReplyTo), Subject: m.out.Subject, Text: m.out.Text, HTML: m.out.HTML, Headers: m.headers,
			Options: options, Tags: r.Tags, CreatedAt: now, DeliverAt: p.deliverAtPtr()}
		if name := c.addressing.NameOf(to); name != "" {
			snd.Addressing = Addressing{To: []message.Mailbox{{Name: name, Addr: to}}}
		}
		id := cmp.Or(oneID, strings.Trim(message.NewMessageID(d.Name), "<>"))
		if v := verdicts[to]; v.Suppressed {
			dropped = append(dropped, entry(d.ID, id, event.Failed, snd, to, now, map[string]any{
				"reason": "suppressed", "suppression": string(v.By.Type), "suppressed_by": v.By.Recipient}))
			acc.Suppressed++
			continue
		}
		dl := Delivery{DomainID: d.ID, MessageID: id, Recipient: to, State: StatePending, NextAttemptAt: p.at(now),
			CreatedAt: now, Sender: snd.From, Subject: snd.Subject, Tags: snd.Tags}
		chunk = append(chunk, EnqueueJob{Send: snd, Attachments: r.Attachments, Deliveries: []Delivery{dl},
			Entries: func(ds []Delivery) []event.Entry {
				return []event.Entry{entry(snd.DomainID, ds[0].MessageID, event.Queued, snd, ds[0].Recipient, now, details)}
			}})
		if chunkBytes += m.size; len(chunk) >= batchChunkMessages || chunkBytes >= batchChunkBytes {
			if err := commit(); err != nil {
				return Accepted{}, err
			}
		}
	}
	if err := commit(); err != nil {
		return Accepted{}, err
	}
	acc.Queued = len(acc.MessageIDs)
	if len(dropped) > 0 { // every recipient after the last chunk was suppressed
		if err := s.events.Record(ctx, dropped...); err != nil {
			return Accepted{}, partly(acc.MessageIDs, toQueue, err)
		}
	}
	return acc, nil
}

// sizeBatch renders every recipient's message once, all within one render
// deadline, and refuses the batch as soon as what it has rendered passes
// the request bound. It returns the renders that fit in a chunk (the
// first recipients'), for the commit to reuse, and what the queued ones
// store.
func (s *Service) sizeBatch(c checked, p personal, verdicts map[string]suppression.Verdict, atts int64) (kept []rendered, stored int64, err error) {
	p.deadline = time.Now().Add(templates.RenderTimeout)
	var total, keptBytes int64
	keeping := true
	for _, to := range c.to {
		if time.Now().After(p.deadline) { // Mailgun's syntax has no deadline of its own
			return nil, 0, apperr.Field("recipient_variables", fmt.Sprintf(
				"Rendering the messages of this batch took longer than %s, the limit of a request's renders: send fewer recipients or a smaller template.",
				templates.RenderTimeout))
		}
		if p.percent {
			// Mailgun's syntax has no output bound of its own: size the
			// message before building it.
			if n := p.percentSize(p.varsFor(to)) + atts; total+n > s.maxRendered() {
				return nil, 0, s.tooMuchRendered("recipient_variables", len(c.to), total+n)
			}
		}
		m, err := s.renderBatchMessage(c, p, to, atts)
		if err != nil {
			return nil, 0, err
		}
		if total += m.size; total > s.maxRendered() {
			return nil, 0, s.tooMuchRendered("recipient_variables", len(c.to), total)
		}
		if !verdicts[to].Suppressed {
			stored += m.size
		}
		if keeping = keeping && keptBytes+m.size <= batchChunkBytes; keeping {
			kept, keptBytes = append(kept, m), keptBytes+m.size
		}
	}
	return kept, stored, nil
}

// renderBatchMessage renders one recipient's message and sizes it.
func (s *Service) renderBatchMessage(c checked, p personal, to string, atts int64) (rendered, error) {
	out, headers, err := p.renderFor(to, p.varsFor(to))
	if err != nil {
		return rendered{}, err
	}
	if !p.percent {
		headers = c.headers
	}
	return rendered{out: out, headers: headers, size: storedBytes(out, headers, atts)}, nil
}

// partly is the error of a batch that failed after queued were committed
// (none: err as it is).
func partly(queued []string, total int, err error) error {
	if len(queued) == 0 {
		return err
	}
	return &apperr.Error{Code: apperr.Unavailable, Err: &PartlyQueued{Queued: slices.Clone(queued), Total: total, Err: err},
		Message: fmt.Sprintf("The batch was interrupted: the messages of its first %d of %d recipients are queued (their log shows them), the rest are not. "+
			"Send the rest again, not the whole batch.", len(queued), total)}
}

// queuedDetails are the details of a queued entry.
func queuedDetails(attachments int, p personal, now time.Time) map[string]any {
	m := map[string]any{"attachments": attachments}
	if p.deliverAt.After(now) {
		m["deliver_at"] = p.deliverAt.UTC().Format("2006-01-02T15:04:05.000Z07:00")
	}
	return m
}
