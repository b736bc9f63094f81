package receiving

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/textproto"
	"slices"
	"strings"
	"time"

	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/inboundroute"
	"github.com/postline/postline/internal/mailauth"
)

// Outcome is what Receive did for one recipient.
type Outcome struct {
	Recipient string
	Routes    []string // the routes that took it
	StoredID  string   // its stored copy, "" when no store() ran
}

// Receive takes a message for the envelope's recipients (all accepted by
// Recipient, all of inbound domains): it authenticates it, evaluates each
// recipient's routes with its header, runs their actions and records the
// stored copies and the log entries in one transaction. On an error
// nothing is recorded; ErrNoRoute, ErrRoutesChanged, ErrStoreFull,
// ErrPostsFull and ErrTooCostly say why, anything else is a fault to try again later.
func (s *Service) Receive(ctx context.Context, env Envelope, raw []byte) ([]Outcome, error) {
	now := s.cfg.Now().UTC().Truncate(time.Millisecond)
	auth := mailauth.Check(ctx, s.deps.Resolver, mailauth.Input{RemoteIP: env.RemoteIP, Helo: env.Helo, MailFrom: env.MailFrom, Message: raw})
	stored := s.trace(env, auth, now)
	stored = append(stored, mailauth.Untrust(raw, s.cfg.AuthservID)...)
	h := header(raw)
	info := fieldsOf(h)
	info.digest = sha256.Sum256(raw)

	routes := map[int64][]*inboundroute.Route{}
	actions := make([][]inboundroute.Action, len(env.Recipients))
	taken := 0
	for i, rc := range env.Recipients {
		acc := rc.Domain.AccountID
		if _, ok := routes[acc]; !ok {
			rs, err := s.accountRoutes(ctx, acc)
			if err != nil {
				return nil, err
			}
			routes[acc] = rs
		}
		var m inboundroute.Meter
		actions[i] = inboundroute.EvaluateWithin(routes[acc], rc.Address, h, &m)
		if m.Spent() {
			s.cfg.Logger.Warn("inbound: the account's routes cost too much to match the message (inboundroute.MaxMatchCost); refused",
				"account", acc, "recipient", rc.Address)
			return nil, ErrTooCostly
		}
		if len(actions[i]) > 0 {
			taken++
		}
	}
	switch {
	case taken == 0:
		return nil, ErrNoRoute
	case taken < len(env.Recipients):
		return nil, ErrRoutesChanged
	}
	if n := handedOn(actions); n > s.cfg.ActionsPerMessage {
		s.cfg.Logger.Warn("inbound: the routes hand on more forwards and notifications for one message than --inbound-actions-per-message; refused",
			"actions", n, "limit", s.cfg.ActionsPerMessage, "recipients", len(env.Recipients))
		return nil, ErrTooManyActions
	}

	var msgs []Message
	var entries []event.Entry
	outcomes := make([]Outcome, len(env.Recipients))
	for i, rc := range env.Recipients {
		out, msg, entry, err := s.run(ctx, env, rc, actions[i], auth, info, stored, now)
		if err != nil {
			return nil, err
		}
		if msg != nil {
			msgs = append(msgs, *msg)
		}
		entries = append(entries, entry)
		outcomes[i] = out
	}
	if err := s.deps.Store.Record(ctx, msgs, entries, s.cfg.StoreBytesPerAccount); err != nil {
		return nil, err
	}
	if s.deps.Events != nil {
		for _, rc := range env.Recipients {
			s.deps.Events.Wake(rc.Domain.ID)
		}
	}
	return outcomes, nil
}

// fields are the message's fields the log and the store show.
type fields struct {
	from, subject, messageID string
	digest                   [32]byte // of the message as the client sent it
}

func fieldsOf(h textproto.MIMEHeader) fields {
	return fields{from: clipText(decoded(h.Get("From")), 1000), subject: clipText(decoded(h.Get("Subject")), 1000),
		messageID: clipText(strings.Trim(strings.TrimSpace(h.Get("Message-Id")), "<>"), 1000)}
}

// run carries out one recipient's actions and returns its outcome, its
// stored copy (nil when no store() ran) and its log entry.
func (s *Service) run(ctx context.Context, env Envelope, rc Recipient, actions []inboundroute.Action, auth mailauth.Results,
	info fields, raw []byte, now time.Time) (Outcome, *Message, event.Entry, error) {
	out := Outcome{Recipient: rc.Address}
	var msg *Message
	var handed []inboundroute.Action
	var handedAt []int
	logged := make([]map[string]any, len(actions))
	for i, a := range actions {
		if !slices.Contains(out.Routes, a.RouteID) {
			out.Routes = append(out.Routes, a.RouteID)
		}
		l := map[string]any{"route": a.RouteID, "action": string(a.Kind)}
		logged[i] = l
		switch {
		case a.Skipped != "":
			l["outcome"], l["reason"] = OutcomeSkipped, a.Skipped
			continue
		case a.Kind == inboundroute.KindStop:
			l["outcome"] = OutcomeDone
			continue
		case a.Kind == inboundroute.KindForward:
			l["destination"] = a.URL + a.Address
			handed, handedAt = append(handed, a), append(handedAt, i)
			continue
		}
		// store(), once per recipient however many routes ask it.
		if msg == nil {
			msg = &Message{ID: newID(), AccountID: rc.Domain.AccountID, DomainID: rc.Domain.ID, Recipient: rc.Address,
				Sender: env.MailFrom, From: info.from, Subject: info.subject, MessageID: info.messageID, Auth: auth,
				Size: int64(len(raw)), Raw: raw, ReceivedAt: now}
			out.StoredID = msg.ID
		}
		l["outcome"], l["stored_id"] = OutcomeStored, msg.ID
		if a.Notify != "" {
			l["notify"] = a.Notify
			handed, handedAt = append(handed, a), append(handedAt, i)
		}
	}
	if msg != nil {
		msg.Routes = out.Routes
	}
	msgID := info.messageID
	if msgID == "" {
		// The log needs one; the message is left as it came.
		msgID = newID() + "@" + s.cfg.AuthservID
	}
	if len(handed) > 0 {
		results, err := s.deps.Forwarder.Forward(ctx, Handoff{AccountID: rc.Domain.AccountID, DomainID: rc.Domain.ID,
			Recipient: rc.Address, Envelope: env, MessageID: msgID, Digest: info.digest, Raw: raw, StoredID: out.StoredID, Actions: handed})
		if err != nil {
			return out, nil, event.Entry{}, fmt.Errorf("receiving: handing on forwards: %w", err)
		}
		for j, r := range results {
			if j >= len(handedAt) {
				break
			}
			l := logged[handedAt[j]]
			key := "outcome"
			if handed[j].Kind == inboundroute.KindStore {
				key = "notify_outcome"
			}
			for k, v := range r.Details {
				if _, taken := l[k]; !taken {
					l[k] = v
				}
			}
			l[key] = r.Outcome
			if r.Reason != "" {
				l["reason"] = r.Reason
			}
			if r.MessageID != "" {
				l["message_id"] = r.MessageID
			}
		}
	}
	details := map[string]any{"remote_ip": env.RemoteIP.String(), "helo": clipText(env.Helo, 255), "starttls": env.TLS,
		"from": info.from, "size": len(raw), "routes": out.Routes, "actions": logged, "auth": auth}
	if out.StoredID != "" {
		details["stored_id"] = out.StoredID
	}
	entry := event.Entry{DomainID: rc.Domain.ID, MessageID: msgID, Type: event.Received, Sender: env.MailFrom,
		Recipient: rc.Address, Subject: info.subject, CreatedAt: now, Details: event.NewDetails(details)}
	return out, msg, entry, nil
}

// trace is what this server adds on top of a received message: its
// Authentication-Results and a Received field (RFC 5321 §4.4).
func (s *Service) trace(env Envelope, auth mailauth.Results, now time.Time) []byte {
	with := "ESMTP"
	if env.TLS {
		with = "ESMTPS"
	}
	helo := strings.Map(func(r rune) rune {
		if r <= ' ' || r == 0x7f || r == '(' || r == ')' || r == ';' {
			return '_'
		}
		return r
	}, clipText(env.Helo, 255))
	if helo == "" {
		helo = "unknown"
	}
	var b strings.Builder
	b.WriteString("Authentication-Results: " + auth.Header(s.cfg.AuthservID) + "\r\n")
	fmt.Fprintf(&b, "Received: from %s ([%s])\r\n\tby %s with %s;\r\n\t%s\r\n", helo, env.RemoteIP, s.cfg.AuthservID, with,
		now.Format(time.RFC1123Z))
	return []byte(b.String())
}

// clipText keeps s to n bytes of valid UTF-8 without line breaks.
func clipText(s string, n int) string {
	s = strings.NewReplacer("\r", " ", "\n", " ", "\x00", "").Replace(s)
	if len(s) > n {
		s = s[:n]
	}
	return strings.ToValidUTF8(s, "")
}

// newID is a stored message's id: 128 random bits in hex.
func newID() string {
	b := make([]byte, 16)
	rand.Read(b) //nolint:errcheck // crypto/rand does not fail
	return hex.EncodeToString(b)
}

// ValidID reports a stored message id's form: 32 lower-case hex digits.
func ValidID(id string) bool {
	if len(id) != 32 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if !((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')) {
			return false
		}
	}
	return true
}

// handedOn counts the actions a message's recipients hand on to the
// Forwarder: each forward's destination and each store notification. One
// message to 50 recipients of routes with 10 destinations each is 500
// posts or re-sends: bounded, so that an outside sender cannot make one
// message into an avalanche for the account's endpoints and queue.
func handedOn(actions [][]inboundroute.Action) int {
	n := 0
	for _, as := range actions {
		for _, a := range as {
			if a.Skipped == "" && (a.Kind == inboundroute.KindForward || a.Kind == inboundroute.KindStore && a.Notify != "") {
				n++
			}
		}
	}
	return n
}
