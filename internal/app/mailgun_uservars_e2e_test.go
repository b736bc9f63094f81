package app_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/postline/postline/internal/store"
)

// TestMailgunUserVariablesAsSent: v: values keep their type as sent (the
// string "42" stays a string, not the number 42) and %recipient.KEY% in
// them is each recipient's value, as Mailgun does: in the received
// X-Mailgun-Variables and in every recipient's events.
func TestMailgunUserVariablesAsSent(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		e := startSend(t, d, false, nil)
		names := map[string]string{"u1@rcpt.example.net": `Ann "the" Great`, "u2@rcpt.example.net": "Bo, 50% off\nnow", "u3@rcpt.example.net": "Cy"}
		vars := map[string]any{}
		var to []string
		for addr, name := range names {
			to = append(to, addr)
			vars[addr] = map[string]any{"name": name, "n": len(name)}
		}
		rv, _ := json.Marshal(vars)
		r := mgPost(e, "/v3/shop.example.com/messages", url.Values{"from": {"news@shop.example.com"}, "to": to, "subject": {"Hi"},
			"text": {"Hello %recipient.name%"}, "recipient-variables": {string(rv)}, "v:email-id": {"42"}, "v:flag": {"true"},
			"v:greeting": {"Dear %recipient.name%"}, "v:meta": {`{"n": "%recipient.n%", "list": [1, "%recipient.name%"]}`}})
		if r.StatusCode != 200 {
			t.Fatalf("send: %d %s", r.StatusCode, r.Body)
		}
		want := func(rcpt string) map[string]any {
			return map[string]any{"email-id": "42", "flag": "true", "greeting": "Dear " + names[rcpt],
				"meta": map[string]any{"n": fmt.Sprint(len(names[rcpt])), "list": []any{1.0, names[rcpt]}}}
		}
		same := func(got any, want map[string]any) bool {
			a, _ := json.Marshal(got)
			b, _ := json.Marshal(want)
			return string(a) == string(b)
		}
		msgs, err := e.sink.WaitForMessages(ctxTimeout(t, 30*time.Second), 3)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			var got map[string]any
			h := readReceivedHeader(t, m, "X-Mailgun-Variables")
			if err := json.Unmarshal([]byte(h), &got); err != nil || !same(got, want(m.To[0])) {
				t.Errorf("%s: X-Mailgun-Variables %s, want %v", m.To[0], h, want(m.To[0]))
			}
		}
		waitFor(t, "three delivered", func() bool {
			return len(mgAllEvents(t, e, url.Values{"event": {"delivered"}})) == 3
		})
		events := mgAllEvents(t, e, url.Values{"event": {"accepted OR delivered"}})
		for _, ev := range events {
			rcpt := ev["recipient"].(string)
			if !same(ev["user-variables"], want(rcpt)) {
				t.Errorf("%s event of %s: user-variables %v, want %v", ev["event"], rcpt, ev["user-variables"], want(rcpt))
			}
		}
		if len(events) != 6 {
			t.Errorf("%d events, want 6", len(events))
		}
	})
}
