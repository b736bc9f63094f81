package sending

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/emailaddr"
	"github.com/postline/postline/internal/event"
)

// RawMessage is a message submitted whole, prepared by PrepareRaw: Bcc
// and trace fields removed, Message-ID and Date present, its own
// X-Postline-* headers read and removed.
type RawMessage struct {
	From       string   // the envelope sender (MAIL FROM)
	Recipients []string // RCPT TO, in order
	Data       []byte   // the message as it will be sent (before DKIM)
	MessageID  string   // its Message-ID, without angle brackets
	Subject    string   // for the log
	Tags       string   // comma-separated, from X-Postline-Tag
	DeliverAt  string   // X-Postline-Deliver-At (RFC 3339), "" for at once
	// HTML is the decoded first HTML part: the page click tokens index.
	HTML string
	// Track is X-Postline-Track ("opens", "clicks", "opens,clicks",
	// "none"; "" follows the domain's switches).
	Track string
	// Forward marks a received message an inbound route passes on
	// (PrepareRaw's forward mode): it is never tracked, its queued entries
	// say via "forward", and its envelope sender is always a bounce
	// address of this server's (see Worker's envelopeFrom), never From.
	Forward bool
}

// trackHeader is where a raw send keeps its X-Postline-Track (raw sends
// have no custom headers of their own: theirs are in the message).
const trackHeader = "X-Postline-Track"

// forwardHeader is where a raw send keeps its RawMessage.Forward.
const forwardHeader = "X-Postline-Forward"

// AcceptRaw queues a submitted message for each of its recipients through
// the same pipeline as Accept: suppressed recipients get a failed entry
// (reason suppressed), the others a delivery and a queued entry, all in
// one transaction before it returns. Every copy carries the client's
// Message-ID, which is the message_id the log shows for each recipient.
func (s *Service) AcceptRaw(ctx context.Context, d domain.Domain, accountID int64, m RawMessage) (Accepted, error) {
	lim := s.cfg.Limits
	if len(m.Recipients) == 0 {
		return Accepted{}, apperr.Field("to", "at least one recipient is required")
	}
	if len(m.Recipients) > lim.MaxRecipients {
		return Accepted{}, apperr.Field("to", fmt.Sprintf("at most %d recipients", lim.MaxRecipients))
	}
	if bad := tagsProblem(m.Tags); bad != "" {
		return Accepted{}, apperr.Field("tags", bad)
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
	now := s.cfg.Now().UTC().Truncate(time.Millisecond)
	fe := apperr.FieldErrors{}
	p := personal{deliverAt: s.deliverAt(fe, m.DeliverAt, now)}
	if err := fe.Err(); err != nil {
		return Accepted{}, err
	}
	var to []string
	seen := map[string]bool{}
	for _, r := range m.Recipients {
		a, err := emailaddr.Parse(strings.TrimSpace(r))
		if err != nil || a.Literal {
			return Accepted{}, apperr.Field("to", fmt.Sprintf("%q is not a valid email address", r))
		}
		n := a.Normalized()
		if k := strings.ToLower(n); !seen[k] {
			seen[k] = true
			to = append(to, n)
		}
	}
	verdicts, err := s.supp.Screen(ctx, d.ID, to)
	if err != nil {
		return Accepted{}, err
	}
	snd := &Send{DomainID: d.ID, AccountID: accountID, From: m.From, Subject: m.Subject, Tags: m.Tags, HTML: m.HTML,
		Headers: map[string]string{}, Raw: m.Data, CreatedAt: now, Processed: true, DeliverAt: p.deliverAtPtr()}
	if m.Track != "" {
		snd.Headers[trackHeader] = m.Track
	}
	via := "smtp"
	if m.Forward {
		snd.Headers[trackHeader], snd.Headers[forwardHeader] = "none", "1"
		via = "forward"
	}
	var ds []Delivery
	var dropped []event.Entry
	for _, rc := range to {
		if v := verdicts[rc]; v.Suppressed {
			dropped = append(dropped, entry(d.ID, m.MessageID, event.Failed, snd, rc, now, map[string]any{
				"reason": "suppressed", "suppression": string(v.By.Type), "suppressed_by": v.By.Recipient}))
			continue
		}
		ds = append(ds, Delivery{DomainID: d.ID, MessageID: m.MessageID, Recipient: rc, State: StatePending,
			NextAttemptAt: p.at(now), CreatedAt: now, Sender: snd.From, Subject: snd.Subject, Tags: snd.Tags})
	}
	if err := s.spendDaily(ctx, accountID, int64(len(m.Data)+len(m.HTML))); err != nil {
		return Accepted{}, err
	}
	details := queuedDetails(0, p, now)
	delete(details, "attachments")
	details["via"] = via
	if err := s.commitSend(ctx, snd, nil, ds, dropped, details); err != nil {
		return Accepted{}, err
	}
	acc := Accepted{Queued: len(ds), Suppressed: len(dropped), MessageIDs: []string{m.MessageID}, DeliverAt: p.deliverAt}
	return acc, nil
}

// rawTracking is the opens and clicks switches for a raw send: the
// domain's, or what its X-Postline-Track said.
func rawTracking(snd Send, dom domain.Domain) (opens, clicks bool) {
	t, ok := snd.Headers[trackHeader]
	if !ok {
		return dom.Tracking.Opens, dom.Tracking.Clicks
	}
	for _, v := range strings.Split(t, ",") {
		switch strings.TrimSpace(v) {
		case "opens":
			opens = true
		case "clicks":
			clicks = true
		}
	}
	return opens, clicks
}
