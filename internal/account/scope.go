package account

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/postline/postline/internal/apperr"
)

// The scopes a key may carry. A key created without scopes has all of
// them, as every key had before scopes existed.
const (
	ScopeSend         = "send"         // send, templates, scheduled messages
	ScopeValidate     = "validate"     // validation, list cleaning
	ScopeLogRead      = "log:read"     // the log, its stream and its export
	ScopeSuppressions = "suppressions" // suppression lists
	ScopeDomains      = "domains"      // domain management
	ScopeWebhooks     = "webhooks"     // webhooks
	ScopeKeys         = "keys"         // API keys
)

// AllScopes lists every scope in the order the documentation gives them.
var AllScopes = []string{ScopeSend, ScopeValidate, ScopeLogRead, ScopeSuppressions, ScopeDomains, ScopeWebhooks, ScopeKeys}

// Limits for a key's restrictions; the messages name them.
const (
	maxKeyDomains = 100
	// MaxKeyLifetime bounds an expiry: keys meant to last longer should
	// simply not expire.
	MaxKeyLifetime = 5 * 366 * 24 * time.Hour
)

// KeyOptions are what a new key may be limited to. Nil Scopes or Domains
// mean all of them; a nil ExpiresAt never expires.
type KeyOptions struct {
	Name      string
	Scopes    []string
	Domains   []string
	ExpiresAt *time.Time
	// MemberID is the member making the key (ChildKey sets it): 0 for the
	// account itself.
	MemberID int64
}

// ParseScopes reads a comma-separated list ("send,validate"); "" and "all"
// are every scope (nil).
func ParseScopes(s string) ([]string, error) {
	s = strings.TrimSpace(s)
	if s == "" || strings.EqualFold(s, "all") {
		return nil, nil
	}
	return CheckScopes(strings.Split(s, ","))
}

// CheckScopes validates a list of scope names: sorted in the documented
// order, duplicates dropped. Every scope listed is the same as none (nil).
func CheckScopes(in []string) ([]string, error) {
	var out []string
	for _, sc := range in {
		sc = strings.ToLower(strings.TrimSpace(sc))
		if !slices.Contains(AllScopes, sc) {
			return nil, apperr.Field("scopes", fmt.Sprintf("unknown scope %q (known: %s)", sc, strings.Join(AllScopes, ", ")))
		}
		if !slices.Contains(out, sc) {
			out = append(out, sc)
		}
	}
	if len(out) == 0 {
		return nil, apperr.Field("scopes", fmt.Sprintf("scopes must name at least one scope (known: %s)", strings.Join(AllScopes, ", ")))
	}
	if len(out) == len(AllScopes) {
		return nil, nil
	}
	slices.SortFunc(out, func(a, b string) int { return slices.Index(AllScopes, a) - slices.Index(AllScopes, b) })
	return out, nil
}

// ParseDomains reads a comma-separated list of domain names; "" is all
// domains (nil).
func ParseDomains(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	return CheckDomains(strings.Split(s, ","))
}

// CheckDomains lower-cases and checks domain names for a key's domain
// list. Whether the account owns them is the caller's to check: a key may
// name a domain the account adds later.
func CheckDomains(in []string) ([]string, error) {
	var out []string
	for _, d := range in {
		d = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(d)), ".")
		if d == "" || len(d) > 253 || strings.ContainsAny(d, " ,;:/@\t\r\n") {
			return nil, apperr.Field("domains", fmt.Sprintf("%q is not a domain name", d))
		}
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	if len(out) > maxKeyDomains {
		return nil, apperr.Field("domains", fmt.Sprintf("domains may list at most %d domains", maxKeyDomains))
	}
	slices.Sort(out)
	return out, nil
}

// Can says whether the principal holds scope; password sign-ins and keys
// without scopes hold all.
func (p Principal) Can(scope string) bool {
	return p.Scopes == nil || slices.Contains(p.Scopes, scope)
}

// Full says whether the principal holds every scope and every domain,
// which the operator's routes and console sign-in require.
func (p Principal) Full() bool { return p.Scopes == nil && p.Domains == nil }

// DomainAllowed says whether the principal's key may act on the domain
// name (already normalised).
func (p Principal) DomainAllowed(name string) bool {
	return p.Domains == nil || slices.Contains(p.Domains, strings.ToLower(name))
}

// Covers says whether every scope and domain of o is also the principal's:
// a key may only make keys that can do no more than itself.
func (p Principal) Covers(o KeyOptions) bool {
	if p.Scopes != nil && (o.Scopes == nil || !subset(o.Scopes, p.Scopes)) {
		return false
	}
	return p.Domains == nil || (o.Domains != nil && subset(o.Domains, p.Domains))
}

// ChildKey returns o as the principal may make it, so that the keys scope
// is no way out of a key's other limits: no more scopes and domains than
// its own (apperr.Forbidden otherwise), and an expiry no later than its
// own: a child that names none gets the principal's, one that names a
// later one is refused (apperr.Invalid on expires_at). A member's key,
// or a key made with one, is that member's (KeyOptions.MemberID).
func (p Principal) ChildKey(o KeyOptions) (KeyOptions, error) {
	o.MemberID = p.ActingMember()
	if !p.Covers(o) {
		return o, apperr.Errorf(apperr.Forbidden, "This API key can only create keys with no more scopes and domains than its own")
	}
	if p.ExpiresAt == nil {
		return o, nil
	}
	if o.ExpiresAt == nil {
		t := *p.ExpiresAt
		o.ExpiresAt = &t
		return o, nil
	}
	if o.ExpiresAt.After(*p.ExpiresAt) {
		return o, apperr.Field("expires_at", fmt.Sprintf("expires_at must be no later than this API key's own expiry, %s",
			p.ExpiresAt.UTC().Format(time.RFC3339)))
	}
	return o, nil
}

// MayRevoke says whether the principal may revoke k: only a key at most
// as broad as itself (scopes and domains among its own, an expiry no
// later), so that a limited key cannot end the account's unrestricted one.
func (p Principal) MayRevoke(k Key) bool {
	if !p.Covers(KeyOptions{Scopes: k.Scopes, Domains: k.Domains}) {
		return false
	}
	return p.ExpiresAt == nil || (k.ExpiresAt != nil && !k.ExpiresAt.After(*p.ExpiresAt))
}

func subset(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// ScopeError is the 403 for a key used outside its scopes; the message
// names the missing scope.
func ScopeError(scope string) error {
	return apperr.Errorf(apperr.Forbidden, "This API key lacks the %q scope", scope)
}

// DomainError is the 403 for a key limited to other domains.
func DomainError(name string) error {
	return apperr.Errorf(apperr.Forbidden, "This API key is not allowed to use the domain %s", name)
}

// JoinList stores a key's scopes or domains as comma-separated text (""
// for nil: all).
func JoinList(l []string) string { return strings.Join(l, ",") }

// SplitList reads what JoinList stored.
func SplitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
