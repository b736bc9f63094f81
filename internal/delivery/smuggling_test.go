package delivery_test

import (
	"context"
	"testing"
	"time"

	"github.com/postline/postline/internal/delivery"
	"github.com/postline/postline/internal/smtptest"
)

// TestSmugglingNeverSent: whatever built it, a message with a bare CR (the
// <CR>.<CR><LF> of SMTP smuggling) or a NUL never leaves, through a relay
// or directly to an MX: a permanent 5.6.0 at the data stage, and the
// receiving server sees no session. A message with bare LF goes out with
// CRLF, as before.
func TestSmugglingNeverSent(t *testing.T) {
	t.Parallel()
	f := setup(t, smtptest.Config{})
	f.dns.AddMX("example.test", 10, "mx.example.test")
	f.dns.AddA("mx.example.test", "127.0.0.1")
	smuggled := "From: a@sender.test\r\nTo: b@example.test\r\n\r\nHello.\r\n\r.\r\nMAIL FROM:<ceo@victim.test>\r\n" +
		"RCPT TO:<b@example.test>\r\nDATA\r\nFrom: ceo@victim.test\r\n\r\nPay now.\r\n.\r\n"
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, r := range []delivery.Route{f.relay(), {Mode: delivery.ModeDirect}} {
		for _, msg := range []string{smuggled, "From: a@sender.test\r\n\r\nHello.\r.\r\n", "From: a@sender.test\r\n\r\nHello\x00.\r\n"} {
			_, err := f.tr.Send(ctx, r, delivery.Envelope{From: "a@sender.test", To: "b@example.test"}, []byte(msg))
			if e := asError(t, err); e.Enhanced != "5.6.0" || e.Stage != delivery.StageData || e.Temporary {
				t.Errorf("%s: Send(%q) = %v, want a permanent 5.6.0 at data", r.Mode, msg, err)
			}
		}
	}
	if n := f.sessions(); n != 0 || len(f.sink.Messages()) != 0 {
		t.Errorf("the sink saw %d sessions and %d messages, want none", n, len(f.sink.Messages()))
	}
	if _, err := f.tr.Send(ctx, f.relay(), delivery.Envelope{From: "a@sender.test", To: "b@example.test"},
		[]byte("From: a@sender.test\nSubject: bare LF\n\nHello.\n.\n")); err != nil {
		t.Fatalf("a message with bare LF: %v", err)
	}
	msgs := f.sink.Messages()
	if len(msgs) != 1 || string(msgs[0].Data) != "From: a@sender.test\r\nSubject: bare LF\r\n\r\nHello.\r\n.\r\n" {
		t.Fatalf("the bare-LF message arrived as %+v, want one with CRLF line endings", msgs)
	}
}
