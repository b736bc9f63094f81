package smtptest_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/emersion/go-smtp"
	"github.com/postline/postline/internal/smtptest"
)

func TestScriptRcpt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		replies []smtptest.Reply
		want    []int // per attempt: SMTP code of the RCPT failure, 0 for accepted
	}{
		{"450 then accept", []smtptest.Reply{{Code: 450, Enhanced: [3]int{4, 2, 0}, Message: "mailbox busy"}}, []int{450, 0, 0}},
		{"550 twice", []smtptest.Reply{{Code: 550, Enhanced: [3]int{5, 1, 1}}, {Code: 550}}, []int{550, 550, 0}},
		{"explicit accept", []smtptest.Reply{{Code: 250}, {Code: 451}}, []int{0, 451, 0}},
	}
	for _, tt := range tests {
		s := smtptest.New(t, smtptest.Config{})
		s.Script("User@Example.NET", tt.replies...)
		var got []int
		for range tt.want {
			c := dial(t, s)
			if err := c.Mail("from@example.com", nil); err != nil {
				t.Fatalf("%s: Mail: %v", tt.name, err)
			}
			err := c.Rcpt("user@example.net", nil)
			got = append(got, code(err))
			if err != nil && code(err) == 0 {
				t.Errorf("%s: Rcpt = %v, want an *smtp.SMTPError", tt.name, err)
			}
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: RCPT codes per attempt = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestScriptRcptKeepsEnhancedCode(t *testing.T) {
	t.Parallel()
	s := smtptest.New(t, smtptest.Config{})
	s.Script("to@example.net", smtptest.Reply{Code: 550, Enhanced: [3]int{5, 1, 1}, Message: "no such user"})
	c := dial(t, s)
	c.Mail("from@example.com", nil)
	err := c.Rcpt("to@example.net", nil)
	var e *smtp.SMTPError
	if !errors.As(err, &e) || e.Code != 550 || e.EnhancedCode != (smtp.EnhancedCode{5, 1, 1}) || e.Message != "no such user" {
		t.Errorf("Rcpt = %#v, want 550 5.1.1 no such user", err)
	}
}

func TestScriptData(t *testing.T) {
	t.Parallel()
	s := smtptest.New(t, smtptest.Config{})
	s.ScriptData("b@example.net", smtptest.Reply{Code: 554, Enhanced: [3]int{5, 7, 1}, Message: "spam"})

	// Not addressed to b: accepted.
	if err := send(dial(t, s), "f@example.com", []string{"a@example.net"}, body); err != nil {
		t.Errorf("message to a: %v", err)
	}
	// Addressed to b: RCPT accepted, DATA refused once.
	if err := send(dial(t, s), "f@example.com", []string{"a@example.net", "b@example.net"}, body); code(err) != 554 {
		t.Errorf("first message to a, b = %v, want 554", err)
	}
	if err := send(dial(t, s), "f@example.com", []string{"b@example.net"}, body); err != nil {
		t.Errorf("second message to b: %v", err)
	}
	if n := len(s.Messages()); n != 2 {
		t.Errorf("%d messages recorded, want 2 (the refused one is not)", n)
	}
}

func TestScriptDisconnect(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		reply    smtptest.Reply
		atData   bool
		startTLS bool
		wantCode int // SMTP code the client sees, 0 for a dropped connection
	}{
		{"reset at RCPT", smtptest.Reply{Disconnect: true}, false, false, 0},
		{"421 at RCPT", smtptest.Reply{Code: 421, Enhanced: [3]int{4, 3, 2}, Disconnect: true}, false, false, 421},
		{"reset at DATA", smtptest.Reply{Disconnect: true}, true, false, 0},
		{"reset at RCPT over TLS", smtptest.Reply{Disconnect: true}, false, true, 0},
		{"421 at DATA over TLS", smtptest.Reply{Code: 421, Disconnect: true}, true, true, 421},
	}
	tlsCfg := smtptest.SelfSignedTLS(t)
	for _, tt := range tests {
		s := smtptest.New(t, smtptest.Config{TLS: tlsCfg})
		if tt.atData {
			s.ScriptData("to@example.net", tt.reply)
		} else {
			s.Script("to@example.net", tt.reply)
		}
		var c *smtp.Client
		if tt.startTLS {
			c = dialStartTLS(t, s, tlsCfg)
		} else {
			c = dial(t, s)
		}
		err := send(c, "f@example.com", []string{"to@example.net"}, body)
		if err == nil || code(err) != tt.wantCode {
			t.Errorf("%s: send = %v, want code %d", tt.name, err, tt.wantCode)
		}
		if err := c.Noop(); err == nil {
			t.Errorf("%s: NOOP after disconnect succeeded", tt.name)
		}
		// The next attempt is accepted: the script is consumed.
		if err := send(dial(t, s), "f@example.com", []string{"to@example.net"}, body); err != nil {
			t.Errorf("%s: retry: %v", tt.name, err)
		}
		if n, want := s.Sessions(), 2; n != want {
			t.Errorf("%s: Sessions() = %d, want %d", tt.name, n, want)
		}
	}
}
