package console

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/postline/postline/internal/receiving"
)

// TestInlineImagesBounded: an inline image referenced many times in the
// sender's HTML is inlined within maxInlinedBytes, not once per reference
// (200 references to a 1 MiB image were 280 MB of page; a hundred thousand,
// which a message's HTML holds easily, exhausted the server's memory);
// an image referenced once is still inlined.
func TestInlineImagesBounded(t *testing.T) {
	img := strings.Repeat("\x89PNG", 1<<18) // 1 MiB
	small := "GIF89a small"
	raw := "From: a@example.com\r\nTo: b@example.net\r\nSubject: x\r\nMIME-Version: 1.0\r\n" +
		"Content-Type: multipart/related; boundary=BB\r\n\r\n" +
		"--BB\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<p>x</p>\r\n" +
		"--BB\r\nContent-Type: image/png\r\nContent-ID: <big>\r\nContent-Transfer-Encoding: base64\r\n\r\n" +
		base64.StdEncoding.EncodeToString([]byte(img)) + "\r\n" +
		"--BB\r\nContent-Type: image/gif\r\nContent-ID: <small>\r\nContent-Transfer-Encoding: base64\r\n\r\n" +
		base64.StdEncoding.EncodeToString([]byte(small)) + "\r\n--BB--\r\n"
	p := receiving.Parse([]byte(raw))
	if len(p.Attachments) != 2 {
		t.Fatalf("attachments %+v", p.Attachments)
	}
	html := strings.Repeat(`<img src="cid:big">`, 200) + `<img src="cid:small">`
	out := inlineImages(html, []byte(raw), p.Attachments)
	if len(out) > len(html)+maxInlinedBytes {
		t.Errorf("the HTML grew from %d to %d bytes, past the bound of %d", len(html), len(out), maxInlinedBytes)
	}
	if !strings.Contains(out, "data:image/gif;base64,"+base64.StdEncoding.EncodeToString([]byte(small))) {
		t.Errorf("the image referenced once was not inlined")
	}
	if one := `<img src="cid:big">`; !strings.Contains(out, one) {
		t.Errorf("the image past the bound was inlined anyway")
	}
	// Once is still inlined.
	out = inlineImages(`<img src="cid:big">`, []byte(raw), p.Attachments)
	if !strings.HasPrefix(out, `<img src="data:image/png;base64,`) {
		t.Errorf("an image referenced once: %.80s", out)
	}
}
