package submission

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

var now = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

func TestPrepare(t *testing.T) {
	t.Parallel()
	raw := "From: Shop <orders@shop.example>\r\nTo: a@x.example\r\nBcc: secret@x.example\r\nSubject: =?utf-8?q?Caf=C3=A9?=\r\n" +
		"X-Postline-Tag: a, b\r\nX-Postline-Tag: c\r\nX-Postline-Track: none\r\n\r\nbody line\r\n"
	p, err := prepare([]byte(raw), "shop.example", now)
	if err != nil {
		t.Fatal(err)
	}
	head, body, _ := strings.Cut(string(p.Data), "\r\n\r\n")
	if body != "body line\r\n" {
		t.Errorf("body %q changed", body)
	}
	for _, gone := range []string{"Bcc", "secret@", "X-Postline"} {
		if strings.Contains(head, gone) {
			t.Errorf("header keeps %q:\n%s", gone, head)
		}
	}
	if !strings.Contains(head, "Message-Id: <") || !strings.Contains(head, "Date: Tue, 24 Nov 2026") {
		t.Errorf("Message-ID and Date not added:\n%s", head)
	}
	if p.Subject != "Café" || strings.Join(p.Tags, ",") != "a,b,c" || p.Track != "none" || p.From[0] != "orders@shop.example" {
		t.Errorf("prepared %+v", p)
	}
	if _, err := prepare([]byte("Subject: no from\r\n\r\nx"), "shop.example", now); err == nil {
		t.Error("a message without From accepted")
	}
}

// FuzzPrepare: whatever a client sends as DATA (malformed headers, bare
// LF, 8-bit bytes, huge lines), prepare answers with a message or a clear
// 5xx, never a panic, and never loses the body.
func FuzzPrepare(f *testing.F) {
	f.Add([]byte("From: a@shop.example\r\n\r\nx"))
	f.Add([]byte("From: a@shop.example\nSubject: bare LF\n\nbody\n"))
	f.Add([]byte("From: \xff\xfe@shop.example\r\nSubject: \x80\x81\r\n\r\n\xc3\x28"))
	f.Add([]byte("From a@shop.example\r\n\r\n"))
	f.Add([]byte("From: a@shop.example\r\nX: " + strings.Repeat("y", 5000) + "\r\n\r\nz"))
	f.Add([]byte(":\r\n\r\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		p, err := prepare(raw, "shop.example", now)
		if err != nil {
			if se, ok := err.(interface{ Error() string }); !ok || !strings.HasPrefix(se.Error(), "SMTP error 554") {
				t.Fatalf("error %v is not a 554 reply", err)
			}
			return
		}
		if len(p.From) == 0 || p.MessageID == "" {
			t.Fatalf("accepted without From or Message-ID: %+v", p)
		}
		if i := bytes.Index(raw, []byte("\r\n\r\n")); i >= 0 && !bytes.HasSuffix(p.Data, raw[i+4:]) {
			t.Fatalf("body changed")
		}
	})
}
