package sending

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"time"

	gomessage "github.com/emersion/go-message"
	"github.com/emersion/go-message/mail"
	"github.com/emersion/go-message/textproto"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/message"
	"github.com/postline/postline/internal/tracking"
)

// RawInput is a message a door received whole: over SMTP submission (DATA
// or BDAT), as the /v3/ API's messages.mime, or (Forward) a received
// message that an inbound route passes on.
type RawInput struct {
	Data []byte
	// Senders lists the domains the submitter may speak for: every From,
	// Sender, Resent-From and Resent-Sender address must be at one of them.
	Senders SenderDomains
	// Domain, when not nil, is the domain the door sends through (the
	// /v3/ path's {domain}): it signs, so the first From must be at it.
	// Forward mode needs it: the route's domain.
	Domain *domain.Domain
	// Forward takes a received message to pass on. The sender rules do
	// not apply (its From is whoever wrote it) and its trace fields stay;
	// its X-Postline-* fields are removed unread (a stranger's, not the
	// account's instructions), but for ForwardMarkHeader, which says
	// which routes already passed it on (loops). The smuggling check
	// applies as to every message.
	Forward bool
}

// ForwardMarkHeader is the field a forward adds on top of the message it
// passes on, one per forward: `X-Postline-Forwarded-By: ROUTE@DOMAIN`.
// Forward mode keeps it, so that a message that comes back through a
// route it already passed is known (internal/mailforward).
const ForwardMarkHeader = "X-Postline-Forwarded-By"

// RawPrepared is a submitted message made ready to queue.
type RawPrepared struct {
	Data      []byte   // header (rewritten) + body (as the client sent it)
	From      []string // header From addresses
	MessageID string   // without angle brackets
	Subject   string
	Tags      []string
	Track     string // X-Postline-Track as given ("" when absent)
	// Domain is the domain that sends and signs: the one the first From
	// is at, or RawInput.Domain.
	Domain domain.Domain
	// HTML is the decoded first HTML part: the page click tokens index.
	HTML string
	// The sender features as headers: a stored template (the message's
	// own body is then not sent), its variables, a delivery time.
	Template, TemplateVersion, Variables, DeliverAt string
	FromName                                        string
}

// maxRawTags bounds X-Postline-Tag headers, as tags bound the API's field.
const maxRawTags = 10

// PrepareRaw is the one intake of whole messages, whatever door they came
// through, so that each gets the same checks. It refuses bare CR and NUL
// (ErrUnsafeBytes), applies the sender rules (ErrSenderHeader: exactly one
// From, at most one Sender, Resent-* fields in blocks with one of each,
// every From, Sender, Resent-From and Resent-Sender address at in.Senders),
// removes what must not be sent (Bcc, the trace and authentication fields
// a client has no business writing, the X-Postline-* instructions once
// read), adds Message-ID and Date when missing, keeps the body byte for
// byte and picks the HTML that tracking rewrites. Other refusals are
// apperr.Invalid on the field "message". Nothing from the envelope is
// written into the header.
func (s *Service) PrepareRaw(ctx context.Context, in RawInput) (RawPrepared, error) {
	if err := message.CheckUnsafeBytes(in.Data); err != nil {
		msg := "The message contains " + strings.TrimPrefix(err.Error(), "message: ") +
			": refused, as a next hop could read it as the end of the message (SMTP smuggling)."
		return RawPrepared{}, &apperr.Error{Code: apperr.Invalid, Message: msg, Fields: map[string][]string{"message": {msg}}, Err: err}
	}
	br := bufio.NewReader(bytes.NewReader(in.Data))
	h, err := textproto.ReadHeader(br)
	if err != nil {
		return RawPrepared{}, rawError("The message header cannot be parsed: " + err.Error())
	}
	body, _ := io.ReadAll(br) // from memory: cannot fail
	var p RawPrepared
	if in.Forward {
		if in.Domain == nil {
			return RawPrepared{}, errors.New("sending: a forwarded message needs the route's domain")
		}
		p.Domain = *in.Domain
	} else if p.Domain, err = checkRawSenders(ctx, h, in); err != nil {
		return RawPrepared{}, err
	}
	mh := mail.Header{Header: gomessage.Header{Header: h}}
	if addrs, err := mh.AddressList("From"); err == nil {
		for _, a := range addrs {
			p.From = append(p.From, a.Address)
		}
		if len(addrs) > 0 {
			p.FromName = addrs[0].Name
		}
	}
	p.Subject, _ = mh.Subject()
	h.Del("Bcc")
	h.Del("Resent-Bcc")
	if !in.Forward {
		if err := readInstructions(h, &p); err != nil {
			return RawPrepared{}, err
		}
	}
	removeTrace(&h, in.Forward)
	idDomain := p.Domain.Name
	if len(p.From) > 0 && hostOf(p.From[0]) != "" {
		idDomain = hostOf(p.From[0])
	}
	if id, err := mh.MessageID(); err == nil && id != "" {
		p.MessageID = id
	} else {
		id := message.NewMessageID(idDomain)
		h.Set("Message-Id", id)
		p.MessageID = strings.Trim(id, "<>")
	}
	if h.Get("Date") == "" {
		h.Set("Date", s.cfg.Now().Format(time.RFC1123Z))
	}
	var out bytes.Buffer
	if err := textproto.WriteHeader(&out, h); err != nil {
		return RawPrepared{}, rawError("The message header cannot be written back: " + err.Error())
	}
	out.Write(body)
	p.Data = out.Bytes()
	p.HTML = tracking.FirstHTML(p.Data)
	return p, nil
}

// readInstructions reads the X-Postline-* fields a submitter may write
// (tags, tracking, a template and its variables, a delivery time).
func readInstructions(h textproto.Header, p *RawPrepared) error {
	for _, v := range h.Values("X-Postline-Tag") {
		for t := range strings.SplitSeq(v, ",") {
			if t = strings.TrimSpace(t); t != "" {
				p.Tags = append(p.Tags, t)
			}
		}
	}
	if len(p.Tags) > maxRawTags {
		return rawError("At most 10 X-Postline-Tag values")
	}
	if bad := tagsProblem(strings.Join(p.Tags, ",")); bad != "" {
		return rawError("X-Postline-Tag: " + bad)
	}
	p.Track = strings.ToLower(strings.ReplaceAll(h.Get("X-Postline-Track"), " ", ""))
	if p.Track != "" && p.Track != "none" {
		for _, v := range strings.Split(p.Track, ",") {
			if v != "opens" && v != "clicks" {
				return rawError("X-Postline-Track must be opens, clicks, opens,clicks or none, got " + h.Get("X-Postline-Track"))
			}
		}
	}
	for name, dst := range map[string]*string{"X-Postline-Template": &p.Template, "X-Postline-Template-Version": &p.TemplateVersion,
		"X-Postline-Variables": &p.Variables, "X-Postline-Deliver-At": &p.DeliverAt} {
		*dst = strings.TrimSpace(h.Get(name))
	}
	return nil
}

// removeTrace removes the fields a submitter may not write: the ones the
// API refuses as custom headers too (message.TraceHeaders). A forwarded
// message keeps its trace and authentication fields (they say where it
// came from) but loses Return-Path, which only final delivery writes
// (RFC 5321 §4.4), and every X-Postline-* field but its forward marks.
func removeTrace(h *textproto.Header, forward bool) {
	var gone []string // not deleted while iterating: Del shifts the fields
	for f := h.Fields(); f.Next(); {
		k := f.Key()
		switch {
		case !forward && message.IsTraceHeader(k),
			forward && (strings.EqualFold(k, "Return-Path") || hasPrefixFold(k, "X-Postline-") && !strings.EqualFold(k, ForwardMarkHeader)):
			gone = append(gone, k)
		}
	}
	for _, k := range gone {
		h.Del(k) // every field of the name
	}
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// rawError is a message that cannot be queued, named as the message.
func rawError(msg string) error { return apperr.Field("message", msg) }
