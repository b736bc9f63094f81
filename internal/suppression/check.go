package suppression

import (
	"context"
	"strings"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/emailaddr"
)

// Verdict is the answer of the check for one recipient.
type Verdict struct {
	Suppressed bool
	// By is the entry that suppresses the recipient (when Suppressed) or the
	// whitelist entry that overrides a suppression (when it was overridden).
	By *Entry
	// Whitelisted reports that a whitelist entry applies.
	Whitelisted bool
}

// Normalize returns the normal form of an address or a domain name and
// which of the two it is (an @ means an address).
func Normalize(recipient string) (string, RecipientType, error) {
	r := strings.TrimSpace(recipient)
	if strings.Contains(r, "@") {
		a, err := emailaddr.Parse(r)
		if err != nil || a.Literal {
			return "", "", apperr.Field("recipient", "The recipient must be a valid email address or domain name.")
		}
		local := strings.ToLower(a.Local)
		n := local + "@" + a.ASCIIDomain
		if strings.ContainsAny(local, " \"\\@") {
			n = strings.ToLower(a.Normalized()) // keep the quoting the local part needs
		}
		return n, Email, nil
	}
	d, err := domain.NormalizeName(r)
	if err != nil {
		return "", "", apperr.Field("recipient", "The recipient must be a valid email address or domain name.")
	}
	return d, Domain, nil
}

// domainOf returns the domain part of a normal-form address.
func domainOf(addr string) string { return addr[strings.LastIndexByte(addr, '@')+1:] }

// CheckMany answers the check for many recipients with one query.
// Recipients that cannot be normalised are reported as not suppressed: the
// address check before sending rejects them anyway.
func (s *Service) CheckMany(ctx context.Context, domainID int64, recipients []string) (map[string]Verdict, error) {
	norm, keys := lookupKeys(recipients)
	return s.checkKeys(ctx, domainID, recipients, norm, keys)
}

// Screen is the intake's check: CheckMany, answered from memory when the
// key index is sure no recipient has an entry (keyindex.go). The delivery
// worker's check before each attempt stays CheckMany.
func (s *Service) Screen(ctx context.Context, domainID int64, recipients []string) (map[string]Verdict, error) {
	norm, keys := lookupKeys(recipients)
	if s.index != nil && s.index.clear(domainID, keys) {
		out := make(map[string]Verdict, len(recipients))
		for _, r := range recipients {
			out[r] = Verdict{}
		}
		return out, nil
	}
	return s.checkKeys(ctx, domainID, recipients, norm, keys)
}

// lookupKeys normalises recipients and lists the keys an entry may have
// for them: each address and its domain.
func lookupKeys(recipients []string) (norm map[string]string, keys []string) {
	norm = make(map[string]string, len(recipients))
	seen := map[string]bool{}
	for _, r := range recipients {
		n, _, err := Normalize(r)
		if err != nil {
			continue
		}
		norm[r] = n
		for _, k := range []string{n, domainOf(n)} {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	return norm, keys
}

func (s *Service) checkKeys(ctx context.Context, domainID int64, recipients []string, norm map[string]string, keys []string) (map[string]Verdict, error) {
	entries, err := s.store.Matching(ctx, domainID, keys)
	if err != nil {
		return nil, err
	}
	byKey := map[string][]Entry{}
	for _, e := range entries {
		byKey[e.Recipient] = append(byKey[e.Recipient], e)
	}
	out := make(map[string]Verdict, len(recipients))
	for _, r := range recipients {
		n, ok := norm[r]
		if !ok {
			out[r] = Verdict{}
			continue
		}
		out[r] = decide(append(byKey[n], byKey[domainOf(n)]...))
	}
	return out, nil
}

// Check answers the check for one recipient.
func (s *Service) Check(ctx context.Context, domainID int64, recipient string) (Verdict, error) {
	m, err := s.CheckMany(ctx, domainID, []string{recipient})
	return m[recipient], err
}

// decide applies the rule to the entries matching one recipient by address
// or by domain: a whitelist entry wins over any suppression.
func decide(entries []Entry) Verdict {
	var block, allow *Entry
	for i := range entries {
		e := &entries[i]
		switch e.Type {
		case Whitelist:
			if allow == nil {
				allow = e
			}
		case Bounce, Unsubscribe:
			if block == nil || (e.RecipientType == Email && block.RecipientType == Domain) {
				block = e // the address entry is the more telling reason
			}
		}
	}
	switch {
	case block == nil:
		return Verdict{Whitelisted: allow != nil, By: allow}
	case allow != nil:
		return Verdict{Whitelisted: true, By: allow}
	default:
		return Verdict{Suppressed: true, By: block}
	}
}
