package message

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	gomessage "github.com/emersion/go-message"
)

// An inline file goes in multipart/related beside the HTML, with its
// Content-ID and an inline disposition; an attachment stays outside; a
// Content-ID that could break the header is refused.
func TestBuildInline(t *testing.T) {
	t.Parallel()
	p := Params{From: "a@shop.example", To: "b@x.example", Subject: "s", Text: "t", HTML: `<img src="cid:logo.png">`,
		MessageID: "<m@shop.example>", Date: time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC),
		Attachments: []Attachment{{Filename: "logo.png", ContentType: "image/png", Data: []byte("PNG"), ContentID: "logo.png"},
			{Filename: "terms.txt", ContentType: "text/plain", Data: []byte("TERMS")}}}
	raw, err := Build(p)
	if err != nil {
		t.Fatal(err)
	}
	e, err := gomessage.Read(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	var path []string
	var walk func(e *gomessage.Entity, depth int)
	walk = func(e *gomessage.Entity, depth int) {
		mt, _, _ := e.Header.ContentType()
		desc := strings.Repeat(">", depth) + mt
		if id := e.Header.Get("Content-Id"); id != "" {
			disp, _, _ := e.Header.ContentDisposition()
			body, _ := io.ReadAll(e.Body)
			desc += " " + id + " " + disp + " " + string(body)
		}
		path = append(path, desc)
		if mr := e.MultipartReader(); mr != nil {
			for {
				part, err := mr.NextPart()
				if err != nil {
					break
				}
				walk(part, depth+1)
			}
		}
	}
	walk(e, 0)
	want := "multipart/mixed|>multipart/alternative|>>text/plain|>>multipart/related|>>>text/html|>>>image/png <logo.png> inline PNG|>text/plain"
	if got := strings.Join(path, "|"); got != want {
		t.Errorf("structure\n got %s\nwant %s", got, want)
	}
	p.Attachments[0].ContentID = "bad>\r\nBcc: x@evil.example"
	if _, err := Build(p); err == nil {
		t.Error("a Content-ID with a line break was written")
	}
}
