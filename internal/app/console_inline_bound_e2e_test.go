package app_test

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strings"
	"testing"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/store"
)

// TestConsoleMessageFrameInlineBound: a sent message whose HTML names one
// inline image many times is shown in its frame with at most 16 MiB of
// data: URLs added, not a copy per reference (a hundred thousand
// references to a 2 MiB image were hundreds of gigabytes held by the
// server: any sender, or anyone mailing an inbound domain, could set it
// up for the console to fall over when the message was viewed).
func TestConsoleMessageFrameInlineBound(t *testing.T) {
	t.Parallel()
	e := startSend(t, store.SQLite, false, nil)
	img := "\x89PNG\r\n\x1a\n" + strings.Repeat("x", 1<<20)
	html := strings.Repeat(`<img src="cid:pic.png">`, 30)
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, f := range [][2]string{{"from", "news@shop.example.com"}, {"to", "ann@rcpt.example.net"}, {"subject", "pictures"}, {"text", "see the pictures"}, {"html", html}} {
		mw.WriteField(f[0], f[1])
	}
	w, _ := mw.CreatePart(textproto.MIMEHeader{"Content-Disposition": {`form-data; name="inline"; filename="pic.png"`}, "Content-Type": {"image/png"}})
	io.WriteString(w, img)
	mw.Close()
	r := e.Do(apitest.Request{Method: "POST", Path: "/v3/shop.example.com/messages", Auth: apitest.User{Login: "api", Key: e.user.Key}.Auth(),
		Body: buf.Bytes(), Header: http.Header{"Content-Type": {mw.FormDataContentType()}}})
	if r.StatusCode != 200 {
		t.Fatalf("send: %d %s", r.StatusCode, r.Body)
	}
	var acc struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(r.Body, &acc); err != nil || acc.ID == "" {
		t.Fatalf("send answer %s: %v", r.Body, err)
	}
	id := strings.Trim(acc.ID, "<>")
	b := &browser{t: t, base: e.URL}
	b.signIn("alice", e.user.Key, "/")
	resp, body := b.do("GET", "/domains/shop.example.com/messages/"+id+"/html", nil, nil)
	if resp.StatusCode != 200 || !strings.Contains(body, `<img src="`) {
		t.Fatalf("the frame's HTML: %d %.200s", resp.StatusCode, body)
	}
	if len(body) > len(html)+16<<20 {
		t.Errorf("the frame's HTML is %d bytes: past 16 MiB of inlined images for %d bytes of HTML", len(body), len(html))
	}
}
