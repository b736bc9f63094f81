package inboundroute

import (
	"net/textproto"
	"strings"
	"testing"

	"github.com/postline/postline/internal/apperr"
)

// hdr builds a message header from name, value pairs.
func hdr(kv ...string) textproto.MIMEHeader {
	h := textproto.MIMEHeader{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

// The grammar as Mailgun's documentation writes it, and how each
// expression matches: from the start of the value, case-insensitively,
// with captures numbered across the expression.
func TestExpressionsMatch(t *testing.T) {
	t.Parallel()
	cases := []struct {
		expr  string
		rcpt  string
		h     textproto.MIMEHeader
		match bool
		caps  []string // \1, \2, ... when it matches
	}{
		{`match_recipient("foo@bar.com")`, "foo@bar.com", nil, true, nil},
		{`match_recipient("foo@bar.com")`, "FOO@Bar.COM", nil, true, nil},
		{`match_recipient("foo@bar.com")`, "xfoo@bar.com", nil, false, nil}, // from the start, as re.match
		{`match_recipient("foo@bar.com$")`, "foo@bar.com.evil", nil, false, nil},
		{`match_recipient('.*@bar.com')`, "anyone@bar.com", nil, true, nil},
		{`match_recipient("^chris\+(.*)@example.com$")`, "chris+Orders@example.com", nil, true, []string{"Orders"}},
		{`match_recipient("^chris\+(.*)@example.com$")`, "chris@example.com", nil, false, nil},
		{`match_recipient("(?P<user>.*?)@(?P<domain>.*)")`, "ann@shop.example", nil, true, []string{"ann", "shop.example"}},
		{`match_recipient("(?-i)Ann@x.example")`, "ann@x.example", nil, false, nil},
		{`match_recipient("a{,2}b@x\.example\Z")`, "aab@x.example", nil, true, nil}, // Python's {,n} and \Z
		{`match_recipient("a{,2}b@x\.example\Z")`, "aaab@x.example", nil, false, nil},
		{`match_recipient("\"q\"@x.example")`, `"q"@x.example`, nil, true, nil},
		{`match_recipient('it\'s@x.example')`, "it's@x.example", nil, true, nil},
		{`match_header("subject", ".*support")`, "a@x.example", hdr("Subject", "Need SUPPORT now"), true, nil},
		{`match_header("subject", ".*support")`, "a@x.example", hdr("Subject", "sales"), false, nil},
		{`match_header("subject", ".*support")`, "a@x.example", nil, false, nil},
		{`match_header('X-Mailgun-Sflag', 'Yes')`, "a@x.example", hdr("X-Mailgun-Sflag", "yes"), true, nil},
		{`match_header("subject", "(.*)(urgent|help|asap)(.*)")`, "a@x.example", hdr("Subject", "please help me"), true, []string{"please ", "help", " me"}},
		// Every value of a name is tried; RFC 2047 words are decoded first.
		{`match_header("X-Tag", "(b.*)")`, "a@x.example", hdr("X-Tag", "alpha", "X-Tag", "beta"), true, []string{"beta"}},
		{`match_header("Subject", "Grüße")`, "a@x.example", hdr("Subject", "=?UTF-8?B?R3LDvMOfZQ==?="), true, nil},
		{"match_recipient('^(.*)@example.com$') and match_header(\"Content-Language\", \"^(.*)en-US(.*)$\")", "joe@example.com",
			hdr("Content-Language", "en-US"), true, []string{"joe", "", ""}},
		{"match_recipient('^(.*)@example.com$')\n  AND\tmatch_header(\"Content-Language\", \"^(.*)en-US(.*)$\")", "joe@example.com",
			hdr("Content-Language", "de-DE"), false, nil},
		{`catch_all()`, "whoever@x.example", nil, true, nil},
		{` catch_all ( ) `, "whoever@x.example", nil, true, nil},
	}
	for _, c := range cases {
		r, err := Compile(c.expr, []string{"stop()"})
		if err != nil {
			t.Errorf("Compile(%s): %v", c.expr, err)
			continue
		}
		var h Header
		if c.h != nil {
			h = c.h
		}
		ok, caps := r.Match(c.rcpt, h)
		if ok != c.match {
			t.Errorf("%s against %q %v: match %v, want %v", c.expr, c.rcpt, c.h, ok, c.match)
			continue
		}
		for i, want := range c.caps {
			if got := caps.Group(i + 1); got != want {
				t.Errorf("%s against %q: \\%d = %q, want %q", c.expr, c.rcpt, i+1, got, want)
			}
		}
	}
}

// Every refusal is Invalid, names the field, and says what is wrong in
// words a Mailgun user recognises.
func TestCompileErrors(t *testing.T) {
	t.Parallel()
	long := `match_recipient("` + strings.Repeat("a", MaxExpressionBytes) + `")`
	cases := []struct {
		expr    string
		actions []string
		field   string
		want    string
	}{
		{``, []string{"stop()"}, "expression", "The expression is required"},
		{long, []string{"stop()"}, "expression", "at most 4000 bytes"},
		{`match_recipent("x")`, nil, "expression", `unknown filter "match_recipent"`},
		{`match_recipient(x)`, nil, "expression", "quoted strings"},
		{`match_recipient("x"`, nil, "expression", "expected , or )"},
		{`match_recipient("x)`, nil, "expression", "has no closing \""},
		{`match_recipient("x") or match_recipient("y")`, nil, "expression", `"or" is not supported`},
		{`match_recipient("x") match_recipient("y")`, nil, "expression", `expected "and" between filters`},
		{`match_recipient("x") and`, nil, "expression", "expected a filter"},
		{`not(match_recipient("x"))`, nil, "expression", `"not" is not supported`},
		{`catch_all() and match_recipient("x")`, nil, "expression", "catch_all() stands alone"},
		{`match_recipient("a", "b")`, nil, "expression", "takes one pattern"},
		{`match_header("Subject")`, nil, "expression", "takes a header name and a pattern"},
		{`match_header("Bad Name", "x")`, nil, "expression", "is not a header name"},
		{`match_recipient(pattern="x")`, nil, "expression", "takes no named arguments"},
		{"match_recipient(\"a\nb\")", nil, "expression", "control characters"},
		{`match_recipient("a(b")`, nil, "expression", "missing closing )"},
		{`match_recipient("a)|(b")`, nil, "expression", "unexpected )"},
		{`match_recipient("(a)\1")`, nil, "expression", `backreference \1: not supported`},
		{`match_recipient("(?P<x>a)(?P=x)")`, nil, "expression", "named backreferences (?P=name): not supported"},
		{`match_recipient("foo(?=@)")`, nil, "expression", "lookahead (?=...): not supported"},
		{`match_recipient("(?<!x)y")`, nil, "expression", "negative lookbehind"},
		{`match_recipient("a*+")`, nil, "expression", "possessive"},
		{`match_recipient("a{1001}")`, nil, "expression", "at most 1000 times"},
		{`match_recipient(".{0,1000}.{0,1000}")`, nil, "expression", "more than 3000"},
		{`match_recipient("(?P<n>a)") and match_header("Subject", "(?P<n>b)")`, nil, "expression", `capture name "n" is used twice`},
		{`match_recipient("x") and ` + strings.Repeat(`match_recipient("x") and `, MaxFilters) + `match_recipient("x")`, nil, "expression", "at most 10 filters"},
		{`catch_all()`, []string{"stop()", "frob()"}, "actions[1]", `unknown action "frob"`},
		{`catch_all()`, []string{"stop() stop()"}, "actions[0]", "one action a string"},
		{`catch_all()`, []string{"stop(1)"}, "actions[0]", "quoted strings"},
		{`catch_all()`, []string{`stop("x")`}, "actions[0]", "stop takes no arguments"},
		{`catch_all()`, []string{`forward()`}, "actions[0]", "forward takes one destination"},
		{`catch_all()`, []string{`forward("ftp://x.example/")`}, "actions[0]", "an absolute http or https URL or an email address"},
		{`catch_all()`, []string{`forward("https://x.example/?ids=1,2")`}, "actions[0]", "an absolute http or https URL or an email address"},
		{`catch_all()`, []string{`forward("https://x.example/a b")`}, "actions[0]", "printable ASCII without spaces"},
		{`catch_all()`, []string{`forward("https://x.example/` + strings.Repeat("a", MaxURLBytes) + `")`}, "actions[0]", "at most 2048 bytes"},
		{`catch_all()`, []string{`forward("\"a b\"@x.example")`}, "actions[0]", "not a plain email address"},
		{`catch_all()`, []string{`forward("a@[127.0.0.1]")`}, "actions[0]", "not a plain email address"},
		{`catch_all()`, []string{`store("https://x.example/")`}, "actions[0]", "store takes nothing or a notify URL"},
		{`catch_all()`, []string{`store(notify="a@x.example")`}, "actions[0]", "notify URL must be an absolute http or https URL"},
		{`catch_all()`, []string{`store(url="https://x.example/")`}, "actions[0]", "store takes nothing or a notify URL"},
		{`match_recipient("(.*)@x")`, []string{`forward("https://x.example/\2")`}, "actions[0]", "capture 2 does not exist: the expression has 1"},
		{`match_recipient("(.*)@x")`, []string{`forward("https://x.example/\g<who>")`}, "actions[0]", `\g<who> names no capture`},
		{`match_recipient("(.*)@x")`, []string{`forward("https://x.example/\n")`}, "actions[0]", `unknown escape \n`},
		{`match_recipient("(.*)@x")`, []string{`forward("https://\1.example/")`}, "actions[0]", "scheme or host"},
		{`match_recipient("(.*)@x")`, []string{`forward("https://x.example\1")`}, "actions[0]", "scheme or host"},
		{`match_recipient("(.*)@x")`, []string{`forward("\1")`}, "actions[0]", "an absolute http or https URL or an email address"},
		{`match_recipient("(.*)@x")`, []string{`forward("box@\1.example")`}, "actions[0]", "address's domain"},
		{`catch_all()`, []string{"stop()", "stop()", "stop()", "stop()", "stop()", "stop()", "stop()", "stop()", "stop()", "stop()", "stop()"}, "actions", "at most 10 actions"},
		{`catch_all()`, []string{`forward("https://a.example/, b@x.example, c@x.example, d@x.example, e@x.example, f@x.example")`,
			`forward("g@x.example, h@x.example, i@x.example, j@x.example, k@x.example")`}, "actions", "it has 11"},
	}
	for _, c := range cases {
		_, err := Compile(c.expr, c.actions)
		e, ok := apperr.As(err)
		if !ok || e.Code != apperr.Invalid || len(e.Fields[c.field]) == 0 || !strings.Contains(e.Fields[c.field][0], c.want) {
			t.Errorf("Compile(%.80s, %.80q) = %v; want invalid %s containing %q", c.expr, c.actions, err, c.field, c.want)
		}
	}
}
