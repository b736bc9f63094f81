package tracking

import (
	"bytes"
	"io"
	"mime"
	"strings"

	gomessage "github.com/emersion/go-message"

	"github.com/postline/postline/internal/domain"
)

// FirstHTML returns the decoded body of the first text/html part of a
// MIME message that is not an attachment ("" when none): the HTML whose
// links click tokens count, for messages submitted over SMTP.
func FirstHTML(raw []byte) string {
	e, err := gomessage.Read(bytes.NewReader(raw))
	if err != nil && !gomessage.IsUnknownCharset(err) && !gomessage.IsUnknownEncoding(err) {
		return ""
	}
	var html string
	e.Walk(func(_ []int, part *gomessage.Entity, err error) error { //nolint:errcheck // best effort
		if err != nil || html != "" || !isBodyPart(part, "text/html") {
			return nil
		}
		b, _ := io.ReadAll(part.Body)
		html = string(b)
		return nil
	})
	return html
}

func isBodyPart(e *gomessage.Entity, want string) bool {
	t, _, _ := e.Header.ContentType()
	if !strings.EqualFold(t, want) {
		return false
	}
	disp, _, _ := mime.ParseMediaType(e.Header.Get("Content-Disposition"))
	return disp != "attachment"
}

// ApplyRaw does Apply's work on a message submitted over SMTP: the first
// HTML part gets click URLs and the pixel, text and HTML parts the
// unsubscribe URL for the placeholder, and the header List-Unsubscribe.
// Parts are re-encoded as they were; a message that cannot be parsed is
// returned unchanged. opens and clicks are the switches in force for this
// message (the domain's, or X-Postline-Track's).
func (u URLs) ApplyRaw(raw []byte, dom domain.Domain, id int64, opens, clicks bool) []byte {
	td := dom.TrackingDomain
	unsub := ""
	if dom.Tracking.Unsubscribe {
		unsub = u.URL(td, Token{Kind: Unsubscribe, DeliveryID: id})
	}
	if !opens && !clicks && unsub == "" {
		return raw
	}
	e, err := gomessage.Read(bytes.NewReader(raw))
	if err != nil {
		return raw
	}
	if unsub != "" {
		lu := "<" + unsub + ">"
		if u.mailto && dom.AuthDomain != "" {
			lu += ", <mailto:" + MailtoLocal + u.signer.Encode(Token{Kind: Unsubscribe, DeliveryID: id}) + "@" + dom.AuthDomain + ">"
		}
		e.Header.Set("List-Unsubscribe", lu)
		e.Header.Set("List-Unsubscribe-Post", "List-Unsubscribe=One-Click")
	}
	done := false
	// The order is Apply's: links are counted in the HTML as submitted
	// (the click handler counts them there too), before the placeholder
	// becomes a URL.
	rewrite := func(ct, body string) string {
		first := ct == "text/html" && !done
		if first {
			done = true
			if clicks {
				body = Rewrite(body, func(i int, _ string) string { return u.URL(td, Token{Kind: Click, DeliveryID: id, Link: i}) })
			}
		}
		if unsub != "" {
			body = strings.ReplaceAll(body, UnsubscribePlaceholder, unsub)
		}
		if first && opens {
			body = AddPixel(body, u.URL(td, Token{Kind: Open, DeliveryID: id}))
		}
		return body
	}
	var out bytes.Buffer
	if err := copyEntity(&out, e, rewrite); err != nil {
		return raw
	}
	return out.Bytes()
}

// copyEntity writes e to w, passing the decoded bodies of its text/plain
// and text/html parts (not attachments) through rewrite.
func copyEntity(w io.Writer, e *gomessage.Entity, rewrite func(ct, body string) string) error {
	mw, err := gomessage.CreateWriter(w, e.Header)
	if err != nil {
		return err
	}
	if mr := e.MultipartReader(); mr != nil {
		for {
			p, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
			pw, err := mw.CreatePart(p.Header)
			if err != nil {
				return err
			}
			if err := copyBody(pw, p, rewrite); err != nil {
				return err
			}
			if err := pw.Close(); err != nil {
				return err
			}
		}
		return mw.Close()
	}
	if err := copyBodyOnly(mw, e, rewrite); err != nil {
		return err
	}
	return mw.Close()
}

// copyBody writes a part: nested multiparts recursively, text rewritten.
func copyBody(pw *gomessage.Writer, p *gomessage.Entity, rewrite func(ct, body string) string) error {
	if mr := p.MultipartReader(); mr != nil {
		for {
			sub, err := mr.NextPart()
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			sw, err := pw.CreatePart(sub.Header)
			if err != nil {
				return err
			}
			if err := copyBody(sw, sub, rewrite); err != nil {
				return err
			}
			if err := sw.Close(); err != nil {
				return err
			}
		}
	}
	return copyBodyOnly(pw, p, rewrite)
}

func copyBodyOnly(w io.Writer, e *gomessage.Entity, rewrite func(ct, body string) string) error {
	for _, ct := range []string{"text/html", "text/plain"} {
		if isBodyPart(e, ct) {
			b, err := io.ReadAll(e.Body)
			if err != nil {
				return err
			}
			_, err = io.WriteString(w, rewrite(ct, string(b)))
			return err
		}
	}
	_, err := io.Copy(w, e.Body)
	return err
}
