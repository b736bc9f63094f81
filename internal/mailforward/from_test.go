package mailforward

import (
	"bytes"
	"encoding/base64"
	"net/mail"
	"strings"
	"testing"
)

// TestRewriteFrom: From becomes "NAME via DOMAIN" <forwarded@DOMAIN> in
// its place, with a Reply-To of the original authors unless the message
// has one; whatever the display name holds (encoded CR LF, quotes,
// brackets, commas, NUL, 8-bit, a thousand characters), the result is one
// From and one Reply-To that a parser reads back as the name and
// addresses meant, and no other field appears.
func TestRewriteFrom(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, from, extra string
		wantName          string
		wantReplyTo       string // "" keeps the message's own
	}{
		{"plain", "Ann Sender <ann@bank.example>", "", "Ann Sender via shop.example", "ann@bank.example"},
		{"no display name", "ann@bank.example", "", "ann at bank.example via shop.example", "ann@bank.example"},
		{"encoded CR LF and a field", "=?utf-8?q?Evil=0D=0ABcc=3A_victim=40x.example?= <ceo@bank.example>", "",
			"Evil Bcc: victim@x.example via shop.example", "ceo@bank.example"},
		{"malformed encoded word", "=?utf-8?q?Evil=0D=0ABcc:_victim@x.example?= <ceo@bank.example>", "",
			"Evil Bcc: victim@x.example via shop.example", "ceo@bank.example"},
		{"no name before brackets", "<ceo@bank.example>", "", "ceo at bank.example via shop.example", "ceo@bank.example"},
		{"encoded LF LF and a body", "=?utf-8?b?" + b64("Boss\n\nbody text\r\nX-Injected: 1") + "?= <ceo@bank.example>", "",
			"Boss body text X-Injected: 1 via shop.example", "ceo@bank.example"},
		{"quotes and backslashes", `"Ann \"The Boss\" \\ Smith" <ann@bank.example>`, "", `Ann "The Boss" \ Smith via shop.example`, "ann@bank.example"},
		{"brackets, comma, at", `"a, <b@c.example>; d" <ann@bank.example>`, "", "a, <b@c.example>; d via shop.example", "ann@bank.example"},
		{"encoded NUL", "=?utf-8?q?A=00B?= <ann@bank.example>", "", "A B via shop.example", "ann@bank.example"},
		{"8-bit name", "=?utf-8?q?Ren=C3=A9_Caf=C3=A9?= <rene@bank.example>", "", "René Café via shop.example", "rene@bank.example"},
		{"encoded word inside quotes", `"=?utf-8?q?X=0D=0AY?=" <ann@bank.example>`, "", "=?utf-8?q?X=0D=0AY?= via shop.example", "ann@bank.example"},
		{"long name", `"` + strings.Repeat("é", 1000) + `" <ann@bank.example>`, "", strings.Repeat("é", 64) + " via shop.example", "ann@bank.example"},
		{"two authors", "Ann <ann@bank.example>, Bob <bob@bank.example>", "", "Ann via shop.example", "ann@bank.example,bob@bank.example"},
		{"own Reply-To kept", "Ann <ann@bank.example>", "Reply-To: desk@bank.example\r\n", "Ann via shop.example", ""},
	} {
		raw := "Received: by mx\r\nFrom: " + c.from + "\r\n" + c.extra + "Subject: hi\r\n\r\nbody\r\n"
		m, err := parseMessage([]byte(raw))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		addrs, ok := fromAddresses(m)
		if !ok {
			t.Fatalf("%s: From %q not read", c.name, c.from)
		}
		rewriteFrom(&m, addrs, "shop.example")
		out := m.bytes()
		head, body, _ := bytes.Cut(out, []byte("\r\n\r\n"))
		if string(body) != "body\r\n" {
			t.Errorf("%s: body %q", c.name, body)
		}
		for _, line := range strings.Split(string(head), "\r\n") {
			if len(line) > 998 || strings.ContainsAny(line, "\r\n\x00") {
				t.Errorf("%s: line %q", c.name, line)
			}
		}
		got, err := mail.ReadMessage(bytes.NewReader(out))
		if err != nil {
			t.Fatalf("%s: %v\n%s", c.name, err, out)
		}
		var keys []string
		for _, f := range strings.Split(string(head), "\r\n") {
			if f != "" && f[0] != ' ' && f[0] != '\t' {
				k, _, _ := strings.Cut(f, ":")
				keys = append(keys, k)
			}
		}
		wantKeys := "Received From Reply-To Subject" // the message's own Reply-To is after From too
		if strings.Join(keys, " ") != wantKeys {
			t.Errorf("%s: fields %v, want %s\n%s", c.name, keys, wantKeys, head)
		}
		from, err := addressParser.ParseList(got.Header.Get("From"))
		if err != nil || len(from) != 1 || from[0].Address != "forwarded@shop.example" || from[0].Name != c.wantName {
			t.Errorf("%s: From %q reads as %v, %v; want %q <forwarded@shop.example>", c.name, got.Header.Get("From"), from, err, c.wantName)
		}
		rt, err := addressParser.ParseList(got.Header.Get("Reply-To"))
		var rts []string
		for _, a := range rt {
			rts = append(rts, a.Address)
		}
		want := c.wantReplyTo
		if want == "" {
			want = "desk@bank.example"
		}
		if err != nil || strings.Join(rts, ",") != want {
			t.Errorf("%s: Reply-To %q reads as %v, %v; want %s", c.name, got.Header.Get("Reply-To"), rts, err, want)
		}
	}
}

// TestFromAddresses: only a message with one From that reads as
// addresses is rewritten.
func TestFromAddresses(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]bool{
		"From: a@b.example\r\n\r\n":                       true,
		"From: a@b.example\r\nFrom: c@d.example\r\n\r\n":  false,
		"Subject: none\r\n\r\n":                           false,
		"From: not an address\r\n\r\n":                    false,
		"From: Undisclosed <>\r\n\r\n":                    false,
		"From: Ann (unclosed <a@b.example>\r\n\r\n":       true,
		"From: =?x?q?@?= <a@b@c>\r\n\r\n":                 false,
		"FROM: =?utf-8?q?A?= <a@b.example>\r\n\r\nbody\n": true,
	} {
		m, err := parseMessage([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := fromAddresses(m); ok != want {
			t.Errorf("%q: read %v, want %v", raw, ok, want)
		}
	}
}

// TestDigestAndMarks: the digest ignores the trace this server put on
// top, and nothing else; a route's mark is found whatever its domain and
// case.
func TestDigestAndMarks(t *testing.T) {
	t.Parallel()
	msg := "From: a@b.example\r\nSubject: s\r\n\r\nbody\r\n"
	digest := func(s string) [32]byte {
		m, err := parseMessage([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return m.digest()
	}
	first := digest("Authentication-Results: mx; spf=pass\r\nReceived: from a by mx; Fri, 27 Nov 2026 10:00:00 +0000\r\n" + msg)
	again := digest("Authentication-Results: mx; spf=fail\r\nReceived: from b by mx; Fri, 27 Nov 2026 10:05:00 +0000\r\n" + msg)
	if first != again {
		t.Error("a second delivery of the same message has another digest")
	}
	for _, other := range []string{
		"Authentication-Results: mx; spf=pass\r\nReceived: from a by mx\r\n" + strings.Replace(msg, "body", "Body", 1),
		"Authentication-Results: mx; spf=pass\r\nReceived: from a by mx\r\n" + strings.Replace(msg, "Subject: s", "Subject: t", 1),
		"Authentication-Results: mx; spf=pass\r\nReceived: from a by mx\r\nReceived: from earlier\r\n" + msg,
	} {
		if digest(other) == first {
			t.Errorf("%q has the digest of another message", other)
		}
	}
	ms := []string{"aaaa@one.example", " BBBB@two.example "}
	for id, want := range map[string]bool{"aaaa": true, "bbbb": true, "AAAA": true, "cccc": false, "aaa": false} {
		if got := passedThrough(ms, id); got != want {
			t.Errorf("passedThrough(%v, %s) = %v", ms, id, got)
		}
	}
	if f := markOf("ABCD", "shop.example"); string(f.raw) != "X-Postline-Forwarded-By: abcd@shop.example\r\n" {
		t.Errorf("mark %q", f.raw)
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
