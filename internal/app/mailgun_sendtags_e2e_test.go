package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/store"
)

// TestMailgunSendTagBounds: a send's tags keep the same bounds on every
// door. messages.mime took any number of o:tag values with any bytes (one
// request made 1,500 tags, each written again by every later event of
// its 1,000 copies; invalid UTF-8 was a 500 on PostgreSQL), and
// X-Postline-Tag took control characters and invalid UTF-8. Now both are
// refused as /messages refuses them (at most 10 values; one line of at
// most 255 characters of UTF-8), and a message tracks at most its first
// 10 tags, however many its comma-separated values name.
func TestMailgunSendTagBounds(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		e := startSend(t, d, false, nil)
		auth := apitest.User{Login: "api", Key: e.user.Key}.Auth()
		mime := func(head string, tags ...string) *apitest.Response {
			var buf bytes.Buffer
			mw := multipart.NewWriter(&buf)
			mw.WriteField("to", "ann@rcpt.example.net")
			for _, tg := range tags {
				mw.WriteField("o:tag", tg)
			}
			w, _ := mw.CreateFormFile("message", "message.mime")
			w.Write([]byte("From: news@shop.example.com\r\nTo: ann@rcpt.example.net\r\nSubject: s\r\n" + head + "\r\nbody\r\n"))
			mw.Close()
			return e.Do(apitest.Request{Method: "POST", Path: "/v3/shop.example.com/messages.mime", Auth: auth,
				Body: buf.Bytes(), Header: http.Header{"Content-Type": {mw.FormDataContentType()}}})
		}
		var eleven []string
		for i := range 11 {
			eleven = append(eleven, fmt.Sprintf("mime%d", i))
		}
		for _, c := range []struct {
			name, head string
			tags       []string
			names      []string
		}{
			{"11 o:tag values", "", eleven, []string{"o:tag", "10"}},
			{"o:tag with a control character", "", []string{"ctl\x01x"}, []string{"o:tag", "control characters"}},
			{"o:tag not UTF-8", "", []string{"bad\xffbyte"}, []string{"o:tag", "UTF-8"}},
			{"o:tag over 255 characters", "", []string{strings.Repeat("y", 100), strings.Repeat("z", 160)}, []string{"o:tag", "255"}},
			{"X-Postline-Tag not UTF-8", "X-Postline-Tag: bad\xffbyte\r\n", nil, []string{"X-Postline-Tag", "UTF-8"}},
			{"X-Postline-Tag with a control character", "X-Postline-Tag: ctl\x01x\r\n", nil, []string{"X-Postline-Tag", "control characters"}},
			{"X-Postline-Tag over 255 characters", "X-Postline-Tag: " + strings.Repeat("w", 256) + "\r\n", nil, []string{"X-Postline-Tag", "255"}},
		} {
			r := mime(c.head, c.tags...)
			msg, _ := r.JSON["message"].(string)
			if r.StatusCode != 400 {
				t.Errorf("messages.mime with %s: %d %s; want 400", c.name, r.StatusCode, r.Body)
				continue
			}
			for _, n := range c.names {
				if !strings.Contains(msg, n) {
					t.Errorf("messages.mime with %s: %q does not name %q", c.name, msg, n)
				}
			}
		}
		if r := mime("X-Postline-Tag: head\r\n", "form"); r.StatusCode != 200 {
			t.Fatalf("messages.mime with one o:tag: %d %s", r.StatusCode, r.Body)
		}
		twelve := make([]string, 12)
		for i := range twelve {
			twelve[i] = fmt.Sprintf("t%02d", i)
		}
		r := e.Do(apitest.Request{Method: "POST", Path: "/v3/shop.example.com/messages", Auth: auth,
			Body: url.Values{"from": {"news@shop.example.com"}, "to": {"ann@rcpt.example.net"}, "subject": {"Hi"}, "text": {"Hello"},
				"o:tag": {strings.Join(twelve, ",")}}.Encode(),
			Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}})
		if r.StatusCode != 200 {
			t.Fatalf("a send naming 12 tags in one o:tag: %d %s", r.StatusCode, r.Body)
		}
		r = e.Do(apitest.Request{Method: "GET", Path: "/v3/shop.example.com/tags?limit=1000", Auth: auth})
		var list struct{ Items []struct{ Tag string } }
		if err := json.Unmarshal(r.Body, &list); err != nil {
			t.Fatalf("tags: %d %s", r.StatusCode, r.Body)
		}
		var got []string
		for _, it := range list.Items {
			got = append(got, it.Tag)
		}
		if want := "form " + strings.Join(twelve[:10], " "); strings.Join(got, " ") != want {
			t.Errorf("tracked tags %q; want %q (the refused sends' none, the 12-tag send's first 10)", got, want)
		}
	})
}
