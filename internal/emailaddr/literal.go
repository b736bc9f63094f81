package emailaddr

import (
	"net/netip"
	"strings"
	"unicode/utf8"
)

// literal scans a domain literal starting at "[" and returns its raw text
// (brackets included) and its text: the content with CR and LF removed,
// together with any backslash quoting them, and nothing else changed.
// RFC 5322:
//
//	domain-literal = [CFWS] "[" *([FWS] dtext) [FWS] "]" [CFWS]
//	dtext          = %d33-90 / %d94-126 / obs-dtext
//	obs-dtext      = obs-NO-WS-CTL / quoted-pair
//
// A bare LF is accepted as obs-dtext, as isemail and egulias both do.
func (p *parser) literal() (raw, text string, err *ParseError) {
	open := p.i
	p.i++
	crlf := false
	for {
		if p.eof() {
			return "", "", perr(DetailUnclosedDomainLiteral, open)
		}
		c := p.s[p.i]
		switch {
		case c == ']':
			p.i++
			raw = p.s[open:p.i]
			if crlf {
				return raw, stripCRLF(raw[1 : len(raw)-1]), nil
			}
			return raw, raw[1 : len(raw)-1], nil
		case charClass[c]&cDtext != 0:
			p.i++
		case c == '\\':
			if err := p.quotedPair(); err != nil {
				return "", "", err
			}
			p.warn |= wObsolete // a quoted-pair is obs-dtext
			crlf = crlf || p.s[p.i-1] == '\r' || p.s[p.i-1] == '\n'
		case c == ' ' || c == '\t' || c == '\r':
			folds, err := p.fws()
			if err != nil {
				return "", "", err
			}
			crlf = crlf || folds > 0
		case c == '\n' || charClass[c]&cObsCtl != 0:
			p.warn |= wObsolete // obs-dtext
			crlf = crlf || c == '\n'
			p.i++
		case c >= utf8.RuneSelf:
			if _, _, err := p.decode(); err != nil {
				return "", "", err
			}
			return "", "", perr(DetailExpectingDtext, p.i)
		default: // "[", NUL
			return "", "", perr(DetailExpectingDtext, p.i)
		}
	}
}

// stripCRLF removes CR and LF, and a backslash quoting either, from
// validated literal content, so that Domain and ASCIIDomain never carry
// line breaks.
func stripCRLF(s string) string {
	b := make([]byte, 0, len(s))
	for j := 0; j < len(s); j++ {
		c := s[j]
		if c == '\\' && (s[j+1] == '\r' || s[j+1] == '\n') {
			j++
			continue
		}
		if c != '\r' && c != '\n' {
			b = append(b, c)
		}
	}
	return string(b)
}

// classifyLiteral decides what a literal's text is (RFC 5321 4.1.3) and
// returns its canonical bracketed form and the warnings it draws. raw is
// the literal as written, reused when it is already canonical. Text with
// quoted-pairs, white space or controls is never an address literal, as in
// isemail; its canonical form is the text itself, so that normalizing is
// idempotent.
func classifyLiteral(raw, text string) (string, warnSet) {
	if ip, ok := parseIPv4(text); ok {
		if len(text) == len(raw)-2 && !leadingZero(text) {
			return raw, wLiteral // already canonical
		}
		return "[" + ip.String() + "]", wLiteral
	}
	if len(text) >= 5 && strings.EqualFold(text[:5], "IPv6:") {
		if ip, dep, ok := parseIPv6(text[5:]); ok {
			w := wLiteral
			if dep {
				w |= wObsolete
			}
			return "[IPv6:" + ip.String() + "]", w
		}
	}
	return "[" + text + "]", wLiteral | wNonAddr
}

// leadingZero reports whether a dotted-decimal text has a part such as
// "01" that canonical form would shorten.
func leadingZero(t string) bool {
	for i := 0; i+1 < len(t); i++ {
		if t[i] == '0' && (i == 0 || t[i-1] == '.') && t[i+1] != '.' {
			return true
		}
	}
	return false
}

// parseIPv4 parses RFC 5321 IPv4-address-literal: four Snum of 1-3 digits,
// each at most 255.
func parseIPv4(s string) (netip.Addr, bool) {
	var b [4]byte
	for k := 0; k < 4; k++ {
		if k > 0 {
			if s == "" || s[0] != '.' {
				return netip.Addr{}, false
			}
			s = s[1:]
		}
		v, n := 0, 0
		for n < len(s) && n < 4 && s[n] >= '0' && s[n] <= '9' {
			v = v*10 + int(s[n]-'0')
			n++
		}
		if n == 0 || n > 3 || v > 255 {
			return netip.Addr{}, false
		}
		b[k] = byte(v)
		s = s[n:]
	}
	return netip.AddrFrom4(b), s == ""
}

// parseIPv6 parses RFC 5321 IPv6-addr: 8 groups, or at most 6 groups
// around one "::", with an optional trailing IPv4 address counting as two
// groups. A "::" standing for a single group is accepted but reported as
// deprecated, as isemail does (RFC5321_IPV6DEPRECATED).
func parseIPv6(s string) (ip netip.Addr, deprecated, ok bool) {
	var g [8]uint16
	n, gap := 0, -1 // groups written; group index of "::"
	if strings.HasPrefix(s, "::") {
		gap, s = 0, s[2:]
	}
	for s != "" {
		if v4, ok := parseIPv4(s); ok {
			if n > 6 {
				return ip, false, false
			}
			a := v4.As4()
			g[n], g[n+1] = uint16(a[0])<<8|uint16(a[1]), uint16(a[2])<<8|uint16(a[3])
			n += 2
			break
		}
		v, k := 0, 0
		for k < len(s) && k < 5 && hexVal(s[k]) >= 0 {
			v = v<<4 | hexVal(s[k])
			k++
		}
		if k == 0 || k > 4 || n == 8 {
			return ip, false, false
		}
		g[n] = uint16(v)
		n++
		s = s[k:]
		if s == "" {
			break
		}
		if s[0] != ':' || len(s) == 1 {
			return ip, false, false // bad character, or a single trailing colon
		}
		s = s[1:]
		if s[0] == ':' {
			if gap >= 0 {
				return ip, false, false // a second "::"
			}
			gap, s = n, s[1:]
		}
	}
	switch {
	case gap < 0 && n != 8, gap >= 0 && n > 7:
		return ip, false, false
	}
	var b [16]byte
	for k := 0; k < n; k++ {
		at := k
		if gap >= 0 && k >= gap {
			at += 8 - n
		}
		b[2*at], b[2*at+1] = byte(g[k]>>8), byte(g[k])
	}
	return netip.AddrFrom16(b), gap >= 0 && n == 7, true
}

func hexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
