package emailaddr

import (
	"strings"
	"testing"
)

func TestAddressFields(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in                         string
		local, domain, ascii, norm string
		literal                    bool
	}{
		{in: "test@iana.org", local: "test", domain: "iana.org", ascii: "iana.org", norm: "test@iana.org"},
		// Local parts are case-sensitive (RFC 5321 2.4); domains are not.
		{in: "Test.User@Example.COM", local: "Test.User", domain: "Example.COM", ascii: "example.com", norm: "Test.User@example.com"},
		{in: "müller@MÖLLER.de", local: "müller", domain: "MÖLLER.de", ascii: "xn--mller-jua.de", norm: "müller@xn--mller-jua.de"},
		{in: "инфо@письмо.рф", local: "инфо", domain: "письмо.рф", ascii: "xn--h1aigbl0e.xn--p1ai", norm: "инфо@xn--h1aigbl0e.xn--p1ai"},
		// Quoting is minimised: kept only when the content is no dot-atom.
		{in: `"test"@iana.org`, local: "test", domain: "iana.org", ascii: "iana.org", norm: "test@iana.org"},
		{in: `"\a"@iana.org`, local: "a", domain: "iana.org", ascii: "iana.org", norm: "a@iana.org"},
		{in: `"a b"@iana.org`, local: "a b", domain: "iana.org", ascii: "iana.org", norm: `"a b"@iana.org`},
		{in: `"a\"b"@iana.org`, local: `a"b`, domain: "iana.org", ascii: "iana.org", norm: `"a\"b"@iana.org`},
		{in: `"a..b"@iana.org`, local: "a..b", domain: "iana.org", ascii: "iana.org", norm: `"a..b"@iana.org`},
		{in: `""@iana.org`, local: "", domain: "iana.org", ascii: "iana.org", norm: `""@iana.org`},
		{in: `"test"."test"@iana.org`, local: "test.test", domain: "iana.org", ascii: "iana.org", norm: "test.test@iana.org"},
		// CFWS and folds vanish; CR and LF never survive.
		{in: "(c) test . test (d) @ (e) iana . org (f)", local: "test.test", domain: "iana.org", ascii: "iana.org", norm: "test.test@iana.org"},
		{in: "\"a\r\n b\"@iana.org", local: "a b", domain: "iana.org", ascii: "iana.org", norm: `"a b"@iana.org`},
		{in: "\"\\\n\"@iana.org", local: "", domain: "iana.org", ascii: "iana.org", norm: `""@iana.org`},
		// Literals: canonical address text, general literals kept.
		{in: "test@[001.2.3.4]", local: "test", domain: "[001.2.3.4]", ascii: "[1.2.3.4]", norm: "test@[1.2.3.4]", literal: true},
		{in: "test@[0.10.0.1]", local: "test", domain: "[0.10.0.1]", ascii: "[0.10.0.1]", norm: "test@[0.10.0.1]", literal: true},
		{in: "test@[1.2.3.4\n]", local: "test", domain: "[1.2.3.4]", ascii: "[1.2.3.4]", norm: "test@[1.2.3.4]", literal: true},
		{in: "test@[ipv6:1111:2222:3333:4444:5555:6666::8888]", local: "test", domain: "[ipv6:1111:2222:3333:4444:5555:6666::8888]",
			ascii: "[IPv6:1111:2222:3333:4444:5555:6666:0:8888]", norm: "test@[IPv6:1111:2222:3333:4444:5555:6666:0:8888]", literal: true},
		{in: "test@[RFC 5322\r\n literal]", local: "test", domain: "[RFC 5322 literal]", ascii: "[RFC 5322 literal]",
			norm: "test@[RFC 5322 literal]", literal: true},
	}
	for _, tt := range tests {
		a, err := Parse(tt.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.in, err)
			continue
		}
		if a.Local != tt.local || a.Domain != tt.domain || a.ASCIIDomain != tt.ascii || a.Literal != tt.literal {
			t.Errorf("Parse(%q) = {Local %q Domain %q ASCIIDomain %q Literal %v}, want {%q %q %q %v}",
				tt.in, a.Local, a.Domain, a.ASCIIDomain, a.Literal, tt.local, tt.domain, tt.ascii, tt.literal)
		}
		if got := a.Normalized(); got != tt.norm {
			t.Errorf("Parse(%q).Normalized() = %q, want %q", tt.in, got, tt.norm)
		}
		checkRoundTrip(t, tt.in, a)
	}
}

// checkRoundTrip asserts Normalized's contract for a successfully parsed a.
func checkRoundTrip(t *testing.T, in string, a Address) {
	t.Helper()
	n := a.Normalized()
	if strings.ContainsAny(n, "\r\n") || strings.ContainsAny(a.Local+a.Domain+a.ASCIIDomain, "\r\n") {
		t.Fatalf("Parse(%q): CR or LF in result %+v (normalized %q)", in, a, n)
	}
	b, err := Parse(n)
	if err != nil {
		t.Fatalf("Parse(%q).Normalized() = %q, which does not parse: %v", in, n, err)
	}
	if n2 := b.Normalized(); n2 != n {
		t.Fatalf("Parse(%q).Normalized() = %q, which normalizes to %q", in, n, n2)
	}
}

func TestZeroAddressNormalized(t *testing.T) {
	t.Parallel()
	if got := (Address{}).Normalized(); got != "" {
		t.Errorf("Address{}.Normalized() = %q, want \"\"", got)
	}
}
