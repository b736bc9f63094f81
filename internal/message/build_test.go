package message_test

import (
	"bytes"
	"flag"
	"mime"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-message/mail"

	"github.com/postline/postline/internal/message"
)

var update = flag.Bool("update", false, "rewrite the golden .eml files in testdata")

// fixedID and fixedDate make Build's output, boundaries included, stable.
const fixedID = "<m3x1q2.abcdefghijklmnopqrstuvwx@example.com>"

var fixedDate = time.Date(2026, 3, 14, 15, 9, 26, 0, time.FixedZone("CET", 3600))

// base is the smallest valid Params; each case changes what it tests.
func base() message.Params {
	return message.Params{
		From:      "sender@example.com",
		To:        "rcpt@example.net",
		Subject:   "Your receipt",
		Text:      "Hello,\n\nThanks for your order.\n",
		MessageID: fixedID,
		Date:      fixedDate,
	}
}

const html = "<!doctype html>\n<html><body><p>Hello,</p>\n<p>Thanks for your <b>order</b>.</p></body></html>\n"

var pdf = bytes.Repeat([]byte("%PDF-1.4 not really a PDF\n"), 12)

// goldenCases are the messages kept in testdata/<name>.eml.
var goldenCases = []struct {
	name    string
	mod     func(*message.Params)
	wantTop string // top-level media type
}{
	{"text_only", func(p *message.Params) {
		p.Text = "Line one\nLine two\r\nLine three\rLast, with no break: " + strings.Repeat("long-", 250)
	}, "text/plain"},
	{"text_html", func(p *message.Params) { p.HTML = html }, "multipart/alternative"},
	{"attachments", func(p *message.Params) {
		p.HTML = html
		p.Attachments = []message.Attachment{
			{Filename: "invoice-2026-03.pdf", ContentType: "application/pdf", Data: pdf},
			{Filename: "Résumé – été 2026 ✓.txt", ContentType: "text/plain; charset=UTF-8", Data: []byte("naïve café\n")},
		}
	}, "multipart/mixed"},
	{"text_attachment", func(p *message.Params) {
		p.Attachments = []message.Attachment{{Filename: "data.csv", ContentType: "", Data: []byte("a,b\n1,2\n")}}
	}, "multipart/mixed"},
	{"unicode", func(p *message.Params) {
		p.FromName = "Zoë Ünicode 🎉"
		p.Subject = "Your order 🚀 is on its way — naïve café, straße, 日本語 and a long tail to fold"
		p.Text = "Grüße aus Köln 👋\n日本語のテキスト\n"
	}, "text/plain"},
	{"custom_headers", func(p *message.Params) {
		p.FromName = "Acme, Inc."
		p.ReplyTo = "support@example.com"
		p.Headers = map[string]string{
			"X-Campaign": "spring-2026",
			"X-Greeting": "héllo wörld",
			"X-Long":     strings.TrimSpace(strings.Repeat("token ", 40)),
		}
		p.ListUnsubscribe = "<https://t.example.com/u/abc123>, <mailto:unsubscribe@example.com?subject=abc123>"
		p.ExtraHeaders = map[string]string{"X-Postline-ID": "42"}
	}, "text/plain"},
}

func TestBuildGolden(t *testing.T) {
	t.Parallel()
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := base()
			tc.mod(&p)
			msg, err := message.Build(p)
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			checkLines(t, msg)
			golden(t, tc.name, msg)

			got := parse(t, msg)
			if got.top != tc.wantTop {
				t.Errorf("top-level Content-Type = %q, want %q", got.top, tc.wantTop)
			}
			checkHeader(t, p, got.header)
			want := wantParts(p)
			if len(got.parts) != len(want) {
				t.Fatalf("got %d parts %+v, want %d", len(got.parts), got.parts, len(want))
			}
			for i := range want {
				if got.parts[i] != want[i] {
					t.Errorf("part %d:\n got %+v\nwant %+v", i, got.parts[i], want[i])
				}
			}
			again, _ := message.Build(p)
			if !bytes.Equal(again, msg) {
				t.Error("Build is not deterministic for equal Params")
			}
		})
	}
}

// checkHeader asserts that every field of p reads back as given.
func checkHeader(t *testing.T, p message.Params, h mail.Header) {
	t.Helper()
	addr := func(key, wantName, wantAddr string) {
		t.Helper()
		l, err := h.AddressList(key)
		if err != nil || len(l) != 1 || l[0].Name != wantName || l[0].Address != wantAddr {
			t.Errorf("%s = %v (%v), want one address %q <%s>", key, l, err, wantName, wantAddr)
		}
	}
	addr("From", p.FromName, p.From)
	addr("To", "", p.To)
	if p.ReplyTo != "" {
		addr("Reply-To", "", p.ReplyTo)
	} else if h.Has("Reply-To") {
		t.Error("Reply-To written though not set")
	}
	if s, err := h.Subject(); err != nil || s != p.Subject {
		t.Errorf("Subject = %q (%v), want %q", s, err, p.Subject)
	}
	if d, err := h.Date(); err != nil || !d.Equal(p.Date) {
		t.Errorf("Date = %v (%v), want %v", d, err, p.Date)
	}
	if id, err := h.MessageID(); err != nil || "<"+id+">" != p.MessageID {
		t.Errorf("Message-ID = %q (%v), want %q", id, err, p.MessageID)
	}
	if v := h.Get("MIME-Version"); v != "1.0" {
		t.Errorf("MIME-Version = %q", v)
	}
	for k, want := range p.Headers {
		if got, err := h.Text(k); err != nil || got != want {
			t.Errorf("header %s = %q (%v), want %q", k, got, err, want)
		}
	}
	for k, want := range p.ExtraHeaders {
		if got := h.Get(k); got != want {
			t.Errorf("extra header %s = %q, want %q", k, got, want)
		}
	}
	wantPost := ""
	if p.ListUnsubscribe != "" {
		wantPost = "List-Unsubscribe=One-Click"
	}
	if got := h.Get("List-Unsubscribe"); got != p.ListUnsubscribe {
		t.Errorf("List-Unsubscribe = %q, want %q", got, p.ListUnsubscribe)
	}
	if got := h.Get("List-Unsubscribe-Post"); got != wantPost {
		t.Errorf("List-Unsubscribe-Post = %q, want %q", got, wantPost)
	}
}

// wantParts is what parse should find for p: quoted-printable gives line
// breaks back as CRLF, and a text-only message gains a final line break.
func wantParts(p message.Params) []part {
	crlf := strings.NewReplacer("\r\n", "\r\n", "\r", "\r\n", "\n", "\r\n")
	text := p.Text
	if p.HTML == "" && len(p.Attachments) == 0 && !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	parts := []part{{mediaType: "text/plain", charset: "utf-8", body: crlf.Replace(text)}}
	if p.HTML != "" {
		parts = append(parts, part{mediaType: "text/html", charset: "utf-8", body: crlf.Replace(p.HTML)})
	}
	for _, a := range p.Attachments {
		mt, _, err := mime.ParseMediaType(a.ContentType)
		if err != nil {
			mt = "application/octet-stream"
		}
		parts = append(parts, part{mediaType: mt, filename: message.SanitizeFilename(a.Filename), body: string(a.Data)})
	}
	return parts
}
