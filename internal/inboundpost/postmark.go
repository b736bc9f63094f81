package inboundpost

import (
	"encoding/base64"
	"encoding/json"
	"strings"
)

// postmarkJSON is Postmark's inbound webhook body.
type postmarkJSON struct {
	From              string
	FromName          string
	FromFull          address
	To                string
	ToFull            []address
	Cc                string
	CcFull            []address
	OriginalRecipient string
	Subject           string
	MessageID         string
	ReplyTo           string
	MailboxHash       string
	Date              string
	TextBody          string
	HtmlBody          string
	StrippedTextReply string
	Tag               string
	Headers           []postmarkHeader
	Attachments       []postmarkAttachment
	// MessageURL is a stored notification's stored message (Postline's
	// addition; absent in forwards).
	MessageURL string `json:",omitempty"`
}

type postmarkHeader struct{ Name, Value string }

type postmarkAttachment struct {
	Name          string
	Content       string // base64
	ContentType   string
	ContentLength int
	ContentID     string
}

// postmarkBody is the post in Postmark's inbound JSON (format json).
func postmarkBody(p Post, m message, messageURL string) ([]byte, string, error) {
	from := address{}
	if list := m.addresses("From"); len(list) > 0 {
		from = list[0]
	}
	v := postmarkJSON{From: from.Email, FromName: from.Name, FromFull: from, To: m.header.Get("To"), ToFull: m.addresses("To"),
		Cc: m.header.Get("Cc"), CcFull: m.addresses("Cc"), OriginalRecipient: p.Recipient, Subject: m.subject,
		MessageID: strings.Trim(strings.TrimSpace(m.header.Get("Message-Id")), "<>"), ReplyTo: m.header.Get("Reply-To"),
		MailboxHash: mailboxHash(p.Recipient), Date: m.header.Get("Date"), TextBody: m.parsed.BodyPlain, HtmlBody: m.parsed.BodyHTML,
		StrippedTextReply: m.stripped.Text, Headers: []postmarkHeader{}, Attachments: []postmarkAttachment{}, MessageURL: messageURL}
	for _, h := range m.parsed.Headers {
		v.Headers = append(v.Headers, postmarkHeader{Name: h[0], Value: h[1]})
	}
	for i, a := range m.parsed.Attachments {
		var data []byte
		if i < len(m.data) {
			data = m.data[i]
		}
		v.Attachments = append(v.Attachments, postmarkAttachment{Name: a.Filename, Content: base64.StdEncoding.EncodeToString(data),
			ContentType: a.ContentType, ContentLength: len(data), ContentID: a.ContentID})
	}
	b, err := json.Marshal(v)
	return b, "application/json", err
}
