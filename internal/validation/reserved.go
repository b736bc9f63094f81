package validation

import (
	"net/netip"
	"strings"
)

// reservedTLDs are special-use top-level names that never take Internet
// mail, with the document that reserves each.
var reservedTLDs = map[string]string{
	"test":      "RFC 2606",
	"example":   "RFC 2606",
	"invalid":   "RFC 2606",
	"localhost": "RFC 6761",
	"local":     "RFC 6762",
	"onion":     "RFC 7686",
	"alt":       "RFC 9476",
	"internal":  "ICANN private-use TLD",
}

// reservedSuffixes are reserved names below real TLDs (and their
// subdomains).
var reservedSuffixes = map[string]string{
	"example.com": "RFC 2606",
	"example.net": "RFC 2606",
	"example.org": "RFC 2606",
	"home.arpa":   "RFC 8375",
}

// reservedSingle are bare single-label names used for private networks:
// an address at one reaches some local host, never a public mailbox.
var reservedSingle = map[string]bool{
	"localhost": true, "localdomain": true, "local": true, "internal": true,
	"intranet": true, "lan": true, "home": true, "corp": true,
	"private": true, "workgroup": true,
}

// reservedName returns a failure message when domain (a lower-case
// A-label name) is reserved, else "". Reserved names are decided without
// DNS.
func reservedName(domain string) string {
	if !strings.Contains(domain, ".") && reservedSingle[domain] {
		return "reserved domain: " + domain + " is a private single-label name"
	}
	tld := domain[strings.LastIndexByte(domain, '.')+1:]
	if rfc, ok := reservedTLDs[tld]; ok {
		return "reserved domain: ." + tld + " cannot receive mail (" + rfc + ")"
	}
	for suffix, rfc := range reservedSuffixes {
		if domain == suffix || strings.HasSuffix(domain, "."+suffix) {
			return "reserved domain: " + suffix + " cannot receive mail (" + rfc + ")"
		}
	}
	return ""
}

// specialPrefixes are IANA special-purpose ranges (RFC 6890 and the
// documentation ranges of RFC 5737 and RFC 3849) that netip's predicates
// do not cover.
var specialPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("2001:db8::/32"),
}

// reservedLiteral returns a failure message when the canonical domain
// literal lit ("[1.2.3.4]", "[IPv6:...]") is an address no outside sender
// can deliver to: loopback, private, link-local, multicast, unspecified,
// shared, documentation or reserved space. General (non-address) literals
// are left alone: they are RFC 5322 syntax, judged by the warnings.
func reservedLiteral(lit string) string {
	s := strings.TrimSuffix(strings.TrimPrefix(lit, "["), "]")
	if len(s) > 5 && strings.EqualFold(s[:5], "IPv6:") {
		s = s[5:]
	}
	ip, err := netip.ParseAddr(s)
	if err != nil {
		return ""
	}
	ip = ip.Unmap()
	special := !ip.IsGlobalUnicast() || ip.IsPrivate()
	for _, p := range specialPrefixes {
		special = special || p.Contains(ip)
	}
	if special {
		return "reserved domain: " + lit + " is not a public address (RFC 6890)"
	}
	return ""
}
