package submission

import (
	"bufio"
	"bytes"
	"io"
	"strings"
	"time"

	gomessage "github.com/emersion/go-message"
	"github.com/emersion/go-message/mail"
	"github.com/emersion/go-message/textproto"

	"github.com/postline/postline/internal/message"
)

// prepared is a submitted message made ready to queue.
type prepared struct {
	data      []byte   // header (rewritten) + body (as the client sent it)
	from      []string // header From addresses
	messageID string   // without angle brackets
	subject   string
	tags      []string
	track     string // X-Postline-Track as given ("" when absent)
}

// maxTags bounds X-Postline-Tag headers, as tags bound the API's field.
const maxTags = 10

// prepare reads the header of a submitted message, removes what must not
// be sent (Bcc, the X-Postline-* instructions), adds Message-ID and Date
// when missing, and keeps the body byte for byte. Nothing from the
// envelope is written into the header.
func prepare(raw []byte, idDomain string, now time.Time) (prepared, error) {
	br := bufio.NewReader(bytes.NewReader(raw))
	h, err := textproto.ReadHeader(br)
	if err != nil {
		return prepared{}, badMessage("The message header cannot be parsed: " + err.Error())
	}
	body, _ := io.ReadAll(br) // from memory: cannot fail
	mh := mail.Header{Header: gomessage.Header{Header: h}}
	var p prepared
	addrs, err := mh.AddressList("From")
	if err != nil || len(addrs) == 0 {
		return prepared{}, badMessage("The message needs a From header with an address")
	}
	for _, a := range addrs {
		p.from = append(p.from, a.Address)
	}
	p.subject, _ = mh.Subject()
	for _, f := range []string{"Bcc", "Resent-Bcc"} {
		h.Del(f)
	}
	for _, v := range h.Values("X-Postline-Tag") {
		for t := range strings.SplitSeq(v, ",") {
			if t = strings.TrimSpace(t); t != "" {
				p.tags = append(p.tags, t)
			}
		}
	}
	if len(p.tags) > maxTags {
		return prepared{}, badMessage("At most 10 X-Postline-Tag values")
	}
	p.track = strings.ToLower(strings.ReplaceAll(h.Get("X-Postline-Track"), " ", ""))
	if p.track != "" && p.track != "none" {
		for _, v := range strings.Split(p.track, ",") {
			if v != "opens" && v != "clicks" {
				return prepared{}, badMessage("X-Postline-Track must be opens, clicks, opens,clicks or none, got " + h.Get("X-Postline-Track"))
			}
		}
	}
	h.Del("X-Postline-Tag")
	h.Del("X-Postline-Track")
	if id, err := mh.MessageID(); err == nil && id != "" {
		p.messageID = id
	} else {
		id := message.NewMessageID(idDomain)
		h.Set("Message-Id", id)
		p.messageID = strings.Trim(id, "<>")
	}
	if h.Get("Date") == "" {
		h.Set("Date", now.Format(time.RFC1123Z))
	}
	var out bytes.Buffer
	if err := textproto.WriteHeader(&out, h); err != nil {
		return prepared{}, badMessage("The message header cannot be written back: " + err.Error())
	}
	out.Write(body)
	p.data = out.Bytes()
	return p, nil
}
