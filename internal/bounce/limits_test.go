package bounce

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

func TestParseSize(t *testing.T) {
	t.Parallel()
	msg := "Subject: hi\n\n" + strings.Repeat("x", 87) // 100 bytes
	if _, err := Parse(strings.NewReader(msg), 100); err != nil {
		t.Errorf("Parse(100 bytes, limit 100) = %v, want no error", err)
	}
	if _, err := Parse(strings.NewReader(msg+"x"), 100); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Parse(101 bytes, limit 100) = %v, want ErrTooLarge", err)
	}
	boom := errors.New("boom")
	if _, err := Parse(iotest.ErrReader(boom), 100); !errors.Is(err, boom) {
		t.Errorf("Parse(failing reader) = %v, want %v", err, boom)
	}
}

// dsn builds a delivery-status report with the given per-recipient groups.
func dsn(groups ...string) string {
	return "From: MAILER-DAEMON@mx.example.net\nContent-Type: multipart/report; report-type=delivery-status; boundary=b\n\n" +
		"--b\nContent-Type: message/delivery-status\n\nReporting-MTA: dns; mx.example.net\n\n" +
		strings.Join(groups, "\n") + "\n--b--\n"
}

func TestParseCases(t *testing.T) {
	t.Parallel()
	var many []string
	for i := range MaxRecipients + 20 {
		many = append(many, fmt.Sprintf("Final-Recipient: rfc822; u%d@example.net\nAction: failed\nStatus: 5.1.1\n", i))
	}
	tests := []struct {
		name, in string
		want     []Report
	}{
		{"garbage header", " \x00garbage\n:::\n", []Report{}},
		{"empty", "", []Report{}},
		{"successes only (RFC 3464 2.3.3)", dsn("Final-Recipient: rfc822; a@example.net\nAction: delivered\nStatus: 2.0.0\n"), []Report{}},
		{"no Action: status class decides", dsn("Final-Recipient: rfc822; a@example.net\nStatus: 4.2.0\n"),
			[]Report{{Kind: KindTemporary, Recipient: "a@example.net", Status: "4.2.0"}}},
		{"no Status: taken from Diagnostic-Code", dsn("Final-Recipient: rfc822; <A@Example.net>\nAction: failed\nDiagnostic-Code: smtp; 554 rejected\n"),
			[]Report{{Kind: KindPermanent, Recipient: "a@example.net", Status: "5.0.0", DiagnosticCode: "smtp; 554 rejected"}}},
		{"DSN without recipients", dsn(), []Report{{Kind: KindUnknown}}},
		{"bounce without a recipient", "From: MAILER-DAEMON@mx.example.net\nSubject: failure notice\n\nRemote said: 554 go away\n",
			[]Report{{Kind: KindUnknown, Status: "5.0.0", DiagnosticCode: "smtp; 554 go away"}}},
		{"X-Failed-Recipients fallback", "X-Failed-Recipients: A@example.net, b@example.net\nSubject: oops\n\nno details\n",
			[]Report{{Kind: KindPermanent, Recipient: "a@example.net"}, {Kind: KindPermanent, Recipient: "b@example.net"}}},
		{"delay warning in text", "From: postmaster@mx.example.net\nSubject: Delivery delayed\nIn-Reply-To: <id@example.org>\n\n<a@example.net>: 451 4.4.1 timed out; will retry\n",
			[]Report{{Kind: KindTemporary, Recipient: "a@example.net", Status: "4.4.1", DiagnosticCode: "smtp; 451 4.4.1 timed out; will retry",
				OriginalMessageID: "<id@example.org>"}}},
		{"the copy of the original does not count", "From: MAILER-DAEMON@mx.example.net\nSubject: failure notice\n\n<a@example.net>:\n550 5.1.1 no\n\n" +
			"--- Below this line is a copy of the message.\n\nSubject: your order is delayed\nMessage-ID: <o@example.org>\n\n<b@example.net>: 451 later\n",
			[]Report{{Kind: KindPermanent, Recipient: "a@example.net", Status: "5.1.1", DiagnosticCode: "smtp; 550 5.1.1 no", OriginalMessageID: "<o@example.org>"}}},
		{"IP address is not a status", "From: MAILER-DAEMON@mx.example.net\n\n<a@example.net>: host 10.5.1.1 refused\n",
			[]Report{{Kind: KindPermanent, Recipient: "a@example.net"}}},
		{"ARF with Original-Rcpt-To", "Content-Type: multipart/report; report-type=feedback-report; boundary=b\n\n--b\n" +
			"Content-Type: message/feedback-report\n\nFeedback-Type: Fraud\nOriginal-Rcpt-To: <X@example.com>\nOriginal-Rcpt-To: y@example.com\n--b--\n",
			[]Report{{Kind: KindComplaint, Recipient: "x@example.com", FeedbackType: "fraud"},
				{Kind: KindComplaint, Recipient: "y@example.com", FeedbackType: "fraud"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Parse(strings.NewReader(tt.in), 0)
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse(%q)\n got %#v, %v\nwant %#v", tt.in, got, err, tt.want)
			}
		})
	}
	t.Run("at most MaxRecipients", func(t *testing.T) {
		t.Parallel()
		got, err := Parse(strings.NewReader(dsn(many...)), 0)
		if err != nil || len(got) != MaxRecipients || got[MaxRecipients-1].Recipient != "u99@example.net" {
			t.Errorf("Parse(%d recipients) = %d reports, %v; want %d", len(many), len(got), err, MaxRecipients)
		}
	})
}
