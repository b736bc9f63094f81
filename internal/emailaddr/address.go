package emailaddr

// Warning is a stable snake_case code for something legal but unusual in an
// address. The codes are part of the public API (they appear in validation
// results), so existing values never change meaning.
type Warning string

// The warnings, in the order Address.Warnings lists them.
const (
	// WarnQuotedString: the local part is or contains a quoted string.
	WarnQuotedString Warning = "quoted_string"
	// WarnComment: a comment appears somewhere in the address.
	WarnComment Warning = "comment"
	// WarnCFWSNearAt: a comment or white space touches the "@".
	WarnCFWSNearAt Warning = "cfws_near_at"
	// WarnFWS: white space outside a quoted string or domain literal, or a
	// line fold (CRLF followed by white space) anywhere.
	WarnFWS Warning = "folding_white_space"
	// WarnDomainLiteral: the domain is a bracketed literal ([1.2.3.4],
	// [IPv6:...] or a general literal) instead of a name.
	WarnDomainLiteral Warning = "domain_literal"
	// WarnNonAddressLiteral: the domain literal is not an RFC 5321 address
	// literal (malformed IPv4/IPv6, missing "IPv6:" tag, general text). It is
	// valid only under RFC 5322's broad grammar and cannot be delivered to.
	WarnNonAddressLiteral Warning = "non_address_literal"
	// WarnObsoleteSyntax: RFC 5322 section 4 obsolete syntax: obs-local-part
	// (quoted words joined by dots, CFWS around dots), obs-qtext, obs-qp,
	// obs-ctext, obs-dtext, obs-FWS (several folds), obs-domain (CFWS around
	// dots), or an IPv6 literal whose "::" elides a single group.
	WarnObsoleteSyntax Warning = "obsolete_syntax"
	// WarnLocalPartTooLong: the local part, as written, exceeds 64 octets
	// (RFC 5321 section 4.5.3.1.1).
	WarnLocalPartTooLong Warning = "local_part_too_long"
	// WarnAddressTooLong: the address exceeds 254 octets (the 256-octet
	// RFC 5321 path less its angle brackets).
	WarnAddressTooLong Warning = "address_too_long"
	// WarnDotlessDomain: the domain is a single label (test@io), which only
	// resolves for TLDs with their own MX and is never portable.
	WarnDotlessDomain Warning = "dotless_domain"
	// WarnNumericTLD: the last label starts with a digit (test@iana.123,
	// test@255.255.255.255 written without brackets); no such TLD exists.
	WarnNumericTLD Warning = "numeric_tld"
)

// allWarnings maps warning bits to codes; its order is the output order.
var allWarnings = [...]Warning{
	WarnQuotedString, WarnComment, WarnCFWSNearAt, WarnFWS, WarnDomainLiteral,
	WarnNonAddressLiteral, WarnObsoleteSyntax, WarnLocalPartTooLong,
	WarnAddressTooLong, WarnDotlessDomain, WarnNumericTLD,
}

// warnSet is a bit set over allWarnings, so the parser records warnings
// without allocating and the result comes out deduplicated and ordered.
type warnSet uint16

const (
	wQuoted warnSet = 1 << iota
	wComment
	wNearAt
	wFWS
	wLiteral
	wNonAddr
	wObsolete
	wLocalLong
	wAddrLong
	wDotless
	wNumericTLD
)

// list returns the warnings in declaration order, or nil when there are none
// (the common case costs no allocation).
func (w warnSet) list() []Warning {
	if w == 0 {
		return nil
	}
	out := make([]Warning, 0, 4)
	for i, code := range allWarnings {
		if w&(1<<i) != 0 {
			out = append(out, code)
		}
	}
	return out
}

// Address is a parsed address. The zero value is not a valid address.
type Address struct {
	// Local is the local part's content: comments and folding white space
	// removed, quotes and quoted-pair backslashes removed, words of an
	// obsolete local part joined by ".". CR and LF (possible only as
	// obsolete quoted-pairs) are dropped, so Local never contains them.
	// For an ordinary dot-atom it is the input substring.
	Local string
	// Domain is the domain as written minus comments and white space: a
	// Unicode name stays Unicode, an A-label stays an A-label, case is
	// kept. A literal keeps its brackets and text exactly as written.
	Domain string
	// ASCIIDomain is the lower-case A-label form of a name (IDNA 2008 via
	// golang.org/x/net/idna), or the canonical form of a literal:
	// [1.2.3.4], [IPv6:<RFC 5952 text>], or the general literal with CR/LF
	// removed and minimal escaping.
	ASCIIDomain string
	// Literal reports that the domain is a bracketed domain literal.
	Literal bool
	// Warnings lists the RFC warnings, deduplicated, in the order of the
	// Warn constants; nil when there are none.
	Warnings []Warning
}

// Strict reports whether the address has no RFC warnings, that is whether
// it is valid in strict mode.
func (a Address) Strict() bool { return len(a.Warnings) == 0 }

// HasWarning reports whether w is among a's warnings.
func (a Address) HasWarning(w Warning) bool {
	for _, x := range a.Warnings {
		if x == w {
			return true
		}
	}
	return false
}
