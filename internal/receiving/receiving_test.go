package receiving

import (
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/inboundroute"
)

func compile(t *testing.T, exprs ...string) []*inboundroute.Route {
	t.Helper()
	var out []*inboundroute.Route
	for i, e := range exprs {
		r, err := inboundroute.Definition{ID: strings.Repeat("a", 23) + string(rune('0'+i)), Priority: i, Expression: e,
			Actions: []string{"store()"}}.Compile()
		if err != nil {
			t.Fatalf("%s: %v", e, err)
		}
		out = append(out, r)
	}
	return out
}

// TestDecide: what RCPT answers from the routes and the recipient alone.
func TestDecide(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		routes []string
		rcpt   string
		want   Verdict
	}{
		{nil, "a@x.example", NoRoute},
		{[]string{`match_recipient("^sales@")`}, "sales@x.example", Accept},
		{[]string{`match_recipient("^sales@")`}, "Sales@X.example", Accept}, // patterns ignore case, as addresses do
		{[]string{`match_recipient("^sales@")`}, "presales@x.example", NoRoute},
		{[]string{`match_header("subject", "urgent")`}, "a@x.example", AfterData},
		{[]string{`match_recipient("^desk@") and match_header("subject", "urgent")`}, "sales@x.example", NoRoute},
		{[]string{`match_recipient("^desk@") and match_header("subject", "urgent")`}, "desk@x.example", AfterData},
		// A later route that decides on the recipient settles it.
		{[]string{`match_header("subject", "urgent")`, `match_recipient("^desk@")`}, "desk@x.example", Accept},
		// A catch_all() takes what nothing earlier took, whatever the header says.
		{[]string{`match_header("subject", "urgent")`, "catch_all()"}, "a@x.example", Accept},
		{[]string{`match_recipient("^b@")`, "catch_all()"}, "a@x.example", Accept},
	} {
		if got := decide(compile(t, c.routes...), c.rcpt); got != c.want {
			t.Errorf("decide(%q, %s) = %v, want %v", c.routes, c.rcpt, got, c.want)
		}
	}
}

const mixedMessage = "From: =?ISO-8859-1?Q?Andr=E9?= <andre@sender.example>\r\nSubject: =?UTF-8?B?w6l0w6k=?=\r\n" +
	"X-Long: one\r\n two\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"b1\"\r\n\r\n" +
	"--b1\r\nContent-Type: multipart/alternative; boundary=\"b2\"\r\n\r\n" +
	"--b2\r\nContent-Type: text/plain; charset=iso-8859-1\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\nCaf=E9 cr=E8me\r\n" +
	"--b2\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<p>Caf\xc3\xa9</p>\r\n--b2--\r\n" +
	"--b1\r\nContent-Type: image/png\r\nContent-ID: <logo@x>\r\nContent-Disposition: inline\r\nContent-Transfer-Encoding: base64\r\n\r\naGVsbG8=\r\n" +
	"--b1\r\nContent-Type: application/octet-stream; name=\"=?UTF-8?Q?r=C3=A9sum=C3=A9.bin?=\"\r\nContent-Disposition: attachment\r\n\r\nbytes\r\n" +
	"--b1\r\nContent-Type: message/rfc822\r\n\r\nSubject: inner\r\n\r\ninner body\r\n--b1--\r\n"

func TestParse(t *testing.T) {
	t.Parallel()
	p := Parse([]byte(mixedMessage))
	if p.BodyPlain != "Café crème" || p.BodyHTML != "<p>Café</p>" {
		t.Errorf("bodies: %q %q", p.BodyPlain, p.BodyHTML)
	}
	if len(p.Headers) != 5 || p.Headers[2] != [2]string{"X-Long", "one two"} || p.Headers[0][0] != "From" {
		t.Errorf("headers: %q", p.Headers)
	}
	want := []Attachment{
		{Index: 1, ContentType: "image/png", Size: 5, ContentID: "logo@x", Inline: true},
		{Index: 2, Filename: "résumé.bin", ContentType: "application/octet-stream", Size: 5},
		{Index: 3, ContentType: "message/rfc822", Size: int64(len("Subject: inner\r\n\r\ninner body"))},
	}
	if len(p.Attachments) != len(want) {
		t.Fatalf("attachments: %+v", p.Attachments)
	}
	for i, a := range p.Attachments {
		if a != want[i] {
			t.Errorf("attachment %d = %+v, want %+v", i+1, a, want[i])
		}
		got, body, ok := Part([]byte(mixedMessage), a.Index)
		if !ok || got != a || int64(len(body)) != a.Size {
			t.Errorf("Part(%d) = %+v, %d bytes, %v", a.Index, got, len(body), ok)
		}
	}
	if _, body, _ := Part([]byte(mixedMessage), 1); string(body) != "hello" {
		t.Errorf("the inline image decodes to %q", body)
	}
	if _, _, ok := Part([]byte(mixedMessage), 4); ok {
		t.Error("Part past the last attachment")
	}
	// One text part without a MIME header is the text body.
	if p := Parse([]byte("Subject: s\r\n\r\njust text\r\n")); p.BodyPlain != "just text\r\n" || len(p.Attachments) != 0 {
		t.Errorf("a plain message: %+v", p)
	}
	h := header([]byte(mixedMessage))
	if f := fieldsOf(h); f.from != "André <andre@sender.example>" || f.subject != "été" {
		t.Errorf("fields: %+v", f)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(mixedMessage))
	f.Add([]byte("Content-Type: multipart/mixed; boundary=x\r\n\r\n--x\r\n\r\n--x--"))
	f.Add([]byte("Subject: a\n b\n\nbody"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		p := Parse(raw)
		if len(p.Attachments) > MaxParts {
			t.Fatalf("%d attachments", len(p.Attachments))
		}
		for _, a := range p.Attachments {
			got, body, ok := Part(raw, a.Index)
			if !ok || got.Index != a.Index || int64(len(body)) != a.Size {
				t.Fatalf("Part(%d) = %+v, %d bytes, %v; Parse said %+v", a.Index, got, len(body), ok, a)
			}
		}
	})
}

// TestParseAll: ParseAll is Parse with each attachment's bytes, the same
// as Part gives one by one; ContentIDMap names the parts with a
// Content-ID.
func TestParseAll(t *testing.T) {
	t.Parallel()
	p, data := ParseAll([]byte(mixedMessage))
	if one := Parse([]byte(mixedMessage)); len(p.Attachments) != len(one.Attachments) || p.BodyPlain != one.BodyPlain {
		t.Fatalf("ParseAll = %+v; want Parse's %+v", p, one)
	}
	if len(data) != len(p.Attachments) {
		t.Fatalf("%d bodies for %d attachments", len(data), len(p.Attachments))
	}
	for i, a := range p.Attachments {
		_, body, _ := Part([]byte(mixedMessage), a.Index)
		if string(data[i]) != string(body) || int64(len(data[i])) != a.Size {
			t.Errorf("attachment %d: %q (size %d); want Part's %q", a.Index, data[i], a.Size, body)
		}
	}
	cids := p.ContentIDMap(func(a Attachment) string { return "attachment-" + string(rune('0'+a.Index)) })
	if len(cids) != 1 || cids["<logo@x>"] != "attachment-1" {
		t.Errorf("ContentIDMap = %v; want <logo@x> alone", cids)
	}
}

// TestRouteCacheFormat: a route whose format alone changed (PUT
// {"format": "json"}) is compiled afresh, so that its actions post the
// new format, not the one cached before the change.
func TestRouteCacheFormat(t *testing.T) {
	t.Parallel()
	c := newRouteCache()
	d := inboundroute.Definition{ID: strings.Repeat("b", 24), Expression: `match_recipient("^a@")`,
		Actions: []string{`forward("https://app.example/in")`}}
	for _, format := range []string{inboundroute.FormatMailgun, inboundroute.FormatJSON, inboundroute.FormatRaw} {
		d.Format = format
		r, err := c.compile(d)
		if err != nil {
			t.Fatal(err)
		}
		if got := inboundroute.Evaluate([]*inboundroute.Route{r}, "a@x.example", nil); len(got) != 1 || got[0].Format != format {
			t.Errorf("after the format became %s, the route's actions are %+v", format, got)
		}
	}
}

// TestParseFoldedLinear: a field folded over a million lines (4 MB,
// within --smtp-max-bytes) is unfolded in one pass. Each line used to be
// appended to the value so far, so 160,000 lines took 25 s, and every try
// of every post of such a message, and every read of its stored copy,
// paid it again.
func TestParseFoldedLinear(t *testing.T) {
	t.Parallel()
	const n = 1_000_000
	raw := []byte("Subject: a\r\n" + strings.Repeat(" x\r\n", n) + "From: ann@sender.example\r\n\r\nbody\r\n")
	start := time.Now()
	p := Parse(raw)
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("Parse of a Subject folded over %d lines took %v", n, took)
	}
	if len(p.Headers) != 2 || p.Headers[0][0] != "Subject" || len(p.Headers[0][1]) != 1+2*n || !strings.HasSuffix(p.Headers[0][1], " x x") ||
		p.Headers[1] != [2]string{"From", "ann@sender.example"} {
		t.Errorf("headers: %d, the Subject %d bytes; want Subject of %d bytes (a x x ...) then From", len(p.Headers), len(p.Headers[0][1]), 1+2*n)
	}
}
