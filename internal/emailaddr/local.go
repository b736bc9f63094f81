package emailaddr

import (
	"strings"
	"unicode/utf8"
)

// localInfo is what the local-part scan learns, for Parse to assemble the
// Address without a second look unless the local part is unusual.
type localInfo struct {
	start, end int  // raw span from the first word to the end of the last
	length     int  // octets as written, minus CFWS and folds (RFC 5321 limit)
	simple     bool // a plain dot-atom: Local is s[start:end]
}

// local scans the local part up to and including the "@":
//
//	local-part = [CFWS] word *([CFWS] "." [CFWS] word) [CFWS]
//
// which covers dot-atom, quoted-string and obs-local-part alike. CFWS
// between words and dots, or quoted words joined by dots, is obsolete.
func (p *parser) local() (localInfo, *ParseError) {
	li := localInfo{simple: true}
	if _, err := p.cfws(); err != nil {
		return li, err
	}
	li.start = p.i
	words, quoted, lastQuoted := 0, false, false
	for {
		if p.eof() {
			return li, perr(DetailNoDomain, p.i)
		}
		switch c := p.s[p.i]; {
		case c == '@':
			if words == 0 {
				return li, perr(DetailNoLocalPart, p.i)
			}
			return li, perr(DetailDotAtEnd, p.i-1)
		case c == '.':
			if words == 0 {
				return li, perr(DetailDotAtStart, p.i)
			}
			return li, perr(DetailConsecutiveDots, p.i)
		case c == '"':
			n, err := p.quotedString()
			if err != nil {
				return li, err
			}
			li.length += n
			quoted, lastQuoted, li.simple = true, true, false
		default:
			n, err := p.atom()
			if err != nil {
				return li, err
			}
			if n == 0 {
				return li, p.unexpected(false, false)
			}
			li.length += n
			lastQuoted = false
		}
		words++
		li.end = p.i
		hadCFWS, err := p.cfws()
		if err != nil {
			return li, err
		}
		if p.eof() {
			return li, perr(DetailNoDomain, p.i)
		}
		switch p.s[p.i] {
		case '@':
			if hadCFWS {
				p.warn |= wNearAt
			}
			if quoted {
				p.warn |= wQuoted
				if words > 1 {
					p.warn |= wObsolete
				}
			}
			p.i++
			return li, nil
		case '.':
			p.i++
			li.length++
			after, err := p.cfws()
			if err != nil {
				return li, err
			}
			if hadCFWS || after {
				p.warn |= wObsolete
				li.simple = false
			}
		default:
			return li, p.unexpected(hadCFWS, lastQuoted)
		}
	}
}

// unexpected builds the error for a character that cannot start or follow
// a word, naming the most helpful cause.
func (p *parser) unexpected(afterCFWS, afterQuoted bool) *ParseError {
	c := p.s[p.i]
	startsWord := charClass[c]&cAtext != 0 || c == '"' || c >= utf8.RuneSelf
	switch {
	case c == ')':
		return perr(DetailUnopenedComment, p.i)
	case c == '@':
		return perr(DetailUnexpectedAt, p.i)
	case afterCFWS && startsWord:
		return perr(DetailAtextAfterCFWS, p.i)
	case afterQuoted && startsWord:
		return perr(DetailAtextAfterQuoted, p.i)
	case c >= utf8.RuneSelf:
		if _, _, err := p.decode(); err != nil {
			return err
		}
	}
	return perr(DetailInvalidCharacter, p.i)
}

// atom consumes 1*atext (UTF-8 allowed per RFC 6531) and returns its length;
// 0 means the next character cannot start an atom.
func (p *parser) atom() (int, *ParseError) {
	start := p.i
	for !p.eof() {
		c := p.s[p.i]
		if charClass[c]&cAtext != 0 {
			p.i++
			continue
		}
		if c < utf8.RuneSelf {
			break
		}
		r, n, err := p.decode()
		if err != nil {
			return 0, err
		}
		if !localRune(r) {
			return 0, perr(DetailInvalidCharacter, p.i)
		}
		p.i += n
	}
	return p.i - start, nil
}

// quotedString consumes a quoted string starting at its opening quote and
// returns its length as written (quotes and backslashes included, folds'
// CRLF excluded), the figure RFC 5321's 64-octet limit applies to.
func (p *parser) quotedString() (int, *ParseError) {
	open := p.i
	p.i++
	crlf := 0
	for {
		if p.eof() {
			return 0, perr(DetailUnclosedQuotedString, open)
		}
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return p.i - open - crlf, nil
		case c == '\\':
			if err := p.quotedPair(); err != nil {
				return 0, err
			}
		case c == ' ' || c == '\t' || c == '\r':
			// Plain WSP here is content, not a warning; fws warns on folds.
			folds, err := p.fws()
			if err != nil {
				return 0, err
			}
			crlf += 2 * folds
		case charClass[c]&cQtext != 0:
			p.i++
		case charClass[c]&cObsCtl != 0:
			p.warn |= wObsolete // obs-qtext
			p.i++
		case c >= utf8.RuneSelf:
			r, n, err := p.decode()
			if err != nil {
				return 0, err
			}
			if !localRune(r) {
				return 0, perr(DetailExpectingQtext, p.i)
			}
			p.i += n
		default: // NUL, bare LF
			return 0, perr(DetailExpectingQtext, p.i)
		}
	}
}

// decodeLocal rebuilds the local part's content from a raw span the scan
// has already validated: CFWS dropped, quotes and backslashes removed, CR
// and LF dropped.
func decodeLocal(raw string) string {
	var b strings.Builder
	b.Grow(len(raw))
	inQuote := false
	for j := 0; j < len(raw); j++ {
		c := raw[j]
		switch {
		case c == '"':
			inQuote = !inQuote
		case c == '\\':
			j++
			if raw[j] != '\r' && raw[j] != '\n' {
				b.WriteByte(raw[j])
			}
		case c == '\r' || c == '\n':
		case inQuote:
			b.WriteByte(c)
		case c == ' ' || c == '\t':
		case c == '(':
			j = skipComment(raw, j)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// skipComment returns the index of the ")" closing the comment opened at
// raw[j]; the comment has already been validated.
func skipComment(raw string, j int) int {
	depth := 0
	for ; j < len(raw); j++ {
		switch raw[j] {
		case '\\':
			j++
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return j
}
