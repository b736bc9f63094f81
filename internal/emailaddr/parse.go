package emailaddr

import "strings"

// RFC 5321 section 4.5.3.1 size limits that only draw warnings: RFC 5322
// itself has none, and real mailboxes beyond them exist.
const (
	maxLocal   = 64
	maxAddress = 254
)

// Parse parses s as a bare addr-spec (no display name, no angle brackets)
// under RFC 5322's grammar including its obsolete syntax, RFC 5321's size
// limits and literal forms, and RFC 6531's UTF-8 extensions. It returns an
// error of type *ParseError when s is not an address; otherwise the Address
// carries warnings for whatever strict mode rejects. Parse never panics,
// runs in time linear in len(s), and allocates nothing for an ordinary
// lower-case ASCII address with no warnings.
func Parse(s string) (Address, error) {
	if s == "" {
		return Address{}, perr(DetailEmpty, 0)
	}
	p := parser{s: s}
	li, err := p.local()
	if err != nil {
		return Address{}, err
	}
	a := Address{Local: s[li.start:li.end]}
	if !li.simple {
		a.Local = decodeLocal(a.Local)
	}
	nearAt, err := p.cfws()
	if err != nil {
		return Address{}, err
	}
	if nearAt {
		p.warn |= wNearAt
	}
	if p.eof() {
		return Address{}, perr(DetailNoDomain, p.i)
	}
	if p.s[p.i] == '[' {
		err = p.parseLiteral(&a)
	} else {
		err = p.parseName(&a)
	}
	if err != nil {
		return Address{}, err
	}
	if li.length > maxLocal {
		p.warn |= wLocalLong
	}
	if li.length+1+len(a.ASCIIDomain) > maxAddress {
		p.warn |= wAddrLong
	}
	a.Warnings = p.warn.list()
	return a, nil
}

// parseName fills a's domain fields from a domain name at p.i.
func (p *parser) parseName(a *Address) *ParseError {
	di, err := p.name()
	if err != nil {
		return err
	}
	name := p.s[di.start:di.end]
	if !di.contiguous {
		name = decodeName(name)
	}
	ascii, detail := asciiDomain(name, di)
	if detail != "" {
		return perr(detail, di.start)
	}
	a.Domain, a.ASCIIDomain = name, ascii
	if di.labels == 1 {
		p.warn |= wDotless
	}
	if c := p.s[di.lastLabel]; c >= '0' && c <= '9' {
		p.warn |= wNumericTLD
	}
	return nil
}

// parseLiteral fills a's domain fields from a domain literal at p.i, which
// may be followed only by CFWS.
func (p *parser) parseLiteral(a *Address) *ParseError {
	raw, text, err := p.literal()
	if err != nil {
		return err
	}
	hadCFWS, err := p.cfws()
	if err != nil {
		return err
	}
	if !p.eof() {
		c := p.s[p.i]
		if !hadCFWS && (charClass[c]&cAtext != 0 || c >= 0x80) {
			return perr(DetailAtextAfterLiteral, p.i)
		}
		return p.unexpected(hadCFWS, false)
	}
	canon, w := classifyLiteral(raw, text)
	p.warn |= w
	a.Literal = true
	a.ASCIIDomain = canon
	a.Domain = raw
	if len(text) != len(raw)-2 {
		a.Domain = "[" + text + "]" // without its line breaks
	}
	return nil
}

// Normalized returns the canonical form of a parsed address, for display,
// de-duplication and cache keys: the local part with comments and folding
// white space removed and quoted only when it is not a dot-atom (case kept,
// since local parts are case-sensitive), "@", and the lower-case A-label
// domain or canonical literal. Parsing the result succeeds and normalizes
// to the same string; the result never contains CR or LF. Warnings are not
// a function of the normalized form ("a"@x normalizes to a@x), so strict
// verdicts must come from the original parse. The zero Address gives "".
func (a Address) Normalized() string {
	if a.ASCIIDomain == "" {
		return ""
	}
	if isDotAtom(a.Local) {
		return a.Local + "@" + a.ASCIIDomain
	}
	var b strings.Builder
	b.Grow(len(a.Local) + len(a.ASCIIDomain) + 8)
	b.WriteByte('"')
	for i := 0; i < len(a.Local); i++ {
		c := a.Local[i]
		if c == '"' || c == '\\' || c < ' ' && c != '\t' || c == 127 {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	b.WriteString(`"@`)
	b.WriteString(a.ASCIIDomain)
	return b.String()
}

// isDotAtom reports whether a decoded local part can be written unquoted.
// Non-ASCII bytes are accepted as they are: Parse only lets through runes
// that are legal in an atom.
func isDotAtom(s string) bool {
	if s == "" || s[0] == '.' || s[len(s)-1] == '.' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '.':
			if s[i-1] == '.' {
				return false
			}
		case c >= 0x80, charClass[c]&cAtext != 0:
		default:
			return false
		}
	}
	return true
}
