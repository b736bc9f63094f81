package message_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/emersion/go-message/mail"
)

// part is a leaf part as a recipient's client sees it, decoded.
type part struct {
	mediaType, charset, filename, body string
}

type parsed struct {
	header mail.Header
	top    string
	parts  []part
}

// parse reads msg back with go-message, as a mail client would.
func parse(t *testing.T, msg []byte) parsed {
	t.Helper()
	r, err := mail.CreateReader(bytes.NewReader(msg))
	if err != nil {
		t.Fatalf("CreateReader: %v", err)
	}
	top, _, _ := r.Header.ContentType()
	out := parsed{header: r.Header, top: top}
	for {
		p, err := r.NextPart()
		if err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("NextPart: %v", err)
		}
		body, err := io.ReadAll(p.Body)
		if err != nil {
			t.Fatalf("reading part: %v", err)
		}
		var pt part
		switch h := p.Header.(type) {
		case *mail.InlineHeader:
			var params map[string]string
			pt.mediaType, params, _ = h.ContentType()
			pt.charset = params["charset"]
		case *mail.AttachmentHeader:
			pt.mediaType, _, _ = h.ContentType()
			if pt.filename, err = h.Filename(); err != nil {
				t.Errorf("Filename: %v", err)
			}
		}
		pt.body = string(body)
		out.parts = append(out.parts, pt)
	}
	return out
}

// checkLines asserts RFC 5322 §2.1.1 line rules: CRLF only, no line over
// 998 octets, a final CRLF.
func checkLines(t *testing.T, msg []byte) {
	t.Helper()
	if !bytes.HasSuffix(msg, []byte("\r\n")) {
		t.Errorf("message does not end with CRLF: ...%q", msg[max(0, len(msg)-20):])
	}
	for i, line := range bytes.Split(bytes.TrimSuffix(msg, []byte("\r\n")), []byte("\r\n")) {
		if bytes.ContainsAny(line, "\r\n") {
			t.Errorf("line %d has a bare CR or LF: %q", i+1, line)
		}
		if len(line) > 998 {
			t.Errorf("line %d is %d octets long, over 998", i+1, len(line))
		}
	}
}

// golden compares got with testdata/name.eml, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".eml")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("Build output differs from %s; if intended, run go test -update and review the diff. Got:\n%s", path, got)
	}
}
