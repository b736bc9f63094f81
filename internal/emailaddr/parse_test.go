package emailaddr

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestParseWarnings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []Warning
	}{
		// RFC 5321 4.1.2 Mailbox: ordinary addresses, including RFC 6531.
		{"test@iana.org", nil},
		{"Test.User+tag@Example.COM", nil},
		{"!#$%&`*+/=?^`{|}~@iana.org", nil},
		{"инфо@письмо.рф", nil},
		{"müller@möller.de", nil},
		{"test@xn--hxajbheg2az3al.xn--jxalpdlp", nil},
		// RFC 5322 3.2.4 quoted strings.
		{`"test"@iana.org`, []Warning{WarnQuotedString}},
		{`""@iana.org`, []Warning{WarnQuotedString}},
		{`"a b"@iana.org`, []Warning{WarnQuotedString}},
		{"\"a\r\n b\"@iana.org", []Warning{WarnQuotedString, WarnFWS}},
		// RFC 5322 3.2.2 comments and folding white space.
		{"(comment)test@iana.org", []Warning{WarnComment}},
		{"test@iana.org(comment)", []Warning{WarnComment}},
		{" test@iana.org", []Warning{WarnFWS}},
		{"\r\n test@iana.org", []Warning{WarnFWS}},
		{"test @iana.org", []Warning{WarnCFWSNearAt, WarnFWS}},
		{"test@ iana.org", []Warning{WarnCFWSNearAt, WarnFWS}},
		{"test(c)@iana.org", []Warning{WarnComment, WarnCFWSNearAt}},
		// RFC 5322 section 4 obsolete syntax.
		{`"test"."test"@iana.org`, []Warning{WarnQuotedString, WarnObsoleteSyntax}},
		{"test . test@iana.org", []Warning{WarnFWS, WarnObsoleteSyntax}},
		{"test.(c)test@iana.org", []Warning{WarnComment, WarnObsoleteSyntax}},
		{"test@iana .org", []Warning{WarnFWS, WarnObsoleteSyntax}},
		{"\r\n \r\n test@iana.org", []Warning{WarnFWS, WarnObsoleteSyntax}},
		{"\"\x07\"@iana.org", []Warning{WarnQuotedString, WarnObsoleteSyntax}},
		{"\"\\\x00\"@iana.org", []Warning{WarnQuotedString, WarnObsoleteSyntax}},
		{"(\x7f)test@iana.org", []Warning{WarnComment, WarnObsoleteSyntax}},
		// RFC 5321 4.1.3 address literals and RFC 5322 general literals.
		{"test@[255.255.255.255]", []Warning{WarnDomainLiteral}},
		{"test@[IPv6:1111:2222:3333:4444:5555::8888]", []Warning{WarnDomainLiteral}},
		{"test@[IPv6:::]", []Warning{WarnDomainLiteral}},
		{"test@[IPv6:1111:2222:3333:4444::255.255.255.255]", []Warning{WarnDomainLiteral}},
		{"test@[IPv6:1111:2222:3333:4444:5555:6666::8888]", []Warning{WarnDomainLiteral, WarnObsoleteSyntax}},
		{"test@[IPv6:1::2:]", []Warning{WarnDomainLiteral, WarnNonAddressLiteral}},
		{"test@[IPv6:1111::4444:5555::8888]", []Warning{WarnDomainLiteral, WarnNonAddressLiteral}},
		{"test@[255.255.255.256]", []Warning{WarnDomainLiteral, WarnNonAddressLiteral}},
		{"test@[::1]", []Warning{WarnDomainLiteral, WarnNonAddressLiteral}},
		{"test@[RFC 5322 domain literal]", []Warning{WarnDomainLiteral, WarnNonAddressLiteral}},
		{`test@[RFC-\]-literal]`, []Warning{WarnDomainLiteral, WarnNonAddressLiteral, WarnObsoleteSyntax}},
		// RFC 5321 4.5.3.1 sizes (warnings, not errors).
		{strings.Repeat("a", 64) + "@iana.org", nil},
		{strings.Repeat("a", 65) + "@iana.org", []Warning{WarnLocalPartTooLong}},
		{`"` + strings.Repeat("a", 63) + `"@iana.org`, []Warning{WarnQuotedString, WarnLocalPartTooLong}},
		{strings.Repeat("a", 64) + "@" + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 62) + ".ee",
			[]Warning{WarnAddressTooLong}},
		// Domain shape.
		{"test@io", []Warning{WarnDotlessDomain}},
		{"test@iana.123", []Warning{WarnNumericTLD}},
		{"test@255.255.255.255", []Warning{WarnNumericTLD}},
		{"test@123.com", nil},
	}
	for _, tt := range tests {
		a, err := Parse(tt.in)
		if err != nil {
			t.Errorf("Parse(%q): unexpected error %v", tt.in, err)
			continue
		}
		if !slices.Equal(a.Warnings, tt.want) {
			t.Errorf("Parse(%q).Warnings = %v, want %v", tt.in, a.Warnings, tt.want)
		}
		if got, want := a.Strict(), len(tt.want) == 0; got != want {
			t.Errorf("Parse(%q).Strict() = %v, want %v", tt.in, got, want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in     string
		detail string
		pos    int
	}{
		{"", DetailEmpty, 0},
		{"test", DetailNoDomain, 4},
		{"test@", DetailNoDomain, 5},
		{"test@ ", DetailNoDomain, 6},
		{"@iana.org", DetailNoLocalPart, 0},
		{"a@b@c.com", DetailUnexpectedAt, 3},
		{"a@@c.com", DetailUnexpectedAt, 2},
		{".test@iana.org", DetailDotAtStart, 0},
		{"test.@iana.org", DetailDotAtEnd, 4},
		{"te..st@iana.org", DetailConsecutiveDots, 3},
		{"test@.iana.org", DetailDotAtStart, 5},
		{"test@iana.org.", DetailDotAtEnd, 13},
		{"test@iana..org", DetailConsecutiveDots, 10},
		{"te st@iana.org", DetailAtextAfterCFWS, 3},
		{"test(c)test@iana.org", DetailAtextAfterCFWS, 7},
		{`"test"test@iana.org`, DetailAtextAfterQuoted, 6},
		{"test@[1.2.3.4]x", DetailAtextAfterLiteral, 14},
		{`test"@iana.org`, DetailInvalidCharacter, 4},
		{"test\\@test@iana.org", DetailInvalidCharacter, 4},
		{"test@iana.org\n", DetailInvalidCharacter, 13},
		{"examp║le@symfony.com", DetailInvalidCharacter, 5},
		{`"test@iana.org`, DetailUnclosedQuotedString, 0},
		{`"test\"@iana.org`, DetailUnclosedQuotedString, 0},
		{"(test@iana.org", DetailUnclosedComment, 0},
		{"test@iana.org(c\\)", DetailUnclosedComment, 13},
		{"test)@iana.org", DetailUnopenedComment, 4},
		{"test@[1.2.3.4", DetailUnclosedDomainLiteral, 5},
		{"test@[a[b]", DetailExpectingDtext, 7},
		{"test@[ä]", DetailExpectingDtext, 6},
		{`"test\©"@iana.org`, DetailExpectingQuotedPair, 6},
		{"\"test\x00\"@iana.org", DetailExpectingQtext, 5},
		{"\"\n\"@iana.org", DetailExpectingQtext, 1},
		{"(\n)test@iana.org", DetailExpectingCtext, 1},
		{"test@iana.org(c\\", DetailBackslashAtEnd, 15},
		{"test@iana.org\r", DetailCRWithoutLF, 13},
		{"\"\rtest\"@iana.org", DetailCRWithoutLF, 1},
		{"\r\ntest@iana.org", DetailCRLFWithoutWhiteSpace, 2},
		{"test@iana.org\r\n", DetailCRLFWithoutWhiteSpace, 15},
		{" \r\n\r\n test@iana.org", DetailCRLFTwice, 3},
		{"test@-iana.org", DetailDomainHyphenStart, 5},
		{"test@iana-.org", DetailDomainHyphenEnd, 9},
		{"test@iana/icann.org", DetailInvalidDomainCharacter, 9},
		{"test@email_a.com", DetailInvalidDomainCharacter, 10},
		{"test@email€a.com", DetailInvalidDomainCharacter, 10},
		{"test@" + strings.Repeat("a", 64) + ".com", DetailLabelTooLong, 5},
		{"test@" + strings.Repeat("ъ", 64) + ".com", DetailLabelTooLong, 5},
		{"test@" + strings.Repeat(strings.Repeat("a", 63)+".", 4)[:254], DetailDomainTooLong, 5},
		{"test@xn--zz.com", DetailInvalidIDN, 5},
		{"test@ＥＸＡＭＰＬＥ.com", DetailInvalidIDN, 5},
		{"\x80@iana.org", DetailInvalidUTF8, 0},
		{"test@iana.\xe2", DetailInvalidUTF8, 10},
	}
	for _, tt := range tests {
		_, err := Parse(tt.in)
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("Parse(%q) error = %v, want *ParseError %s", tt.in, err, tt.detail)
			continue
		}
		if pe.Detail != tt.detail || pe.Pos != tt.pos {
			t.Errorf("Parse(%q) = %s at %d, want %s at %d", tt.in, pe.Detail, pe.Pos, tt.detail, tt.pos)
		}
		if pe.Reason() != ReasonSyntax {
			t.Errorf("Parse(%q).Reason() = %q, want %q", tt.in, pe.Reason(), ReasonSyntax)
		}
	}
}

func TestParseErrorString(t *testing.T) {
	t.Parallel()
	_, err := Parse("test..x@iana.org")
	if got, want := err.Error(), "emailaddr: consecutive_dots at 5"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}
