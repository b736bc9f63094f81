package emailaddr

import (
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// idnaProfile checks U-labels and A-labels under IDNA 2008 registration
// rules without UTS 46 mapping: input must already be lower case and NFC,
// so that a name which only maps to a valid one (full-width letters,
// ignorable code points, soft hyphens) is refused rather than silently
// turned into a different domain. Lengths are checked by the caller so
// that they get their own error details.
var idnaProfile = idna.New(idna.ValidateForRegistration(), idna.VerifyDNSLength(false))

// Limits from RFC 1035 section 2.3.4 (as refined by RFC 5321 4.5.3.1.2).
const (
	maxLabel  = 63
	maxDomain = 253
	// maxIDNInput bounds the UTF-8 input handed to IDNA, whose Punycode
	// step is quadratic; no domain of legal A-label length comes near it.
	maxIDNInput = 4 * maxDomain
)

// domainInfo is what the domain scan learns about a name (not a literal).
type domainInfo struct {
	start, end int  // raw span from the first label to the end of the last
	contiguous bool // no CFWS inside: Domain is s[start:end]
	labels     int
	lastLabel  int  // offset of the last label, for the numeric-TLD check
	nonASCII   bool // a U-label is present: IDNA needed
	ace        bool // an "xn--" label is present: IDNA check needed
	upper      bool // ASCII upper case present: lower-casing needed
}

// name scans a domain name written as dot-atom or obs-domain (CFWS around
// the dots is obsolete), checking each label against DNS rules: letters,
// digits and hyphens (RFC 5321 Domain), or UTF-8 letters, marks and digits
// for IDNA (RFC 6531). Other RFC 5322 atext such as "/" or "_" is an error.
func (p *parser) name() (domainInfo, *ParseError) {
	di := domainInfo{start: p.i, contiguous: true}
	for {
		if p.eof() {
			if di.labels == 0 {
				return di, perr(DetailNoDomain, p.i)
			}
			return di, perr(DetailDotAtEnd, p.i-1)
		}
		switch p.s[p.i] {
		case '.':
			if di.labels == 0 {
				return di, perr(DetailDotAtStart, p.i)
			}
			return di, perr(DetailConsecutiveDots, p.i)
		case '@':
			return di, perr(DetailUnexpectedAt, p.i)
		}
		start := p.i
		if err := p.label(&di); err != nil {
			return di, err
		}
		if p.i == start {
			return di, p.unexpected(false, false)
		}
		di.labels++
		di.lastLabel = start
		di.end = p.i
		hadCFWS, err := p.cfws()
		if err != nil {
			return di, err
		}
		if p.eof() {
			return di, nil
		}
		if p.s[p.i] != '.' {
			return di, p.unexpected(hadCFWS, false)
		}
		p.i++
		after, err := p.cfws()
		if err != nil {
			return di, err
		}
		if hadCFWS || after {
			p.warn |= wObsolete // obs-domain
			di.contiguous = false
		}
	}
}

// label consumes one label and checks its characters, hyphens and, for an
// ASCII label, its length.
func (p *parser) label(di *domainInfo) *ParseError {
	start := p.i
	ascii := true
	for !p.eof() {
		c := p.s[p.i]
		cl := charClass[c]
		if cl&cLDH != 0 {
			if cl&cUpper != 0 {
				di.upper = true
			}
			p.i++
			continue
		}
		if cl&cAtext != 0 {
			return perr(DetailInvalidDomainCharacter, p.i)
		}
		if c < utf8.RuneSelf {
			break
		}
		r, n, err := p.decode()
		if err != nil {
			return err
		}
		if !domainRune(r) {
			return perr(DetailInvalidDomainCharacter, p.i)
		}
		ascii = false
		p.i += n
	}
	lbl := p.s[start:p.i]
	switch {
	case lbl == "":
		return nil
	case lbl[0] == '-':
		return perr(DetailDomainHyphenStart, start)
	case lbl[len(lbl)-1] == '-':
		return perr(DetailDomainHyphenEnd, p.i-1)
	case ascii && len(lbl) > maxLabel:
		return perr(DetailLabelTooLong, start)
	}
	if !ascii {
		di.nonASCII = true
	} else if hasACEPrefix(lbl) {
		di.ace = true
	}
	return nil
}

func hasACEPrefix(l string) bool {
	return len(l) >= 4 && (l[0]|0x20) == 'x' && (l[1]|0x20) == 'n' && l[2] == '-' && l[3] == '-'
}

// asciiDomain returns the lower-case A-label form of a validated name, or an
// error detail. ASCII names without "xn--" labels skip IDNA entirely.
func asciiDomain(name string, di domainInfo) (string, string) {
	if !di.nonASCII && !di.ace {
		if len(name) > maxDomain {
			return "", DetailDomainTooLong
		}
		if di.upper {
			return strings.ToLower(name), ""
		}
		return name, ""
	}
	if len(name) > maxIDNInput {
		return "", DetailDomainTooLong
	}
	var b strings.Builder
	b.Grow(len(name) + 8)
	for rest := name; ; {
		lbl, tail, more := strings.Cut(rest, ".")
		if isASCII(lbl) && !hasACEPrefix(lbl) {
			b.WriteString(strings.ToLower(lbl))
		} else {
			a, err := idnaProfile.ToASCII(strings.ToLower(lbl))
			if err != nil {
				return "", DetailInvalidIDN
			}
			if len(a) > maxLabel {
				return "", DetailLabelTooLong
			}
			b.WriteString(a)
		}
		if !more {
			break
		}
		b.WriteByte('.')
		rest = tail
	}
	if b.Len() > maxDomain {
		return "", DetailDomainTooLong
	}
	return b.String(), ""
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// decodeName rebuilds a name whose CFWS sits between labels and dots.
func decodeName(raw string) string {
	var b strings.Builder
	b.Grow(len(raw))
	for j := 0; j < len(raw); j++ {
		switch c := raw[j]; c {
		case ' ', '\t', '\r', '\n':
		case '(':
			j = skipComment(raw, j)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
