package mtasts

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Mode is a policy's mode (RFC 8461 §5).
type Mode string

// The modes.
const (
	ModeEnforce Mode = "enforce" // only matching MX hosts, verified TLS, or no delivery
	ModeTesting Mode = "testing" // deliver as without a policy; report what enforce would refuse
	ModeNone    Mode = "none"    // the domain has withdrawn its policy
)

// MaxMaxAge is the largest max_age a policy may give (about a year).
const MaxMaxAge = 31557600 * time.Second

// Policy is a parsed MTA-STS policy.
type Policy struct {
	Mode   Mode
	MX     []string // patterns, lowercase without the trailing dot
	MaxAge time.Duration
	// ID is the TXT record's id the policy was fetched under (set by
	// Service, not by Parse).
	ID string
}

// Parse reads a policy body (§3.2).
func Parse(body string) (Policy, error) {
	var (
		p                     Policy
		version, mode, maxAge string
		seen                  = map[string]bool{}
	)
	for line := range strings.SplitSeq(strings.ReplaceAll(body, "\r\n", "\n"), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			return Policy{}, fmt.Errorf("mtasts: policy line without ':': %.40q", line)
		}
		k, v = strings.TrimSpace(k), strings.Trim(v, " \t")
		if k == "mx" {
			p.MX = append(p.MX, strings.TrimSuffix(strings.ToLower(v), "."))
			continue
		}
		if seen[k] {
			continue // the first occurrence counts
		}
		seen[k] = true
		switch k {
		case "version":
			version = v
		case "mode":
			mode = v
		case "max_age":
			maxAge = v
		}
	}
	if version != "STSv1" {
		return Policy{}, fmt.Errorf("mtasts: policy version %q, want STSv1", version)
	}
	switch Mode(mode) {
	case ModeEnforce, ModeTesting, ModeNone:
		p.Mode = Mode(mode)
	default:
		return Policy{}, fmt.Errorf("mtasts: policy mode %q, want enforce, testing or none", mode)
	}
	n, err := strconv.ParseUint(maxAge, 10, 32)
	if err != nil || len(maxAge) > 10 || time.Duration(n)*time.Second > MaxMaxAge {
		return Policy{}, fmt.Errorf("mtasts: policy max_age %q is not 0 to 31557600 seconds", maxAge)
	}
	p.MaxAge = time.Duration(n) * time.Second
	for _, mx := range p.MX {
		if mx == "" || strings.Contains(mx[1:], "*") || mx[0] == '*' && !strings.HasPrefix(mx, "*.") {
			return Policy{}, fmt.Errorf("mtasts: policy mx pattern %q is not a host name or *.name", mx)
		}
	}
	if len(p.MX) == 0 && p.Mode != ModeNone {
		return Policy{}, errors.New("mtasts: policy lists no mx")
	}
	return p, nil
}

// Matches reports whether MX host matches one of the policy's patterns
// (§4.1): equal ignoring case and a trailing dot, or, for "*.suffix",
// exactly one label followed by ".suffix".
func (p Policy) Matches(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for _, pat := range p.MX {
		if suffix, ok := strings.CutPrefix(pat, "*."); ok {
			label, rest, found := strings.Cut(host, ".")
			if found && label != "" && rest == suffix {
				return true
			}
		} else if host == pat {
			return true
		}
	}
	return false
}
