package app_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/store"
)

// mgPost posts a urlencoded form to a /v3/ path as alice (user api).
func mgPost(e *sendEnv, path string, form url.Values) *apitest.Response {
	return e.Do(apitest.Request{Method: "POST", Path: path, Auth: apitest.User{Login: "api", Key: e.user.Key}.Auth(),
		Body: form.Encode(), Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}})
}

// mgAllEvents follows paging.next from the first page of query until an
// empty page and returns every item.
func mgAllEvents(t *testing.T, e *sendEnv, query url.Values) []map[string]any {
	t.Helper()
	path := "/v3/shop.example.com/events?" + query.Encode()
	var out []map[string]any
	for pages := 0; pages < 200; pages++ {
		r := e.Do(apitest.Request{Method: "GET", Path: path, Auth: apitest.User{Login: "api", Key: e.user.Key}.Auth()})
		if r.StatusCode != 200 {
			t.Fatalf("%s: %d %s", path, r.StatusCode, r.Body)
		}
		items := r.JSON["items"].([]any)
		if len(items) == 0 {
			return out
		}
		for _, it := range items {
			out = append(out, it.(map[string]any))
		}
		path = strings.TrimPrefix(r.JSON["paging"].(map[string]any)["next"].(string), e.URL)
	}
	t.Fatalf("%s: still paging after 200 pages", query.Encode())
	return nil
}

// mgMessageID is an event's message.headers.message-id.
func mgMessageID(item map[string]any) string {
	return item["message"].(map[string]any)["headers"].(map[string]any)["message-id"].(string)
}

// TestMailgunBatchOneMessageID: a /v3/ batch of 100 gives every copy the
// answer's id, as Mailgun does: each received message carries it as its
// Message-ID, and every recipient's accepted and delivered events report
// it, each recipient's apart. Postline's own API keeps an id per
// recipient.
func TestMailgunBatchOneMessageID(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		e := startSend(t, d, false, nil)
		var to []string
		vars := map[string]any{}
		for i := 0; i < 100; i++ {
			addr := fmt.Sprintf("b%03d@rcpt.example.net", i)
			to = append(to, addr)
			vars[addr] = map[string]any{"n": i}
		}
		rv, _ := json.Marshal(vars)
		r := mgPost(e, "/v3/shop.example.com/messages", url.Values{"from": {"news@shop.example.com"}, "to": to, "subject": {"No. %recipient.n%"},
			"text": {"Hello %recipient.n%"}, "recipient-variables": {string(rv)}})
		id, _ := r.JSON["id"].(string)
		if r.StatusCode != 200 || !strings.HasPrefix(id, "<") || !strings.HasSuffix(id, "@shop.example.com>") {
			t.Fatalf("batch: %d %s", r.StatusCode, r.Body)
		}
		msgs, err := e.sink.WaitForMessages(ctxTimeout(t, 60*time.Second), 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			if got := readReceivedHeader(t, m, "Message-ID"); got != id {
				t.Fatalf("%s received Message-ID %q, want the answer's %q", m.To[0], got, id)
			}
		}
		bare := strings.Trim(id, "<>")
		var events []map[string]any
		waitFor(t, "100 delivered events", func() bool {
			events = mgAllEvents(t, e, url.Values{"message-id": {id}, "limit": {"300"}, "event": {"accepted OR delivered"}})
			return len(events) == 200
		})
		seen := map[string]int{}
		for _, ev := range events {
			if got := mgMessageID(ev); got != bare {
				t.Fatalf("%s event of %s has message-id %q, want %q", ev["event"], ev["recipient"], got, bare)
			}
			seen[ev["event"].(string)+" "+ev["recipient"].(string)]++
		}
		for _, rcpt := range to {
			if seen["accepted "+rcpt] != 1 || seen["delivered "+rcpt] != 1 {
				t.Errorf("%s: accepted %d, delivered %d times; want once each", rcpt, seen["accepted "+rcpt], seen["delivered "+rcpt])
			}
		}
		// Postline's own API: an id per recipient, as before.
		own := e.send(t, basicParts("o1@rcpt.example.net", "o2@rcpt.example.net"), nil)
		data, _ := own.JSON["data"].(map[string]any)
		if ids, _ := data["message_ids"].([]any); own.StatusCode != 202 || len(ids) != 2 || ids[0] == ids[1] {
			t.Errorf("/api/ send to two: %d %s, want two ids", own.StatusCode, own.Body)
		}
	})
}

// TestMailgunOwnMessageID: h:Message-Id at one of the account's domains
// is the message's id (the answer, the received header, the events);
// another account's domain or a malformed one is a 400 naming it.
func TestMailgunOwnMessageID(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		e := startSend(t, d, false, nil)
		bob := e.NewUser("bob")
		e.NewDomain(bob, "bob.example.org")
		base := url.Values{"from": {"news@shop.example.com"}, "to": {"x1@rcpt.example.net", "x2@rcpt.example.net"}, "subject": {"Order"}, "text": {"Shipped"}}
		with := func(id string) url.Values {
			f := url.Values{"h:Message-Id": {id}}
			for k, v := range base {
				f[k] = v
			}
			return f
		}
		r := mgPost(e, "/v3/shop.example.com/messages", with("<order-42.shipped@shop.example.com>"))
		if r.StatusCode != 200 || r.JSON["id"] != "<order-42.shipped@shop.example.com>" {
			t.Fatalf("own Message-Id: %d %s", r.StatusCode, r.Body)
		}
		msgs, err := e.sink.WaitForMessages(ctxTimeout(t, 30*time.Second), 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			if got := readReceivedHeader(t, m, "Message-ID"); got != "<order-42.shipped@shop.example.com>" {
				t.Errorf("%s received Message-ID %q", m.To[0], got)
			}
		}
		waitFor(t, "both delivered", func() bool {
			return len(mgAllEvents(t, e, url.Values{"message-id": {"order-42.shipped@shop.example.com"}, "event": {"delivered"}})) == 2
		})
		for _, ev := range mgAllEvents(t, e, url.Values{"message-id": {"<order-42.shipped@shop.example.com>"}}) {
			if mgMessageID(ev) != "order-42.shipped@shop.example.com" {
				t.Errorf("event %v", ev)
			}
		}
		for _, bad := range []string{"<x@bob.example.org>", "<no-at-sign>", "<a b@shop.example.com>", "<x@shop.example.com", "<x@@shop.example.com>",
			"<x@rcpt.example.net>"} {
			if r := mgPost(e, "/v3/shop.example.com/messages", with(bad)); r.StatusCode != 400 || !strings.Contains(fmt.Sprint(r.JSON["message"]), "h:Message-Id") {
				t.Errorf("h:Message-Id %q: %d %s, want 400 naming h:Message-Id", bad, r.StatusCode, r.Body)
			}
		}
	})
}

// TestMailgunAllSuppressedSend: a send whose every recipient is
// suppressed answers a real id, and its events say failed with reason
// suppressed.
func TestMailgunAllSuppressedSend(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		e := startSend(t, d, false, nil)
		for _, a := range []string{"gone1@rcpt.example.net", "gone2@rcpt.example.net"} {
			if r := mgPost(e, "/v3/shop.example.com/bounces", url.Values{"address": {a}}); r.StatusCode != 200 {
				t.Fatalf("bounce: %d %s", r.StatusCode, r.Body)
			}
		}
		r := mgPost(e, "/v3/shop.example.com/messages", url.Values{"from": {"news@shop.example.com"},
			"to": {"gone1@rcpt.example.net", "gone2@rcpt.example.net"}, "subject": {"s"}, "text": {"t"}})
		id, _ := r.JSON["id"].(string)
		if r.StatusCode != 200 || !strings.HasPrefix(id, "<") || !strings.HasSuffix(id, "@shop.example.com>") {
			t.Fatalf("all suppressed: %d %s, want a real id", r.StatusCode, r.Body)
		}
		events := mgAllEvents(t, e, url.Values{"message-id": {id}})
		if len(events) != 2 {
			t.Fatalf("events of %s: %v, want two", id, events)
		}
		for _, ev := range events {
			if ev["event"] != "failed" || ev["reason"] != "suppressed" || ev["severity"] != "permanent" {
				t.Errorf("event %v, want failed with reason suppressed", ev)
			}
		}
	})
}
