package delivery_test

import (
	"context"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
	"github.com/postline/postline/internal/delivery"
	"github.com/postline/postline/internal/smtptest"
)

func TestEnvelope(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		env      delivery.Envelope
		msg      string
		wantData string
		wantUTF8 bool
	}{
		{
			name:     "ascii",
			env:      delivery.Envelope{From: "a@sender.test", To: "b@example.test"},
			msg:      testMsg,
			wantData: testMsg,
		},
		{
			name:     "null sender (bounces)",
			env:      delivery.Envelope{From: "", To: "b@example.test"},
			msg:      testMsg,
			wantData: testMsg,
		},
		{
			name:     "non-ascii recipient (RFC 6531)",
			env:      delivery.Envelope{From: "a@sender.test", To: "用户@example.test"},
			msg:      testMsg,
			wantData: testMsg,
			wantUTF8: true,
		},
		{
			name:     "utf-8 header, bare LF line endings, dot stuffing",
			env:      delivery.Envelope{From: "a@sender.test", To: "b@example.test"},
			msg:      "Subject: héllo\n\nbody ü\n.\n",
			wantData: "Subject: héllo\r\n\r\nbody ü\r\n.\r\n",
			wantUTF8: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, smtptest.Config{})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if _, err := f.tr.Send(ctx, f.relay(), tt.env, []byte(tt.msg)); err != nil {
				t.Fatalf("Send: %v", err)
			}
			msgs := f.sink.Messages()
			if len(msgs) != 1 {
				t.Fatalf("sink got %d messages, want 1", len(msgs))
			}
			m := msgs[0]
			if m.From != tt.env.From || len(m.To) != 1 || m.To[0] != tt.env.To || string(m.Data) != tt.wantData {
				t.Errorf("sink got from %q to %q data %q, want %q, %q, %q", m.From, m.To, m.Data, tt.env.From, tt.env.To, tt.wantData)
			}
			// go-smtp sends BODY=8BITMIME whenever the server offers it.
			if m.MailOpts.UTF8 != tt.wantUTF8 || m.MailOpts.Body != smtp.Body8BitMIME || m.MailOpts.Size != int64(len(tt.msg)) {
				t.Errorf("MAIL options %+v, want SMTPUTF8 %v, BODY=8BITMIME, SIZE=%d", m.MailOpts, tt.wantUTF8, len(tt.msg))
			}
		})
	}
}

func TestEnvelopeInvalid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		env       delivery.Envelope
		wantEnh   string
		wantStage string
	}{
		{delivery.Envelope{From: "a@sender.test", To: "no-at-sign"}, "5.1.3", delivery.StageRcpt},
		{delivery.Envelope{From: "a@sender.test", To: "b@"}, "5.1.3", delivery.StageRcpt},
		{delivery.Envelope{From: "a@sender.test", To: "b@example.test>\r\nRCPT TO:<c@x.test"}, "5.1.3", delivery.StageRcpt},
		{delivery.Envelope{From: "a@sender.test\r\n", To: "b@example.test"}, "5.1.7", delivery.StageMail},
	}
	f := setup(t, smtptest.Config{})
	for _, tt := range tests {
		_, err := f.tr.Send(context.Background(), f.relay(), tt.env, []byte(testMsg))
		e := asError(t, err)
		if e.Enhanced != tt.wantEnh || e.Stage != tt.wantStage || e.Temporary {
			t.Errorf("Send(%q) = %v, want permanent %s at %s", tt.env, err, tt.wantEnh, tt.wantStage)
		}
	}
	if n := f.sessions(); n != 0 {
		t.Errorf("sink saw %d sessions, want none", n)
	}
}
