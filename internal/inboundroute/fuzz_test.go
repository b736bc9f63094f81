package inboundroute

import (
	"net/url"
	"strings"
	"testing"

	"github.com/postline/postline/internal/apperr"
)

// FuzzParseExpression: Compile never panics; a refusal is Invalid naming
// the expression; an accepted expression matches any recipient and
// header without panicking. Run longer with
// go test -fuzz FuzzParseExpression ./internal/inboundroute/.
func FuzzParseExpression(f *testing.F) {
	for _, s := range []string{
		`match_recipient("foo@bar.com")`, `match_recipient('.*@bar.com')`, `match_recipient("^chris\+(.*)@example.com$")`,
		`match_recipient("(?P<user>.*?)@(?P<domain>.*)")`, `match_header("subject", ".*support")`,
		`match_header('X-Mailgun-Sflag', 'Yes')`, `match_recipient('^(.*)@example.com$') and match_header("Content-Language", "^(.*)en-US(.*)$")`,
		`catch_all()`, ` catch_all ( ) `, `match_recipient("a{,2}b\Z")`, `match_recipient("\"q\"@x")`, `match_recipient('it\'s')`,
		`match_recipient("x") or catch_all()`, `not(match_recipient("x"))`, `match_recipient("(a)\1")`, `match_recipient("foo(?=@)")`,
		`match_recipient("a)|(b")`, `match_recipient("[]a]")`, `match_recipient("[^]a]\\")`, `match_recipient("a\`, `match_recipient("`,
		`match_recipient("x") and`, `and`, `(`, `"`, `match_header("a:b", "x")`, "match_recipient(\"\xff\")", `match_recipient("(?i)(?-i)A")`,
	} {
		f.Add(s, "Ann@shop.example", "Re: urgent")
	}
	f.Fuzz(func(t *testing.T, expr, rcpt, subject string) {
		r, err := Compile(expr, []string{"stop()"})
		if err != nil {
			if e, ok := apperr.As(err); !ok || e.Code != apperr.Invalid || len(e.Fields["expression"]) == 0 {
				t.Fatalf("Compile(%q) error %v: want Invalid naming expression", expr, err)
			}
			return
		}
		h := hdr("Subject", subject, "To", rcpt)
		ok, caps := r.Match(rcpt, h)
		for i := 1; ok && i <= r.groups; i++ {
			c := caps.Group(i)
			if !strings.Contains(rcpt, c) && !strings.Contains(subject, c) && !strings.Contains(rcpt+subject, c) {
				// A decoded header value may differ from what was sent;
				// a capture of the recipient never does.
				if r.DecidesOnRecipient() {
					t.Fatalf("%q: capture %d %q is not in the recipient %q", expr, i, c, rcpt)
				}
			}
		}
		r.MatchRecipient(rcpt)
		Evaluate([]*Route{r}, rcpt, h)
	})
}

// FuzzParseAction: Compile never panics on an action; a refusal is
// Invalid naming the action; an accepted one, filled with any captures,
// yields only URLs and addresses that are valid and keep the destination
// host or domain as written (captures cannot choose where mail goes), or
// is skipped with a reason.
func FuzzParseAction(f *testing.F) {
	for _, s := range []string{
		`forward("http://myhost.com/post/?mailbox=\1")`, `forward("http://mycallback.com/domains/\g<domain>/users/\g<user>")`,
		`forward("mailbox@myapp.com")`, `forward("http://myapp.com/messages, mailbox@myapp.com")`, `store()`,
		`store(notify="http://mydomain.com/callback")`, `stop()`, `forward('\1+\2@keep.example')`, `forward("https://\1.evil.com/")`,
		`forward("\1@\2")`, `forward("https://x.example\1")`, `forward("https://a:b@x.example/\1")`, `forward("https://x.example/\\")`,
		`forward("https://x.example/\g<3>")`, `forward("https://x.example/\99")`, `store(notify = 'https://x.example/?a=\g<user>')`,
		`stop() stop()`, `forward(`, `forward("a@b.example"`, `frob()`, `forward("https://[::1]:99/\1")`, `forward("HTTPS://X.example/\1")`,
	} {
		f.Add(s, "Ann.Lee+tag@shop.example", "Re: order #5 & x")
	}
	const expr = `match_recipient("(?s)(?P<user>.*)@(?P<domain>.*)") and match_header("Subject", "(?s)(.*)")`
	f.Fuzz(func(t *testing.T, action, rcpt, subject string) {
		r, err := Compile(expr, []string{action})
		if err != nil {
			if e, ok := apperr.As(err); !ok || e.Code != apperr.Invalid || (len(e.Fields["actions[0]"]) == 0 && len(e.Fields["actions"]) == 0) {
				t.Fatalf("Compile(%q) error %v: want Invalid naming the action", action, err)
			}
			return
		}
		ok, caps := r.Match(rcpt, hdr("Subject", subject))
		if !ok {
			caps = Captures{groups: []string{rcpt, subject, "x"}}
		}
		for i, a := range r.Actions(caps) {
			st := r.steps[i]
			switch {
			case a.Skipped != "":
				if a.URL != "" || a.Address != "" || a.Notify != "" {
					t.Fatalf("%q: a skipped action kept its destination: %+v", action, a)
				}
			case a.URL != "" || a.Notify != "":
				u := a.URL + a.Notify
				d := st.dest
				if st.notify != nil {
					d = *st.notify
				}
				want, _ := url.Parse(d.tpl.sample())
				got, err := url.Parse(u)
				if checkURL(u) != nil || err != nil || got.Host != want.Host || got.Scheme != want.Scheme {
					t.Fatalf("%q with %q / %q gave URL %q (host %q), want host %q", action, rcpt, subject, u, got.Host, want.Host)
				}
			case a.Address != "":
				sample := st.dest.tpl.sample()
				if checkAddress(a.Address) != nil || a.Address[strings.LastIndexByte(a.Address, '@'):] != sample[strings.LastIndexByte(sample, '@'):] {
					t.Fatalf("%q with %q gave address %q; want a valid one at the written domain of %q", action, rcpt, a.Address, sample)
				}
			case a.Kind == KindForward:
				t.Fatalf("%q: a forward without destination: %+v", action, a)
			}
		}
	})
}
