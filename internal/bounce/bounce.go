package bounce

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/emersion/go-message"
	"github.com/emersion/go-message/textproto"
)

// Kind classifies a Report.
type Kind string

// The kinds of Report; see the package documentation for what each means.
const (
	KindPermanent Kind = "permanent"
	KindTemporary Kind = "temporary"
	KindComplaint Kind = "complaint"
	KindUnknown   Kind = "unknown"
)

// Report is what one bounce or complaint says about one recipient.
type Report struct {
	Kind Kind
	// Recipient is the failed or complained-about address, lower-case;
	// empty when none could be found (Kind is then usually KindUnknown).
	Recipient string
	// Status is the enhanced status code ("5.1.1"); empty for complaints.
	Status string
	// DiagnosticCode is the remote server's reply, e.g.
	// "smtp; 550 5.1.1 user unknown".
	DiagnosticCode string
	// RemoteMTA is the host that gave the reply, without its "dns;" type.
	RemoteMTA string
	// OriginalMessageID is the Message-ID of the bounced message in its
	// "<id@domain>" form, when present.
	OriginalMessageID string
	// FeedbackType is the ARF Feedback-Type (abuse, fraud, ...), lower-case;
	// complaints only.
	FeedbackType string
}

// Limits applied to every input; see the package documentation.
const (
	DefaultMaxBytes = 10 << 20 // used when Parse is given maxBytes <= 0
	MaxParts        = 100      // MIME entities visited
	MaxDepth        = 8        // multipart nesting
	MaxRecipients   = 100      // reports returned per message
	MaxFieldLen     = 1000     // bytes kept of any field value
	maxTextBytes    = 256 << 10
)

// ErrTooLarge is returned by Parse for input longer than maxBytes.
var ErrTooLarge = errors.New("bounce: message exceeds the size limit")

// Parse reads one inbound message and returns a Report per failed or
// complained-about recipient. A message that is not a bounce or a complaint,
// or a delivery report that only announces successful deliveries, gives an
// empty slice. The error is non-nil only when r fails or the message is
// longer than maxBytes (ErrTooLarge); malformed messages are parsed as far as
// they go.
func Parse(r io.Reader, maxBytes int64) ([]Report, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	raw, err := io.ReadAll(io.LimitReader(r, maxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("bounce: reading message: %w", err)
	}
	if int64(len(raw)) > maxBytes {
		return nil, ErrTooLarge
	}
	var p parts
	ent, err := message.Read(bytes.NewReader(raw))
	if ent == nil {
		return []Report{}, nil // no readable header: not a bounce
	}
	_ = err // unknown charset or encoding: the raw body is still readable
	p.walk(ent, 0)
	return p.reports(ent.Header.Header), nil
}

// parts holds what the MIME walk found, bounded by the package limits.
type parts struct {
	n        int
	dsn      [][]byte // message/delivery-status bodies
	feedback [][]byte // message/feedback-report bodies
	original *textproto.Header
	text     bytes.Buffer // text/plain bodies
	html     bytes.Buffer // text/html bodies, read when there is no text
}

func (p *parts) walk(e *message.Entity, depth int) {
	p.n++
	if p.n > MaxParts || depth > MaxDepth {
		return
	}
	if mr := e.MultipartReader(); mr != nil {
		for p.n < MaxParts {
			part, err := mr.NextPart()
			if part == nil || (err != nil && !isDecodeErr(err)) {
				return
			}
			p.walk(part, depth+1)
		}
		return
	}
	mt, _, _ := e.Header.ContentType()
	switch mt {
	case "message/delivery-status", "message/global-delivery-status":
		p.dsn = append(p.dsn, readSome(e.Body, maxTextBytes))
	case "message/feedback-report":
		p.feedback = append(p.feedback, readSome(e.Body, maxTextBytes))
	case "message/rfc822", "text/rfc822-headers", "message/global", "message/global-headers":
		if p.original == nil {
			h := readHeader(readSome(e.Body, maxTextBytes))
			p.original = &h
		}
	case "text/html":
		p.html.Write(readSome(e.Body, maxTextBytes-p.html.Len()))
	case "", "text/plain":
		p.text.Write(readSome(e.Body, maxTextBytes-p.text.Len()))
		p.text.WriteString("\n")
	}
}

func isDecodeErr(err error) bool {
	return message.IsUnknownCharset(err) || message.IsUnknownEncoding(err)
}

// readSome reads at most n bytes, keeping what was read before an error
// (a truncated part still tells what it can).
func readSome(r io.Reader, n int) []byte {
	if n <= 0 {
		return nil
	}
	b, _ := io.ReadAll(io.LimitReader(r, int64(n)))
	return b
}

// readHeader parses as much of a header block as is well-formed.
func readHeader(b []byte) textproto.Header {
	h, _ := textproto.ReadHeader(bufio.NewReader(bytes.NewReader(b)))
	return h
}

func (p *parts) reports(top textproto.Header) []Report {
	var out []Report
	msgID := ""
	if p.original != nil {
		msgID = messageID(p.original.Get("Message-Id"))
	}
	switch {
	case len(p.feedback) > 0:
		out = p.complaints()
	case len(p.dsn) > 0:
		out = dsnReports(p.dsn)
	default:
		text := p.text.String()
		if strings.TrimSpace(text) == "" {
			text = stripTags(p.html.String())
		}
		out = textReports(top, text)
		msgID = cmp.Or(msgID, originalID(text))
	}
	msgID = cmp.Or(msgID, messageID(top.Get("In-Reply-To")), messageID(top.Get("References")))
	for i := range out {
		out[i].OriginalMessageID = msgID
	}
	return out
}

// messageID returns the first "<...>" token of a Message-ID, In-Reply-To or
// References value, or the whole trimmed value when it has no brackets.
func messageID(v string) string {
	v = clip(strings.TrimSpace(v))
	if i := strings.IndexByte(v, '<'); i >= 0 {
		if j := strings.IndexByte(v[i:], '>'); j > 0 {
			return v[i : i+j+1]
		}
	}
	if v == "" || strings.ContainsAny(v, " \t<>") {
		return ""
	}
	return "<" + v + ">"
}

// clip bounds a field value to MaxFieldLen bytes.
func clip(s string) string {
	if len(s) > MaxFieldLen {
		return s[:MaxFieldLen]
	}
	return s
}
