package app_test

import (
	"net/smtp"
	"regexp"
	"testing"
	"time"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/store"
)

// dkimField is a DKIM-Signature field with its folded lines.
var dkimField = regexp.MustCompile(`(?m)^DKIM-Signature:.*\r\n([ \t].*\r\n)*`)

// TestRebuiltCopyOfASubmission: the copy of a message submitted over SMTP
// is, for each recipient, the bytes that recipient got without the DKIM
// signature.
func TestRebuiltCopyOfASubmission(t *testing.T) {
	t.Parallel()
	e := startSubmission(t, store.SQLite, nil)
	c, err := dialSubmission(t, e, false, smtp.PlainAuth("", "alice", e.user.Key, "127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	to := []string{"ann@rcpt.example.net", "bob@rcpt.example.net"}
	if err := submit(c, "orders@shop.example.com", to, submittedMessage("orders@shop.example.com", "ann@rcpt.example.net, bob@rcpt.example.net", "")); err != nil {
		t.Fatal(err)
	}
	// One transaction carries both: the submitted message is the same
	// for each (max_recipients_per_transaction).
	msgs, err := e.sink.WaitForMessages(ctxTimeout(t, 15*time.Second), 1)
	if err != nil {
		t.Fatal(err)
	}
	// The sink has the bytes before the delivery is recorded: wait for
	// both recipients' entries, not just the last one's.
	waitFor(t, "both delivered", func() bool {
		return len(e.entries(t, "ann@rcpt.example.net", event.Delivered)) == 1 &&
			len(e.entries(t, "bob@rcpt.example.net", event.Delivered)) == 1
	})
	id := e.entries(t, "ann@rcpt.example.net", event.Delivered)[0].MessageID
	checked := 0
	for _, m := range e.sink.Messages() {
		for _, rcpt := range m.To {
			checked++
			r := e.Do(apitest.Request{Method: "GET", Path: "/api/domains/shop.example.com/messages/" + id + "/raw?recipient=" + rcpt, Auth: e.user.Auth()})
			sent := dkimField.ReplaceAll(m.Data, nil)
			if r.StatusCode != 200 || r.Header.Get("X-Postline-Recipient") != rcpt || len(sent) == len(m.Data) || string(r.Body) != string(sent) {
				t.Errorf("%s's copy: %d %q\n%s\nwant what was sent without its signature:\n%s", rcpt, r.StatusCode,
					r.Header.Get("X-Postline-Recipient"), r.Body, sent)
			}
		}
	}
	if checked != len(to) {
		t.Errorf("the sink got %d copies (%d messages), want %d", checked, len(msgs), len(to))
	}
}
