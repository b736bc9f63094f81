package event

import "testing"

func TestEntryReply(t *testing.T) {
	t.Parallel()
	cases := []struct {
		details string
		want    Reply
		str     string
	}{
		{`{"smtp_code":550,"enhanced_code":"5.1.1","smtp_message":"The email account that you tried to reach does not exist","attempt":1}`,
			Reply{550, "5.1.1", "The email account that you tried to reach does not exist"}, "550 5.1.1 The email account that you tried to reach does not exist"},
		// Some servers repeat the codes in the text: said once.
		{`{"smtp_code":421,"enhanced_code":"4.7.0","smtp_message":"421 4.7.0 Try again later"}`,
			Reply{421, "4.7.0", "421 4.7.0 Try again later"}, "421 4.7.0 Try again later"},
		// A DSN (RFC 3464): the diagnostic code carries the remote reply.
		{`{"source":"dsn","status":"5.1.1","diagnostic_code":"smtp; 550 5.1.1 <x@example.net>: user unknown","remote_mta":"dns; mx.example.net"}`,
			Reply{550, "5.1.1", "550 5.1.1 <x@example.net>: user unknown"}, "550 5.1.1 <x@example.net>: user unknown"},
		{`{"source":"dsn","status":"5.2.2","diagnostic_code":"X-Postfix; mailbox full"}`,
			Reply{0, "5.2.2", "X-Postfix; mailbox full"}, "5.2.2 X-Postfix; mailbox full"},
		// No server answered (a connection refused): nothing to show.
		{`{"smtp_code":0,"enhanced_code":"","smtp_message":"","stage":"connect"}`, Reply{}, ""},
		{`{"url":"https://example.net/"}`, Reply{}, ""},
		{`{}`, Reply{}, ""},
		{``, Reply{}, ""},
	}
	for _, c := range cases {
		got := Entry{Details: []byte(c.details)}.Reply()
		if got != c.want || got.String() != c.str {
			t.Errorf("Reply of %s = %+v %q, want %+v %q", c.details, got, got.String(), c.want, c.str)
		}
	}
}
