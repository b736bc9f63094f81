package app_test

import (
	"html"
	"strings"
	"testing"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/smtptest"
	"github.com/postline/postline/internal/store"
)

// TestConsoleBounceReasons: a recipient the receiving server refuses with
// 550 5.1.1 shows that reply in the console's log rows and as the reason
// of its bounce suppression (the API's description too), written once.
func TestConsoleBounceReasons(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		e := startSend(t, d, false, nil)
		e.sink.Script("gone@rcpt.example.net", smtptest.Reply{Code: 550, Enhanced: [3]int{5, 1, 1}, Message: "no such user <gone@rcpt.example.net>"})
		if resp := e.send(t, basicParts("gone@rcpt.example.net", "ok@rcpt.example.net"), nil); resp.StatusCode != 202 {
			t.Fatalf("send: %d %s", resp.StatusCode, resp.Body)
		}
		e.chain(t, "gone@rcpt.example.net", event.Bounced)
		e.chain(t, "ok@rcpt.example.net", event.Delivered)
		const reply = "550 5.1.1 no such user <gone@rcpt.example.net>"

		b := &browser{t: t, base: e.URL}
		b.signIn(e.user.Login, e.user.Key, "/")
		_, page := b.do("GET", "/domains/shop.example.com/log?type=bounced", nil, nil)
		if !strings.Contains(page, `<td class="reply">`+html.EscapeString(reply)+`</td>`) {
			t.Errorf("the log's bounced row does not show the reply %q:\n%s", reply, page)
		}
		_, page = b.do("GET", "/domains/shop.example.com/log?type=delivered", nil, nil)
		if !strings.Contains(page, `<td class="reply">250 `) {
			t.Errorf("the log's delivered row does not show the server's 250:\n%s", page)
		}
		_, page = b.do("GET", "/domains/shop.example.com/suppressions?type=bounce", nil, nil)
		if !strings.Contains(page, `<td class="reply">`+html.EscapeString(reply)+`</td>`) || strings.Count(page, "no such user") != 1 {
			t.Errorf("the suppressions page does not show the bounce's reason once:\n%s", page)
		}
		resp := e.Do(apitest.Request{Method: "GET", Path: "/api/domains/shop.example.com/suppressions?type=bounce", Auth: e.user.Auth()})
		if data, _ := resp.JSON["data"].([]any); len(data) != 1 || data[0].(map[string]any)["description"] != reply {
			t.Errorf("the API's bounce suppression: %s; want the reply as its description", resp.Body)
		}
	})
}
