package emailaddr

import "strconv"

// Reason is the single API-level code for an invalid address.
type Reason string

// ReasonSyntax is the reason for every ParseError: the validation API
// reports "syntax" and may add ParseError.Detail for humans.
const ReasonSyntax Reason = "syntax"

// Details of a ParseError. They are stable snake_case codes; the isemail
// diagnosis each corresponds to is given where there is one.
const (
	DetailEmpty                  = "empty"                     // no input at all
	DetailInvalidUTF8            = "invalid_utf8"              // bytes that are not UTF-8
	DetailInvalidCharacter       = "invalid_character"         // a character not allowed here (ERR_EXPECTING_ATEXT)
	DetailNoLocalPart            = "no_local_part"             // nothing before "@" (ERR_NOLOCALPART)
	DetailNoDomain               = "no_domain"                 // no "@", or nothing after it (ERR_NODOMAIN)
	DetailUnexpectedAt           = "unexpected_at"             // a second "@" outside quotes
	DetailDotAtStart             = "dot_at_start"              // ERR_DOT_START
	DetailDotAtEnd               = "dot_at_end"                // ERR_DOT_END
	DetailConsecutiveDots        = "consecutive_dots"          // ERR_CONSECUTIVEDOTS
	DetailAtextAfterCFWS         = "atext_after_cfws"          // "a b@x", "a(c)b@x" (ERR_ATEXT_AFTER_CFWS)
	DetailAtextAfterQuoted       = "atext_after_quoted_string" // "\"a\"b@x" (ERR_ATEXT_AFTER_QS)
	DetailAtextAfterLiteral      = "atext_after_domain_literal"
	DetailUnclosedQuotedString   = "unclosed_quoted_string" // ERR_UNCLOSEDQUOTEDSTR
	DetailUnclosedComment        = "unclosed_comment"       // ERR_UNCLOSEDCOMMENT
	DetailUnopenedComment        = "unopened_comment"       // a ")" with no "("
	DetailUnclosedDomainLiteral  = "unclosed_domain_literal"
	DetailExpectingQuotedPair    = "expecting_quoted_pair" // "\" before a non-ASCII character
	DetailExpectingQtext         = "expecting_qtext"       // NUL or bare LF in a quoted string
	DetailExpectingCtext         = "expecting_ctext"       // NUL or bare LF in a comment
	DetailExpectingDtext         = "expecting_dtext"       // "[", NUL or non-ASCII in a literal
	DetailBackslashAtEnd         = "backslash_at_end"      // ERR_BACKSLASHEND
	DetailCRWithoutLF            = "cr_without_lf"         // ERR_CR_NO_LF
	DetailCRLFWithoutWhiteSpace  = "crlf_without_white_space"
	DetailCRLFTwice              = "crlf_twice" // ERR_FWS_CRLF_X2
	DetailDomainHyphenStart      = "domain_hyphen_start"
	DetailDomainHyphenEnd        = "domain_hyphen_end"
	DetailInvalidDomainCharacter = "invalid_domain_character" // RFC 5322 atext that DNS forbids (RFC5322_DOMAIN)
	DetailLabelTooLong           = "label_too_long"           // > 63 octets after IDNA (RFC5322_LABEL_TOOLONG)
	DetailDomainTooLong          = "domain_too_long"          // > 253 octets after IDNA (RFC5322_DOMAIN_TOOLONG)
	DetailInvalidIDN             = "invalid_idn"              // IDNA 2008 rejects the label
)

// ParseError reports why an address is invalid. Pos is the byte offset in
// the input where the problem was found.
type ParseError struct {
	Detail string
	Pos    int
}

// Error returns "emailaddr: <detail> at <pos>".
func (e *ParseError) Error() string {
	return "emailaddr: " + e.Detail + " at " + strconv.Itoa(e.Pos)
}

// Reason returns ReasonSyntax: every parse failure is a syntax failure at
// the API level.
func (e *ParseError) Reason() Reason { return ReasonSyntax }

func perr(detail string, pos int) *ParseError {
	return &ParseError{Detail: detail, Pos: pos}
}
