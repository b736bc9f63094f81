package message_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/message"
)

// TestBuildRefuses covers values that could inject header lines or break the
// line limits: each is refused with an Invalid error naming the form field.
func TestBuildRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		mod       func(*message.Params)
		wantField string
	}{
		{"subject CRLF", func(p *message.Params) { p.Subject = "Hi\r\nBcc: victim@example.org" }, "subject"},
		{"subject LF", func(p *message.Params) { p.Subject = "Hi\nBcc: victim@example.org" }, "subject"},
		{"subject bare CR", func(p *message.Params) { p.Subject = "Hi\rBcc: victim@example.org" }, "subject"},
		{"subject NUL", func(p *message.Params) { p.Subject = "Hi\x00" }, "subject"},
		{"subject invalid UTF-8", func(p *message.Params) { p.Subject = "Hi \xff" }, "subject"},
		{"subject one word over 998", func(p *message.Params) { p.Subject = strings.Repeat("a", 995) }, "subject"},
		{"from_name CRLF", func(p *message.Params) { p.FromName = "Eve\r\nBcc: victim@example.org" }, "from_name"},
		{"from_name LF", func(p *message.Params) { p.FromName = "Eve\nX-Evil: 1" }, "from_name"},
		{"header value CRLF", func(p *message.Params) {
			p.Headers = map[string]string{"X-Tag": "a\r\nBcc: victim@example.org"}
		}, "headers"},
		{"header value LF", func(p *message.Params) { p.Headers = map[string]string{"X-Tag": "a\nb"} }, "headers"},
		{"header value control", func(p *message.Params) { p.Headers = map[string]string{"X-Tag": "a\x1bb"} }, "headers"},
		{"header name CRLF", func(p *message.Params) { p.Headers = map[string]string{"X-Tag\r\nBcc": "x"} }, "headers"},
		{"header name protected", func(p *message.Params) { p.Headers = map[string]string{"bcc": "victim@example.org"} }, "headers"},
		{"header name Content-*", func(p *message.Params) { p.Headers = map[string]string{"content-type": "text/html"} }, "headers"},
		{"header name service prefix", func(p *message.Params) { p.Headers = map[string]string{"X-Postline-ID": "1"} }, "headers"},
		{"to CRLF", func(p *message.Params) { p.To = "rcpt@example.net\r\nBcc: victim@example.org" }, "to"},
		{"to with display name", func(p *message.Params) { p.To = "Eve <rcpt@example.net>" }, "to"},
		{"to two recipients", func(p *message.Params) { p.To = "rcpt@example.net, victim@example.org" }, "to"},
		{"to empty", func(p *message.Params) { p.To = "" }, "to"},
		{"from not an address", func(p *message.Params) { p.From = "sender" }, "from"},
		{"reply_to CRLF", func(p *message.Params) { p.ReplyTo = "a@example.com\r\nX: y" }, "reply_to"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := base()
			tc.mod(&p)
			msg, err := message.Build(p)
			e, ok := apperr.As(err)
			if !ok || e.Code != apperr.Invalid || len(e.Fields[tc.wantField]) == 0 {
				t.Fatalf("Build = %d bytes, %v; want an Invalid error on %q", len(msg), err, tc.wantField)
			}
		})
	}
}

// TestBuildInternalErrors: bad values the service itself supplies (Date,
// Message-ID, extra headers, List-Unsubscribe) are bugs, not *apperr.Error.
func TestBuildInternalErrors(t *testing.T) {
	t.Parallel()
	for name, mod := range map[string]func(*message.Params){
		"zero date":              func(p *message.Params) { p.Date = time.Time{} },
		"message-id no angle":    func(p *message.Params) { p.MessageID = "id@example.com" },
		"message-id CRLF":        func(p *message.Params) { p.MessageID = "<a\r\nb@example.com>" },
		"message-id no at":       func(p *message.Params) { p.MessageID = "<id>" },
		"extra header collides":  func(p *message.Params) { p.ExtraHeaders = map[string]string{"Subject": "x"} },
		"extra header CRLF":      func(p *message.Params) { p.ExtraHeaders = map[string]string{"X-Postline-ID": "1\r\nBcc: x"} },
		"list-unsubscribe CRLF":  func(p *message.Params) { p.ListUnsubscribe = "<https://t.example/u>\r\nX: y" },
		"list-unsubscribe UTF-8": func(p *message.Params) { p.ListUnsubscribe = "<https://t.example/ü>" },
	} {
		p := base()
		mod(&p)
		if _, err := message.Build(p); err == nil || apperr.CodeOf(err) != apperr.Internal {
			t.Errorf("%s: Build error = %v, want a non-apperr error", name, err)
		}
	}
}

// TestBuildNeutralisesFilenames: hostile names are sanitized, never refused,
// and cannot add header lines or parts.
func TestBuildNeutralisesFilenames(t *testing.T) {
	t.Parallel()
	names := []string{
		"../../etc/passwd",
		`C:\Users\eve\report.pdf`,
		"evil\r\nContent-Type: text/html\r\n\r\n<script>.pdf",
		"invoice\u202Efdp.exe",
		"\x00",
		"",
	}
	p := base()
	for _, n := range names {
		p.Attachments = append(p.Attachments, message.Attachment{Filename: n, ContentType: "application/pdf", Data: []byte("x")})
	}
	msg, err := message.Build(p)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	checkLines(t, msg)
	if bytes.Contains(msg, []byte("\r\nContent-Type: text/html")) {
		t.Errorf("a filename injected a header line:\n%s", msg)
	}
	got := parse(t, msg)
	if len(got.parts) != 1+len(names) {
		t.Fatalf("got %d parts, want %d", len(got.parts), 1+len(names))
	}
	for i, n := range names {
		f := got.parts[i+1].filename
		if f != message.SanitizeFilename(n) || strings.ContainsAny(f, "\r\n/\\\x00\u202E") {
			t.Errorf("filename %q came back as %q", n, f)
		}
	}
}

func TestSanitizeFilename(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 200) + ".pdf"
	tests := []struct{ in, want string }{
		{"report.pdf", "report.pdf"},
		{"Résumé été.txt", "Résumé été.txt"},
		{"../../etc/passwd", "passwd"},
		{`C:\Users\eve\report.pdf`, "report.pdf"},
		{"a\r\nb.txt", "ab.txt"},
		{"tab\there.txt", "tabhere.txt"},
		{"invoice\u202Efdp.exe", "invoicefdp.exe"},
		{"  spaced.txt  ", "spaced.txt"},
		{"trailing...", "trailing"},
		{".env", ".env"},
		{"..", "attachment"},
		{"dir/", "attachment"},
		{"", "attachment"},
		{"bad\xffutf8.txt", "badutf8.txt"},
		{long, strings.Repeat("é", 125) + ".pdf"},
	}
	for _, tc := range tests {
		if got := message.SanitizeFilename(tc.in); got != tc.want {
			t.Errorf("SanitizeFilename(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestCheckHeaderName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		ok   bool
	}{
		{"X-Campaign", true},
		{"X-Mailer", true},
		{"Keywords", true},
		{"x-lower-case", true},
		{"!#$%&'*+-.^_`|~", true},
		{strings.Repeat("X", 76), true},
		{strings.Repeat("X", 77), false},
		{"", false},
		{"X Space", false},
		{"X:Colon", false},
		{"X-Ünicode", false},
		{"X-Tab\t", false},
		{"X-Del\x7f", false},
		{"From", false},
		{"to", false},
		{"CC", false},
		{"Bcc", false},
		{"Reply-To", false},
		{"SUBJECT", false},
		{"Date", false},
		{"message-id", false},
		{"MIME-Version", false},
		{"Content-Type", false},
		{"Content-Language", false},
		{"DKIM-Signature", false},
		{"Return-Path", false},
		{"List-Unsubscribe", false},
		{"List-Unsubscribe-Post", false},
		{"X-Postline-ID", false},
	}
	for _, tc := range tests {
		err := message.CheckHeaderName(tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("CheckHeaderName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
		}
		if err != nil && apperr.CodeOf(err) != apperr.Invalid {
			t.Errorf("CheckHeaderName(%q) code = %s, want invalid", tc.name, apperr.CodeOf(err))
		}
	}
}

func TestCheckHeaderValue(t *testing.T) {
	t.Parallel()
	tests := []struct {
		value string
		ok    bool
	}{
		{"plain", true},
		{"", true},
		{"tab\tinside", true},
		{"héllo wörld 🎉", true},
		{strings.Repeat("word ", 2000), true},
		{strings.Repeat("é", 2000), true}, // encoded words fold
		{strings.Repeat("a", 1000), false},
		{"a\rb", false},
		{"a\nb", false},
		{"a\r\n b", false}, // even a valid fold: Build folds, callers do not
		{"nul\x00", false},
		{"bad \xff", false},
	}
	for _, tc := range tests {
		if err := message.CheckHeaderValue("X-Test", tc.value); (err == nil) != tc.ok {
			t.Errorf("CheckHeaderValue(%.30q) = %v, want ok=%v", tc.value, err, tc.ok)
		}
	}
}
