// Package emailaddr parses email addresses (a bare addr-spec: local-part
// "@" domain) with a hand-written single-pass scanner: no regular
// expressions, linear time, no allocation for an ordinary lower-case ASCII
// address. It is pure: no DNS, no lists; the validation pipeline does those.
//
// # Grammar
//
// Parse accepts RFC 5322 section 3.4.1 addr-spec with the obsolete forms of
// section 4, RFC 5321's literal and size rules, and RFC 6531's UTF-8:
//
//   - local part: dot-atom, quoted-string, obs-local-part (words joined by
//     dots, quoted or not, with CFWS around the dots); comments nest;
//     folding white space is CRLF followed by WSP, several folds are obs-FWS.
//     UTF-8 is allowed in atoms and quoted strings, but only letters, marks,
//     numbers and punctuation (symbols such as "║" and controls are refused,
//     as egulias does). A quoted-pair quotes ASCII only.
//   - domain: dot-atom or obs-domain whose labels obey DNS rules: letters,
//     digits and hyphens, no hyphen at either end, at most 63 octets, at most
//     253 octets in all; U-labels must be lower-case-able NFC IDNA 2008
//     (checked with golang.org/x/net/idna, registration rules, no UTS 46
//     mapping) and are measured as A-labels; "xn--" labels must be valid
//     A-labels. RFC 5322 atext that DNS forbids ("/", "_", "!"...) is an
//     error, as are IDNA-invalid symbols ("€", "¡").
//   - domain literal: [IPv4], [IPv6:...] per RFC 5321 4.1.3 (8 groups, or
//     at most 6 around one "::", optional trailing IPv4), and any other
//     RFC 5322 dtext/obs-dtext literal (a warning, not an error).
//
// Bare CR, bare LF (except as obs-dtext, where isemail and egulias allow
// it), NUL, and anything after the domain other than CFWS are errors.
//
// # Results
//
// A valid address yields an Address with Warnings; an invalid one yields a
// *ParseError whose Reason is ReasonSyntax and whose Detail is one of the
// Detail constants (see errors.go), with the byte offset. Standard mode
// accepts any Address; strict mode accepts only those with no warnings
// (Address.Strict). The warnings, in output order:
//
//	quoted_string         quoted local part or quoted words
//	comment               a comment anywhere
//	cfws_near_at          comment or white space touching "@"
//	folding_white_space   white space outside quotes/literals, or any fold
//	domain_literal        the domain is a [literal]
//	non_address_literal   the literal is no RFC 5321 IPv4/IPv6 address
//	obsolete_syntax       obs-local-part, obs-domain, obs-qtext, obs-qp,
//	                      obs-ctext, obs-dtext, obs-FWS, IPv6 "::" for 1 group
//	local_part_too_long   local part as written > 64 octets
//	address_too_long      local part as written + "@" + A-label domain > 254
//	dotless_domain        a single-label domain such as test@io
//	numeric_tld           the last label starts with a digit
//
// Address.Local is the decoded local part (no quotes, backslashes, CFWS,
// CR or LF); Domain is the domain as written (Unicode stays Unicode);
// ASCIIDomain is the lower-case A-label or canonical literal; Normalized
// joins the minimally quoted Local with ASCIIDomain and is idempotent.
//
// # Conformance and exceptions
//
// conformance_test.go runs testdata/conformance (isemail and egulias
// vectors; category mapping in its README). Where the two suites or the
// RFCs disagree we follow RFC 5322 as isemail implements it. Deliberate
// disagreements (the same table is in conformance_test.go):
//
//	egulias-rfc:6    fab\ ien@symfony.com     invalid: a quoted-pair outside
//	                 quotes is not RFC 5322 (isemail #20 agrees)
//	egulias-rfc:28   "<CR>"@invalid.example.com  invalid: bare CR is never
//	                 legal (isemail #129 ERR_CR_NO_LF)
//	egulias-rfc:47   "test"."test"@iana.org   valid+warning: obs-local-part,
//	egulias-rfc:48   "test".test@iana.org     isemail DEPREC (#54, #56)
//	egulias-rfc:92   username@ example . com  valid+warning: CFWS after "@"
//	egulias-rfc:93   username@ example.com    and around dots is obs-domain,
//	egulias-rfc:116  test@test. example.com   isemail DEPREC (#86, #93)
//	egulias-rfc:113  invalidipv4@[127.\0.0.0] valid+warning: a quoted-pair in
//	                 a literal is obs-dtext (isemail #115-#117)
//	egulias-rfc:174  example@symƒony.com      valid: skipped upstream; U+0192
//	                 is PVALID in IDNA 2008
//	isemail:5        test@io                  strict-invalid: VALID upstream
//	                 only because io had an MX in 2011; dotless_domain
//	isemail:40       a@<255-octet domain>     invalid: isemail allows RFC
//	                 5321's 255-octet wire length; text names stop at 253
//	isemail-original:279 test@xn--example.com invalid: not a valid A-label
//	                 (RFC 5890 "fake A-label"); isemail has no IDNA check
package emailaddr
