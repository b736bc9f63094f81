package validation

import (
	"bufio"
	"bytes"
	_ "embed"
	"strings"
	"sync"

	"golang.org/x/net/idna"

	"github.com/postline/postline/internal/emailaddr"
)

// StaticLists is an in-memory Lists built once (from configuration or a
// file); its zero value lists nothing. Matches are exact and
// case-insensitive; the validator itself walks a domain's parents.
type StaticLists struct {
	blockedDomains, blockedAddrs, allowedDomains, allowedAddrs map[string]bool
}

// ListEntries are the contents of a StaticLists. Domains may be Unicode or
// A-labels; addresses are anything emailaddr.Parse accepts.
type ListEntries struct {
	BlockedDomains, BlockedAddresses, AllowedDomains, AllowedAddresses []string
}

var _ Lists = (*StaticLists)(nil)

// NewStaticLists returns the lists in e, normalized the way the validator
// asks: domains as lower-case A-labels without a trailing dot, addresses
// as their lower-case normalized form. Blank entries are skipped.
func NewStaticLists(e ListEntries) *StaticLists {
	return &StaticLists{
		blockedDomains: set(e.BlockedDomains, normDomain),
		blockedAddrs:   set(e.BlockedAddresses, normAddress),
		allowedDomains: set(e.AllowedDomains, normDomain),
		allowedAddrs:   set(e.AllowedAddresses, normAddress),
	}
}

// BlockedDomain reports whether domain itself is blocked.
func (l *StaticLists) BlockedDomain(domain string) bool { return l.blockedDomains[domain] }

// BlockedAddress reports whether addr is blocked.
func (l *StaticLists) BlockedAddress(addr string) bool { return l.blockedAddrs[addr] }

// AllowedDomain reports whether domain itself is allowed.
func (l *StaticLists) AllowedDomain(domain string) bool { return l.allowedDomains[domain] }

// AllowedAddress reports whether addr is allowed.
func (l *StaticLists) AllowedAddress(addr string) bool { return l.allowedAddrs[addr] }

func set(entries []string, norm func(string) string) map[string]bool {
	m := make(map[string]bool, len(entries))
	for _, e := range entries {
		if e = strings.TrimSpace(e); e != "" {
			m[norm(e)] = true
		}
	}
	return m
}

func normDomain(d string) string {
	d = strings.TrimSuffix(strings.ToLower(d), ".")
	if a, err := idna.Lookup.ToASCII(d); err == nil {
		return a
	}
	return d
}

func normAddress(s string) string {
	if a, err := emailaddr.Parse(s); err == nil {
		return strings.ToLower(a.Normalized())
	}
	return strings.ToLower(s)
}

// anySuffix reports whether match accepts domain or any of its parents.
func anySuffix(domain string, match func(string) bool) bool {
	for d := domain; d != ""; {
		if match(d) {
			return true
		}
		i := strings.IndexByte(d, '.')
		if i < 0 {
			break
		}
		d = d[i+1:]
	}
	return false
}

//go:embed data/disposable-domains.txt
var disposableData []byte

// disposableSet parses the embedded list on first use; it is read-only
// afterwards.
var disposableSet = sync.OnceValue(func() map[string]bool {
	m := make(map[string]bool, 9000)
	sc := bufio.NewScanner(bytes.NewReader(disposableData))
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" && line[0] != '#' {
			m[strings.ToLower(line)] = true
		}
	}
	return m
})

// isDisposable reports whether domain or a parent is on the shipped list.
func isDisposable(domain string) bool {
	set := disposableSet()
	return anySuffix(domain, func(d string) bool { return set[d] })
}

// roleLocals are role mailboxes (RFC 2142 and common practice), written
// without separators: "no-reply", "no_reply" and "no.reply" all match
// "noreply".
var roleLocals = map[string]bool{
	"abuse": true, "accounting": true, "accounts": true, "admin": true,
	"administrator": true, "billing": true, "careers": true, "compliance": true,
	"contact": true, "donotreply": true, "enquiries": true, "feedback": true,
	"hello": true, "help": true, "helpdesk": true, "hostmaster": true,
	"hr": true, "info": true, "inquiries": true, "jobs": true, "legal": true,
	"list": true, "mailerdaemon": true, "marketing": true, "media": true,
	"newsletter": true, "noc": true, "noreply": true, "office": true,
	"postmaster": true, "press": true, "privacy": true, "root": true,
	"sales": true, "security": true, "service": true, "support": true,
	"team": true, "webmaster": true,
}

// isRoleAccount reports whether local (decoded) names a role mailbox,
// ignoring case, a "+tag" and the separators . - _.
func isRoleAccount(local string) bool {
	return roleLocals[compact(baseLocal(local))]
}

// baseLocal lowercases local and drops a "+tag" subaddress.
func baseLocal(local string) string {
	if i := strings.IndexByte(local, '+'); i > 0 {
		local = local[:i]
	}
	return strings.ToLower(local)
}

// compact drops the separators . - _ from s.
func compact(s string) string {
	if !strings.ContainsAny(s, ".-_") {
		return s
	}
	return strings.Map(func(r rune) rune {
		if r == '.' || r == '-' || r == '_' {
			return -1
		}
		return r
	}, s)
}

// freeProviders are free consumer mailbox domains.
var freeProviders = map[string]bool{
	"126.com": true, "163.com": true, "aol.com": true, "bk.ru": true,
	"email.com": true, "free.fr": true, "gmail.com": true, "googlemail.com": true,
	"icloud.com": true, "inbox.ru": true, "interia.pl": true, "libero.it": true,
	"list.ru": true, "live.com": true, "mac.com": true, "mail.com": true,
	"mail.ru": true, "me.com": true, "msn.com": true, "naver.com": true,
	"o2.pl": true, "orange.fr": true, "pm.me": true, "proton.me": true,
	"protonmail.ch": true, "protonmail.com": true, "qq.com": true, "rambler.ru": true,
	"rediffmail.com": true, "rocketmail.com": true, "seznam.cz": true, "t-online.de": true,
	"tuta.io": true, "tutanota.com": true, "web.de": true, "wp.pl": true,
	"ya.ru": true, "ymail.com": true, "zoho.com": true,
}

// freeFamilies are providers with a domain per country (gmx.de, gmx.at,
// yahoo.co.uk, hotmail.fr): the first label of a 2- or 3-label domain.
var freeFamilies = map[string]bool{
	"gmx": true, "hotmail": true, "outlook": true, "yahoo": true, "yandex": true,
}

// isFreeProvider reports whether domain is a free mailbox provider.
func isFreeProvider(domain string) bool {
	if freeProviders[domain] {
		return true
	}
	first, rest, ok := strings.Cut(domain, ".")
	return ok && freeFamilies[first] && strings.Count(rest, ".") <= 1
}
