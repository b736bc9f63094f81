package inboundpost

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"

	"github.com/postline/postline/internal/receiving"
)

// mailgunFields are Mailgun's fields of a forward (and of a stored
// notification, with message-url), attachments aside.
func mailgunFields(p Post, m message, sig signature, messageURL string) [][2]string {
	headers := plainJSON(headerList(m.parsed.Headers))
	cids := plainJSON(m.parsed.ContentIDMap(func(a receiving.Attachment) string { return "attachment-" + strconv.Itoa(a.Index) }))
	f := [][2]string{{"recipient", p.Recipient}, {"sender", p.Sender}, {"from", m.from}, {"subject", m.subject},
		{"body-plain", m.parsed.BodyPlain}, {"body-html", m.parsed.BodyHTML},
		{"stripped-text", m.stripped.Text}, {"stripped-signature", m.stripped.Signature}, {"stripped-html", m.html},
		{"message-headers", headers}, {"attachment-count", strconv.Itoa(len(m.parsed.Attachments))},
		{"content-id-map", cids},
		{"timestamp", sig.Timestamp}, {"token", sig.Token}, {"signature", sig.Signature}}
	if messageURL != "" {
		f = append(f, [2]string{"message-url", messageURL})
	}
	return f
}

// plainJSON is v's JSON as Mailgun writes it: "<" and ">" (message ids,
// content ids) as they are, not escaped for HTML.
func plainJSON(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(v) //nolint:errcheck // strings and maps of strings
	return strings.TrimSuffix(b.String(), "\n")
}

// headerList is the header as a JSON list of [name, value] pairs (never
// null).
func headerList(h [][2]string) [][2]string {
	if h == nil {
		return [][2]string{}
	}
	return h
}

// mailgunBody is the post in Mailgun's format: multipart/form-data with
// the attachments as files attachment-1..N when there are any, else
// application/x-www-form-urlencoded.
func mailgunBody(p Post, m message, sig signature, messageURL string) ([]byte, string, error) {
	fields := mailgunFields(p, m, sig, messageURL)
	if len(m.parsed.Attachments) == 0 {
		v := url.Values{}
		for _, f := range fields {
			v.Add(f[0], f[1])
		}
		return []byte(v.Encode()), "application/x-www-form-urlencoded", nil
	}
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for _, f := range fields {
		if err := w.WriteField(f[0], f[1]); err != nil {
			return nil, "", err
		}
	}
	for i, a := range m.parsed.Attachments {
		part, err := w.CreatePart(filePart(a))
		if err != nil {
			return nil, "", err
		}
		if i < len(m.data) {
			part.Write(m.data[i]) //nolint:errcheck // a bytes.Buffer
		}
	}
	if err := w.Close(); err != nil {
		return nil, "", err
	}
	return b.Bytes(), w.FormDataContentType(), nil
}

// filePart is the header of attachment a's file part. One without a file
// name is named attachment-N: frameworks drop file parts without one.
func filePart(a receiving.Attachment) textproto.MIMEHeader {
	name := a.Filename
	if name == "" {
		name = "attachment-" + strconv.Itoa(a.Index)
	}
	esc := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\r", "", "\n", "")
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="attachment-`+strconv.Itoa(a.Index)+`"; filename="`+esc.Replace(name)+`"`)
	h.Set("Content-Type", a.ContentType)
	return h
}
