package emailaddr

import (
	"unicode"
	"unicode/utf8"
)

// Character classes of ASCII bytes (RFC 5322 section 3.2 and 4).
const (
	cAtext  uint8 = 1 << iota // atext
	cLDH                      // letter, digit, hyphen: what DNS labels allow
	cQtext                    // qtext
	cCtext                    // ctext
	cDtext                    // dtext
	cObsCtl                   // obs-NO-WS-CTL: 1-8, 11, 12, 14-31, 127
	cUpper                    // A-Z, to know when a domain needs lower-casing
)

// charClass is a lookup table so that the hot loops do one load per byte.
var charClass = buildCharClass()

func buildCharClass() (t [256]uint8) {
	for c := 0; c < 128; c++ {
		alpha := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		digit := c >= '0' && c <= '9'
		if alpha || digit || c == '-' {
			t[c] |= cLDH | cAtext
		}
		if c >= 'A' && c <= 'Z' {
			t[c] |= cUpper
		}
		switch c {
		case '!', '#', '$', '%', '&', '\'', '*', '+', '/', '=', '?', '^', '_', '`', '{', '|', '}', '~':
			t[c] |= cAtext
		}
		if c >= 33 && c <= 126 {
			if c != '"' && c != '\\' {
				t[c] |= cQtext
			}
			if c != '(' && c != ')' && c != '\\' {
				t[c] |= cCtext
			}
			if c != '[' && c != ']' && c != '\\' {
				t[c] |= cDtext
			}
		}
		if c >= 1 && c <= 8 || c == 11 || c == 12 || c >= 14 && c <= 31 || c == 127 {
			t[c] |= cObsCtl
		}
	}
	return t
}

// localRune reports whether a non-ASCII rune may appear in a local part
// (RFC 6531 UTF8-non-ascii, narrowed): letters, marks, numbers and
// punctuation. Symbols, separators and "other" (controls, format, private
// use, unassigned) are refused, as egulias does: they never occur in issued
// mailbox names and are a spoofing and injection vector.
func localRune(r rune) bool {
	return unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P)
}

// domainRune reports whether a non-ASCII rune may appear in a U-label before
// IDNA checks it: letters, marks and numbers only, because x/net/idna lets
// through some IDNA2008-invalid (NV8) symbols such as "€" and "¡".
func domainRune(r rune) bool {
	return unicode.In(r, unicode.L, unicode.M, unicode.N)
}

// parser holds the scan state. The input is never copied during the scan.
type parser struct {
	s    string
	i    int
	warn warnSet
}

func (p *parser) eof() bool { return p.i >= len(p.s) }

// decode reads the non-ASCII rune at p.i without consuming it.
func (p *parser) decode() (rune, int, *ParseError) {
	r, n := utf8.DecodeRuneInString(p.s[p.i:])
	if r == utf8.RuneError && n <= 1 {
		return r, n, perr(DetailInvalidUTF8, p.i)
	}
	return r, n, nil
}

// cfws skips any run of comments and folding white space (RFC 5322 CFWS)
// and reports whether it found any.
func (p *parser) cfws() (bool, *ParseError) {
	found := false
	for !p.eof() {
		switch p.s[p.i] {
		case ' ', '\t', '\r':
			if _, err := p.fws(); err != nil {
				return found, err
			}
			p.warn |= wFWS // any white space outside quotes is CFWS
		case '(':
			if err := p.comment(); err != nil {
				return found, err
			}
		default:
			return found, nil
		}
		found = true
	}
	return found, nil
}

// fws consumes one run of white space starting at a WSP or CR and returns
// the number of line folds in it. A fold is CRLF and must be followed by
// white space; two folds in one run are obs-FWS. Folds also draw WarnFWS
// here because inside quoted strings and literals plain WSP does not.
func (p *parser) fws() (int, *ParseError) {
	folds := 0
	afterCRLF := false
	for !p.eof() {
		switch p.s[p.i] {
		case ' ', '\t':
			p.i++
			afterCRLF = false
			continue
		case '\r':
			if p.i+1 >= len(p.s) || p.s[p.i+1] != '\n' {
				return folds, perr(DetailCRWithoutLF, p.i)
			}
			if afterCRLF {
				return folds, perr(DetailCRLFTwice, p.i)
			}
			p.i += 2
			folds++
			afterCRLF = true
			continue
		}
		break
	}
	if afterCRLF {
		return folds, perr(DetailCRLFWithoutWhiteSpace, p.i)
	}
	if folds > 0 {
		p.warn |= wFWS
	}
	if folds > 1 {
		p.warn |= wObsolete
	}
	return folds, nil
}

// comment consumes a possibly nested comment starting at "(".
func (p *parser) comment() *ParseError {
	open := p.i
	p.warn |= wComment
	p.i++
	depth := 1
	for depth > 0 {
		if p.eof() {
			return perr(DetailUnclosedComment, open)
		}
		c := p.s[p.i]
		switch {
		case c == '(':
			depth++
			p.i++
		case c == ')':
			depth--
			p.i++
		case c == '\\':
			if err := p.quotedPair(); err != nil {
				return err
			}
		case c == ' ' || c == '\t' || c == '\r':
			if _, err := p.fws(); err != nil {
				return err
			}
		case charClass[c]&cCtext != 0:
			p.i++
		case charClass[c]&cObsCtl != 0:
			p.warn |= wObsolete // obs-ctext
			p.i++
		case c >= utf8.RuneSelf:
			r, n, err := p.decode()
			if err != nil {
				return err
			}
			if !unicode.IsGraphic(r) {
				return perr(DetailExpectingCtext, p.i)
			}
			p.i += n
		default: // NUL, bare LF
			return perr(DetailExpectingCtext, p.i)
		}
	}
	return nil
}

// quotedPair consumes "\" and the character it quotes. RFC 6531 does not
// extend quoted-pair to UTF-8, so a non-ASCII character is an error;
// controls, CR and LF are obs-qp.
func (p *parser) quotedPair() *ParseError {
	at := p.i
	p.i++
	if p.eof() {
		return perr(DetailBackslashAtEnd, at)
	}
	c := p.s[p.i]
	switch {
	case c >= utf8.RuneSelf:
		return perr(DetailExpectingQuotedPair, p.i)
	case c == ' ' || c == '\t' || c > 32 && c < 127:
	default:
		p.warn |= wObsolete // obs-qp
	}
	p.i++
	return nil
}
