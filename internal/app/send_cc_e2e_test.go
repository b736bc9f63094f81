package app_test

import (
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/store"
)

// TestSendCcBccAndDisplayNames: cc recipients are shown to everyone, bcc
// ones get their copy and show nowhere, display names are kept in To and
// Cc; the 1000 limit counts to, cc and bcc together.
func TestSendCcBccAndDisplayNames(t *testing.T) {
	t.Parallel()
	e := startSend(t, store.SQLite, false, nil)
	parts := []part{{name: "from", value: "orders@shop.example.com"}, {name: "subject", value: "Meeting"},
		{name: "text", value: "See you"}, {name: "to", value: `"Doe, Jane" <jane@rcpt.example.net>`},
		{name: "cc", value: "Bob Smith <bob@rcpt.example.net>, carol@rcpt.example.net"}, {name: "bcc", value: "secret@rcpt.example.net"}}
	if resp := e.send(t, parts, nil); resp.StatusCode != 202 || !strings.Contains(string(resp.Body), "4 recipient(s)") {
		t.Fatalf("send: %d %s", resp.StatusCode, resp.Body)
	}
	msgs, err := e.sink.WaitForMessages(ctxTimeout(t, 15*time.Second), 4)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, m := range msgs {
		got[m.To[0]] = true
		to := readReceivedHeader(t, m, "To")
		cc := readReceivedHeader(t, m, "Cc")
		head, _, _ := strings.Cut(string(m.Data), "\r\n\r\n")
		if to != `"Doe, Jane" <jane@rcpt.example.net>` || cc != `"Bob Smith" <bob@rcpt.example.net>, <carol@rcpt.example.net>` {
			t.Errorf("%v: To %q, Cc %q", m.To, to, cc)
		}
		if strings.Contains(head, "secret@") || hasField(head, "Bcc") {
			t.Errorf("%v: the bcc recipient shows:\n%s", m.To, head)
		}
	}
	for _, rc := range []string{"jane@rcpt.example.net", "bob@rcpt.example.net", "carol@rcpt.example.net", "secret@rcpt.example.net"} {
		if !got[rc] {
			t.Errorf("%s got no copy (%v)", rc, got)
		}
	}

	// A display name alone: each copy shows its recipient with the name.
	if resp := e.send(t, []part{{name: "from", value: "orders@shop.example.com"}, {name: "subject", value: "Hi"},
		{name: "text", value: "x"}, {name: "to", value: "Ann Example <ann@rcpt.example.net>, zed@rcpt.example.net"}}, nil); resp.StatusCode != 202 {
		t.Fatalf("send: %d %s", resp.StatusCode, resp.Body)
	}
	msgs, _ = e.sink.WaitForMessages(ctxTimeout(t, 15*time.Second), 6)
	for _, m := range msgs[4:] {
		to := readReceivedHeader(t, m, "To")
		want := map[string]string{"ann@rcpt.example.net": `"Ann Example" <ann@rcpt.example.net>`, "zed@rcpt.example.net": "<zed@rcpt.example.net>"}[m.To[0]]
		if to != want || readReceivedHeader(t, m, "Cc") != "" {
			t.Errorf("%v: To %q, want %q and no Cc", m.To, to, want)
		}
	}

	for _, c := range []struct {
		parts []part
		field string
	}{
		{[]part{{name: "to", value: "a@rcpt.example.net"}, {name: "cc", value: "not an address"}}, "cc.0"},
		{[]part{{name: "to", value: "a@rcpt.example.net"}, {name: "bcc", value: "Bad <x@>"}}, "bcc.0"},
		{[]part{{name: "to", value: strings.Repeat("a@rcpt.example.net,", 600)}, {name: "bcc", value: strings.Repeat("b@rcpt.example.net,", 401)}}, "to"},
	} {
		resp := e.send(t, append([]part{{name: "from", value: "orders@shop.example.com"}, {name: "subject", value: "x"}, {name: "text", value: "x"}}, c.parts...), nil)
		errs, _ := resp.JSON["errors"].(map[string]any)
		if resp.StatusCode != 422 || errs[c.field] == nil {
			t.Errorf("%v: %d %s, want 422 naming %s", c.field, resp.StatusCode, resp.Body, c.field)
		}
	}
}
