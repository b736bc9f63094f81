package inboundpost

import (
	"bufio"
	"bytes"
	"mime"
	"net/mail"
	"net/textproto"
	"strings"

	gomessage "github.com/emersion/go-message"
	"github.com/postline/postline/internal/receiving"
	"github.com/postline/postline/internal/replystrip"
)

// message is a received message read for posting.
type message struct {
	raw      []byte
	parsed   receiving.Parsed
	data     [][]byte // each attachment's bytes
	header   textproto.MIMEHeader
	subject  string
	from     string
	stripped replystrip.Stripped
	html     string // stripped HTML
}

var wordDecoder = &mime.WordDecoder{CharsetReader: gomessage.CharsetReader}

// decoded is a field's value with its RFC 2047 words decoded.
func decoded(v string) string {
	if d, err := wordDecoder.DecodeHeader(v); err == nil {
		return d
	}
	return v
}

func readMessage(raw []byte) message {
	h, _ := textproto.NewReader(bufio.NewReader(bytes.NewReader(raw))).ReadMIMEHeader()
	if h == nil {
		h = textproto.MIMEHeader{}
	}
	m := message{raw: raw, header: h, subject: decoded(h.Get("Subject")), from: decoded(h.Get("From"))}
	m.parsed, m.data = receiving.ParseAll(raw)
	m.stripped = replystrip.Text(m.parsed.BodyPlain)
	m.html = replystrip.HTML(m.parsed.BodyHTML)
	return m
}

// address is one address of an address field, as Postmark shows it.
type address struct {
	Email       string
	Name        string
	MailboxHash string
}

// addresses reads a field's addresses; a value that does not parse gives
// itself as one address.
func (m message) addresses(field string) []address {
	v := m.header.Get(field)
	if strings.TrimSpace(v) == "" {
		return []address{}
	}
	list, err := (&mail.AddressParser{WordDecoder: wordDecoder}).ParseList(v)
	if err != nil {
		return []address{{Email: strings.TrimSpace(decoded(v))}}
	}
	out := make([]address, len(list))
	for i, a := range list {
		out[i] = address{Email: a.Address, Name: a.Name, MailboxHash: mailboxHash(a.Address)}
	}
	return out
}

// mailboxHash is the part of an address's local part after "+" (Postmark's
// MailboxHash), "" when none.
func mailboxHash(addr string) string {
	local, _, _ := strings.Cut(addr, "@")
	_, hash, _ := strings.Cut(local, "+")
	return hash
}
