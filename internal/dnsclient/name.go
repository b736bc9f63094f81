package dnsclient

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/net/idna"
)

// profile is idna.Lookup (UTS #46 mapping, Bidi and joiner rules, hyphen
// checks) without the STD3 restriction, because TXT lookups go to names such
// as _dmarc.example.com and sel._domainkey.example.com whose underscore
// labels STD3 rejects. The ASCII result is checked by checkLabel instead.
var profile = idna.New(
	idna.MapForLookup(),
	idna.BidiRule(),
	idna.Transitional(false),
	idna.CheckHyphens(true),
	idna.CheckJoiners(true),
	idna.StrictDomainName(false),
)

// normalize turns a caller's name (Unicode or ASCII, any case, with or
// without the trailing dot) into the lowercase ASCII form without the
// trailing dot, used both on the wire and as the cache key.
func normalize(name string) (string, error) {
	if name == "" || name == "." {
		return "", errors.New("empty name")
	}
	ascii, err := profile.ToASCII(strings.TrimSuffix(name, "."))
	if err != nil {
		return "", err
	}
	ascii = strings.ToLower(ascii)
	if len(ascii) > 253 {
		return "", fmt.Errorf("name is %d octets long, more than 253", len(ascii))
	}
	for label := range strings.SplitSeq(ascii, ".") {
		if err := checkLabel(label); err != nil {
			return "", err
		}
	}
	return ascii, nil
}

// checkLabel accepts letters, digits, hyphens and underscores, 1 to 63
// octets: host names (RFC 1123) plus the underscore labels of service names
// (RFC 8552). Anything else a resolver would send is a caller's mistake.
func checkLabel(label string) error {
	if label == "" {
		return errors.New("empty label")
	}
	if len(label) > 63 {
		return fmt.Errorf("label %.20q... is %d octets long, more than 63", label, len(label))
	}
	for i := 0; i < len(label); i++ {
		c := label[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return fmt.Errorf("label %q contains %q", label, c)
		}
	}
	return nil
}
