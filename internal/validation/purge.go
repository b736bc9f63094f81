package validation

import (
	"fmt"
	"strings"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/emailaddr"
)

// PurgePatterns returns SQL LIKE patterns (escape character '\') matching
// the cache keys of target: an address (every mode, with or without RFC
// warnings) or, without an @, a domain (every address at it). An empty
// target means everything and returns no patterns. Keys are described at
// cacheKey.
func PurgePatterns(target string) ([]string, error) {
	target = strings.TrimSpace(target)
	if target == "" {
		return nil, nil
	}
	modes := []Mode{ModeStandard, ModeStrict}
	var out []string
	if strings.Contains(target, "@") {
		a, err := emailaddr.Parse(target)
		if err != nil {
			return nil, apperr.Field("address", fmt.Sprintf("%q is not an address: %v", target, err))
		}
		n := likeEscape(strings.ToLower(a.Normalized()))
		for _, m := range modes {
			out = append(out, string(m)+":"+n, string(m)+":"+n+"#%")
		}
		return out, nil
	}
	d := normDomain(target)
	if d == "" || strings.ContainsAny(d, " \t@") {
		return nil, apperr.Field("domain", fmt.Sprintf("%q is not a domain name", target))
	}
	d = likeEscape(d)
	return []string{"%@" + d, "%@" + d + "#%"}, nil
}

func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}
