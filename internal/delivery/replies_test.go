package delivery_test

import (
	"testing"
	"time"

	"github.com/postline/postline/internal/delivery"
	"github.com/postline/postline/internal/smtptest"
)

// TestReplies scripts the sink's answers and checks the classification, and
// that the transport recovers: a refusal leaves the connection reusable
// (after RSET), a dropped connection is replaced.
func TestReplies(t *testing.T) {
	t.Parallel()
	const rcpt = "rcpt@example.test"
	tests := []struct {
		name         string
		rcpt, data   []smtptest.Reply
		wantCode     int
		wantEnh      string
		wantStage    string
		wantTemp     bool
		wantRejected bool
		wantRetry    time.Duration
		wantSessions int // after the failed Send and one more to another recipient
	}{
		{
			name:     "450 at rcpt (greylisting)",
			rcpt:     []smtptest.Reply{{Code: 450, Enhanced: [3]int{4, 2, 0}, Message: "Greylisted, try again in 60 seconds"}},
			wantCode: 450, wantEnh: "4.2.0", wantStage: delivery.StageRcpt, wantTemp: true,
			wantRetry: time.Minute, wantSessions: 1,
		},
		{
			name:     "550 5.1.1 at rcpt",
			rcpt:     []smtptest.Reply{{Code: 550, Enhanced: [3]int{5, 1, 1}, Message: "No such user"}},
			wantCode: 550, wantEnh: "5.1.1", wantStage: delivery.StageRcpt, wantRejected: true, wantSessions: 1,
		},
		{
			name:     "550 5.7.1 at rcpt is policy, not the recipient",
			rcpt:     []smtptest.Reply{{Code: 550, Enhanced: [3]int{5, 7, 1}, Message: "Client host blocked"}},
			wantCode: 550, wantEnh: "5.7.1", wantStage: delivery.StageRcpt, wantSessions: 1,
		},
		{
			name:     "552 5.3.4 at data",
			data:     []smtptest.Reply{{Code: 552, Enhanced: [3]int{5, 3, 4}, Message: "Message too big"}},
			wantCode: 552, wantEnh: "5.3.4", wantStage: delivery.StageData, wantSessions: 1,
		},
		{
			name:     "552 5.2.2 at data: mailbox full is not a rejection",
			data:     []smtptest.Reply{{Code: 552, Enhanced: [3]int{5, 2, 2}, Message: "Mailbox full"}},
			wantCode: 552, wantEnh: "5.2.2", wantStage: delivery.StageData, wantSessions: 1,
		},
		{
			name:     "451 at data with a retry hint",
			data:     []smtptest.Reply{{Code: 451, Enhanced: [3]int{4, 3, 0}, Message: "Busy, retry after 5 minutes"}},
			wantCode: 451, wantEnh: "4.3.0", wantStage: delivery.StageData, wantTemp: true,
			wantRetry: 5 * time.Minute, wantSessions: 1,
		},
		{
			name:     "421 and hang up at rcpt",
			rcpt:     []smtptest.Reply{{Code: 421, Enhanced: [3]int{4, 3, 2}, Message: "Shutting down", Disconnect: true}},
			wantCode: 421, wantEnh: "4.3.2", wantStage: delivery.StageRcpt, wantTemp: true, wantSessions: 2,
		},
		{
			name:    "connection reset at rcpt",
			rcpt:    []smtptest.Reply{{Disconnect: true}},
			wantEnh: "4.4.2", wantStage: delivery.StageRcpt, wantTemp: true, wantSessions: 2,
		},
		{
			name:    "connection reset at end of data",
			data:    []smtptest.Reply{{Disconnect: true}},
			wantEnh: "4.4.2", wantStage: delivery.StageData, wantTemp: true, wantSessions: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, smtptest.Config{})
			f.sink.Script(rcpt, tt.rcpt...)
			f.sink.ScriptData(rcpt, tt.data...)
			_, err := f.send(t, f.relay(), rcpt)
			e := asError(t, err)
			if e.Code != tt.wantCode || e.Enhanced != tt.wantEnh || e.Stage != tt.wantStage ||
				e.Temporary != tt.wantTemp || e.Host != "127.0.0.1" {
				t.Errorf("error %v = %+v, want Code %d, Enhanced %s, Stage %s, Temporary %v, Host 127.0.0.1",
					e, *e, tt.wantCode, tt.wantEnh, tt.wantStage, tt.wantTemp)
			}
			if got := e.RecipientRejected(); got != tt.wantRejected {
				t.Errorf("RecipientRejected() = %v, want %v", got, tt.wantRejected)
			}
			if got := e.RetryAfter(); got != tt.wantRetry {
				t.Errorf("RetryAfter() = %v, want %v", got, tt.wantRetry)
			}
			if res, err := f.send(t, f.relay(), "other@example.test"); err != nil {
				t.Fatalf("Send after the failure: %v", err)
			} else if res.Reused != (tt.wantSessions == 1) {
				t.Errorf("Send after the failure: Reused = %v, want %v", res.Reused, tt.wantSessions == 1)
			}
			if n := f.sessions(); n != tt.wantSessions {
				t.Errorf("sink saw %d sessions, want %d", n, tt.wantSessions)
			}
			if msgs := f.sink.Messages(); len(msgs) != 1 || msgs[0].To[0] != "other@example.test" {
				t.Errorf("sink got %+v, want only the message to other@example.test", msgs)
			}
		})
	}
}
