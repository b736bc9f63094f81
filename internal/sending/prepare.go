package sending

import (
	"bufio"
	"bytes"
	"io"
	"strings"
	"time"

	gomessage "github.com/emersion/go-message"
	"github.com/emersion/go-message/mail"
	"github.com/emersion/go-message/textproto"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/message"
)

// RawPrepared is a submitted message (SMTP, or the /v3/ API's
// messages.mime) made ready to queue.
type RawPrepared struct {
	Data      []byte   // header (rewritten) + body (as the client sent it)
	From      []string // header From addresses
	MessageID string   // without angle brackets
	Subject   string
	Tags      []string
	Track     string // X-Postline-Track as given ("" when absent)
	// The sender features as headers: a stored template (the message's
	// own body is then not sent), its variables, a delivery time.
	Template, TemplateVersion, Variables, DeliverAt string
	FromName                                        string
}

// maxRawTags bounds X-Postline-Tag headers, as tags bound the API's field.
const maxRawTags = 10

// prepare reads the header of a submitted message, removes what must not
// be sent (Bcc, the X-Postline-* instructions), adds Message-ID and Date
// when missing, and keeps the body byte for byte. Nothing from the
// envelope is written into the header.
func PrepareRaw(raw []byte, idDomain string, now time.Time) (RawPrepared, error) {
	br := bufio.NewReader(bytes.NewReader(raw))
	h, err := textproto.ReadHeader(br)
	if err != nil {
		return RawPrepared{}, rawError("The message header cannot be parsed: " + err.Error())
	}
	body, _ := io.ReadAll(br) // from memory: cannot fail
	mh := mail.Header{Header: gomessage.Header{Header: h}}
	var p RawPrepared
	addrs, err := mh.AddressList("From")
	if err != nil || len(addrs) == 0 {
		return RawPrepared{}, rawError("The message needs a From header with an address")
	}
	for _, a := range addrs {
		p.From = append(p.From, a.Address)
	}
	p.FromName = addrs[0].Name
	p.Subject, _ = mh.Subject()
	for _, f := range []string{"Bcc", "Resent-Bcc"} {
		h.Del(f)
	}
	for _, v := range h.Values("X-Postline-Tag") {
		for t := range strings.SplitSeq(v, ",") {
			if t = strings.TrimSpace(t); t != "" {
				p.Tags = append(p.Tags, t)
			}
		}
	}
	if len(p.Tags) > maxRawTags {
		return RawPrepared{}, rawError("At most 10 X-Postline-Tag values")
	}
	p.Track = strings.ToLower(strings.ReplaceAll(h.Get("X-Postline-Track"), " ", ""))
	if p.Track != "" && p.Track != "none" {
		for _, v := range strings.Split(p.Track, ",") {
			if v != "opens" && v != "clicks" {
				return RawPrepared{}, rawError("X-Postline-Track must be opens, clicks, opens,clicks or none, got " + h.Get("X-Postline-Track"))
			}
		}
	}
	h.Del("X-Postline-Tag")
	h.Del("X-Postline-Track")
	for name, dst := range map[string]*string{"X-Postline-Template": &p.Template, "X-Postline-Template-Version": &p.TemplateVersion,
		"X-Postline-Variables": &p.Variables, "X-Postline-Deliver-At": &p.DeliverAt} {
		*dst = strings.TrimSpace(h.Get(name))
		h.Del(name)
	}
	if id, err := mh.MessageID(); err == nil && id != "" {
		p.MessageID = id
	} else {
		id := message.NewMessageID(idDomain)
		h.Set("Message-Id", id)
		p.MessageID = strings.Trim(id, "<>")
	}
	if h.Get("Date") == "" {
		h.Set("Date", now.Format(time.RFC1123Z))
	}
	var out bytes.Buffer
	if err := textproto.WriteHeader(&out, h); err != nil {
		return RawPrepared{}, rawError("The message header cannot be written back: " + err.Error())
	}
	out.Write(body)
	p.Data = out.Bytes()
	return p, nil
}

// rawError is a message that cannot be queued, named as the message.
func rawError(msg string) error { return apperr.Field("message", msg) }
