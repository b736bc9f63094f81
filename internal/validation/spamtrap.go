package validation

import (
	"math"
	"slices"
	"strings"
)

// features are the spamtrap score's inputs, each in [0, 1]. The weights
// and the bias are in weights below and in the package doc's table.
type features struct {
	TrapLocal   float64 // local part names a trap: spamtrap, honeypot, trap, spam, abuse, bait
	HardBounce  float64 // the address hard-bounced before (BounceHistory)
	TypoDomain  float64 // the domain looks like a typo of a well-known one (Suggestion)
	RandomLocal float64 // the local part looks machine-generated (randomness)
	Disposable  float64 // the domain is on the disposable list (and not allow-listed)
	RoleLocal   float64 // a role mailbox (role_account)
	ImplicitMX  float64 // the domain has A/AAAA but no MX (implicit_mx)
}

// The weights of the logistic model: score = 1 / (1 + e^-(bias + Σ wᵢxᵢ)).
// All weights are positive, so adding a feature never lowers the score.
// The bias puts an address with no feature at 0.018; the trap-name
// feature alone reaches 0.5.
const (
	bias         = -4.0
	wTrapLocal   = 4.0
	wHardBounce  = 3.0
	wTypoDomain  = 2.5
	wRandomLocal = 2.0
	wDisposable  = 1.5
	wRoleLocal   = 1.0
	wImplicitMX  = 1.0
)

// score returns the logistic score rounded to 4 decimals (rounding keeps
// it monotone).
func (f features) score() float64 {
	z := bias + wTrapLocal*f.TrapLocal + wHardBounce*f.HardBounce +
		wTypoDomain*f.TypoDomain + wRandomLocal*f.RandomLocal +
		wDisposable*f.Disposable + wRoleLocal*f.RoleLocal + wImplicitMX*f.ImplicitMX
	return math.Round(1e4/(1+math.Exp(-z))) / 1e4
}

// features extracts the features of c's address with verdict r. An
// address that did not parse is split at its last "@" so that it still
// gets a score.
func (v *Validator) features(c *check, r Result, bounced bool) features {
	local, domain := c.addr.Local, c.addr.ASCIIDomain
	if !c.parsed {
		local, domain = c.email, ""
		if i := strings.LastIndexByte(c.email, '@'); i >= 0 {
			local, domain = c.email[:i], strings.ToLower(c.email[i+1:])
		}
	}
	return features{
		TrapLocal:   bit(isTrapLocal(local)),
		HardBounce:  bit(bounced),
		TypoDomain:  bit(r.Suggestion != ""),
		RandomLocal: randomness(local),
		Disposable:  bit(domain != "" && isDisposable(domain) && !v.allowed(c.lower, domain)),
		RoleLocal:   bit(isRoleAccount(local)),
		ImplicitMX:  bit(slices.Contains(r.Warnings, WarnImplicitMX)),
	}
}

func bit(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// trapTokens are words that, as a whole token of the local part, name a
// trap or a mailbox that reports senders.
var trapTokens = map[string]bool{
	"abuse": true, "bait": true, "honeypot": true, "spam": true,
	"spamtrap": true, "trap": true, "traps": true,
}

// isTrapLocal reports whether local contains a trap word: as a token
// (split at anything not a letter or digit) or, for the long unambiguous
// words, anywhere once separators are removed ("my.spam-trap.01").
func isTrapLocal(local string) bool {
	base := baseLocal(local)
	c := compact(base)
	for _, w := range [...]string{"spamtrap", "honeypot", "blackhole"} {
		if strings.Contains(c, w) {
			return true
		}
	}
	for _, tok := range strings.FieldsFunc(base, func(r rune) bool { return !isAlnum(r) }) {
		if trapTokens[strings.TrimRight(tok, "0123456789")] {
			return true
		}
	}
	return false
}

func isAlnum(r rune) bool { return r >= 'a' && r <= 'z' || r >= '0' && r <= '9' }

// randomness rates how machine-generated local looks, in [0, 1], from the
// ASCII letters and digits of its part before any "+tag"; shorter than 8
// of them rates 0. It is the larger of
//
//   - entropy: (H - 3.3) / 0.7 clamped, H the Shannon entropy in bits per
//     character, so 4 bits and more (about 16 equally used symbols) is 1;
//     a name rarely passes 3.3;
//   - digits: (d - 0.2) / 0.3 clamped, d the share of digits, counted
//     only when digits and letters interleave (two or more digit runs),
//     so "john1985" is 0 and "a8f3k2j9" is 1.
func randomness(local string) float64 {
	s := strings.Map(func(r rune) rune {
		if isAlnum(r) {
			return r
		}
		return -1
	}, baseLocal(local))
	if len(s) < 8 {
		return 0
	}
	var counts [128]int
	digits, runs := 0, 0
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
		if s[i] <= '9' {
			digits++
			if i == 0 || s[i-1] > '9' {
				runs++
			}
		}
	}
	h := 0.0
	for _, n := range counts {
		if n > 0 {
			p := float64(n) / float64(len(s))
			h -= p * math.Log2(p)
		}
	}
	r := clamp01((h - 3.3) / 0.7)
	if runs >= 2 && digits < len(s) {
		r = max(r, clamp01((float64(digits)/float64(len(s))-0.2)/0.3))
	}
	return r
}

func clamp01(x float64) float64 { return min(max(x, 0), 1) }
