package app_test

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/store"
)

// TestMailgunStatsHostileInput: what a client can put in the paths and
// parameters of the stats, tags and events routes is a JSON 400 naming
// the parameter and its limit on both stores, never a 500 (PostgreSQL
// fails a query with a NUL or invalid UTF-8 in a parameter): tags with
// NUL, control characters or invalid UTF-8 in the path, the prefix, the
// paging pivot; a description with NUL; a start or end that is NaN,
// infinite, negative or past year 9999 (which wrapped around to year
// -292275055); the events filters, in the query or a forged page token.
func TestMailgunStatsHostileInput(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		e := startSend(t, d, false, nil)
		auth := apitest.User{Login: "api", Key: e.user.Key}.Auth()
		do := func(method, path string, form url.Values) *apitest.Response {
			t.Helper()
			req := apitest.Request{Method: method, Path: path, Auth: auth}
			if form != nil {
				req.Body, req.Header = form.Encode(), http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
			}
			return e.Do(req)
		}
		if r := do("POST", "/v3/shop.example.com/messages", url.Values{"from": {"news@shop.example.com"}, "to": {"ann@rcpt.example.net"},
			"subject": {"Hi"}, "text": {"Hello"}, "o:tag": {"news"}}); r.StatusCode != 200 {
			t.Fatalf("send: %d %s", r.StatusCode, r.Body)
		}
		refused := func(method, path string, form url.Values, names ...string) {
			t.Helper()
			r := do(method, path, form)
			msg, _ := r.JSON["message"].(string)
			if r.StatusCode != 400 || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
				t.Errorf("%s %s: %d %s; want a JSON 400", method, path, r.StatusCode, r.Body)
				return
			}
			for _, n := range names {
				if !strings.Contains(msg, n) {
					t.Errorf("%s %s: %q does not name %q", method, path, msg, n)
				}
			}
		}
		const tags = "/v3/shop.example.com/tags"
		for _, bad := range []string{"a%00b", "tab%09x", "bad%FFbyte", "ctl%01", "del%7F"} {
			refused("GET", tags+"/"+bad, nil, "tag", "128", "control characters")
			refused("GET", tags+"/"+bad+"/stats?event=accepted", nil, "tag", "128")
			refused("PUT", tags+"/"+bad, url.Values{"description": {"x"}}, "tag", "128")
			refused("DELETE", tags+"/"+bad, nil, "tag", "128")
			refused("GET", tags+"?prefix="+bad, nil, "prefix", "128")
			refused("GET", tags+"?page=next&tag="+bad, nil, "tag", "128")
		}
		refused("PUT", tags+"/news", url.Values{"description": {"a\x00b"}}, "description", "1024", "NUL")

		const total = "/v3/shop.example.com/stats/total?event=accepted&"
		for _, q := range []string{"start=NaN", "start=-Inf", "start=1e300", "start=-1", "start=-1e300", "end=Inf", "end=NaN",
			"end=253402300800", "end=9223372036854775807", "end=Sat,+01+Jan+10000+00:00:00+%2B0000"} {
			name, _, _ := strings.Cut(q, "=")
			refused("GET", total+q, nil, name, "253402300799")
			refused("GET", "/v3/stats/total?event=delivered&"+q, nil, name, "253402300799")
			refused("GET", tags+"/news/stats?event=delivered&"+q, nil, name, "253402300799")
		}
		if r := do("GET", total+"start=0&end=253402300799&resolution=month&duration=999m", nil); r.StatusCode != 200 {
			t.Errorf("the last second of year 9999 as end: %d %s", r.StatusCode, r.Body)
		}

		const events = "/v3/shop.example.com/events?"
		for _, q := range []string{"recipient=%00", "tags=a%00", "message-id=%FF", "begin=NaN", "end=1e300"} {
			name, _, _ := strings.Cut(q, "=")
			refused("GET", events+q, nil, name)
		}
		for _, c := range []struct{ key, value, param string }{
			{"r", "\\u0000", "recipient"}, {"t", strings.Repeat("t", 1001), "tags"}, {"m", "x\\u0000", "message-id"}} {
			tok := base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, `{"a":false,"c":0,"l":10,%q:"%s"}`, c.key, c.value))
			refused("GET", "/v3/shop.example.com/events/"+tok, nil, c.param, "1000")
		}
	})
}
