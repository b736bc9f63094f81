package shaping

import (
	"slices"
	"strings"
)

// Settings are the effective shaping of one destination domain through
// one egress source: KumoMTA's egress path configuration.
type Settings struct {
	Domain string // lowercase, no trailing dot
	Source string // the egress source asked for; "" for none
	// Site names the queue and the limits the domain shares: with
	// mx_rollup (the default) it is derived from the set of MX host names,
	// so every domain at the same MX hosts has the same site; a domain
	// whose section says mx_rollup = false is its own site.
	Site     string
	MXRollup bool
	// Provider is the last provider section matching the domain, "" when
	// none does (KumoMTA's provider_name).
	Provider string
	Limits
	// ProviderLimits are the provider_connection_limit and
	// provider_max_message_rate of every matching provider that sets one:
	// limits shared by all the provider's sites.
	ProviderLimits []ProviderLimit
	// Automation are the rules that apply to the domain's replies, in
	// KumoMTA's order: default, providers, site, domain.
	Automation []Rule
}

// ProviderLimit is one provider's shared limits.
type ProviderLimit struct {
	Provider        string
	ConnectionLimit Limit // provider_connection_limit; unset when zero
	MaxMessageRate  Rate  // provider_max_message_rate; unset when zero
}

// For returns the effective settings for mail to domain, whose MX host
// names are mxHosts (in any order; the caller resolves them, or passes
// the domain itself for an implicit MX), sent through the egress source
// named source ("" for none). It does no I/O.
//
// The merge order is KumoMTA's (its shaping.rs): ["default"], then each
// matching [provider."NAME"] in the order providers first appear, then
// their sources."SOURCE", then the domain sections with mx_rollup = true
// whose site is the domain's site (or that name the domain itself), then
// the domain's mx_rollup = false section, then the sources."SOURCE" of
// those two. A later value overrides an earlier one key by key.
func (r *Rules) For(domain string, mxHosts []string, source string) Settings {
	d := normalizeName(domain)
	hosts := normalizeHosts(mxHosts)
	mxSite := SiteName(hosts)
	if mxSite == "" {
		mxSite = d
	}
	s := Settings{Domain: d, Source: source, Site: mxSite, MXRollup: true}
	own := r.byDomain[d]
	if own != nil {
		s.Site, s.MXRollup = d, false
	}
	lim := r.def.limits
	auto := slices.Clone(r.def.automation)
	var matched []*provider
	for _, p := range r.provs {
		if !p.matches(d, hosts) {
			continue
		}
		matched = append(matched, p)
		s.Provider = p.name
		lim = lim.With(p.entry.limits)
		auto = append(auto, p.entry.automation...)
		if p.connLimit.IsSet() || p.msgRate.IsSet() {
			s.ProviderLimits = append(s.ProviderLimits, ProviderLimit{Provider: p.name, ConnectionLimit: p.connLimit, MaxMessageRate: p.msgRate})
		}
	}
	for _, p := range matched {
		lim = lim.With(sourceLimits(&p.entry, source))
	}
	site := r.siteEntry(d, mxSite)
	lim = lim.With(site.limits)
	auto = append(auto, site.automation...)
	if own != nil {
		lim = lim.With(own.limits)
		auto = append(auto, own.automation...)
	}
	lim = lim.With(sourceLimits(&site, source))
	lim = lim.With(sourceLimits(own, source))
	s.Limits, s.Automation = lim, auto
	return s
}

func sourceLimits(e *entry, source string) Limits {
	if e == nil || source == "" {
		return Limits{}
	}
	return e.sources[source]
}

// siteEntry merges, in load order, the mx_rollup sections that apply to
// domain at site: those resolved to the site and those naming the domain
// (a section whose MX could not be resolved still applies to its own
// domain).
func (r *Rules) siteEntry(domain, site string) entry {
	idx := append(slices.Clone(r.byName[domain]), r.bySite[site]...)
	slices.Sort(idx)
	var e entry
	for _, i := range slices.Compact(idx) {
		e.mergeSection(r.rollup[i])
	}
	return e
}

// matches applies KumoMTA's provider matching: a DomainSuffix entry
// matching the domain is enough; otherwise every MX host must match some
// MXSuffix or HostName entry, so a vanity domain that mixes providers
// matches none of them. Suffixes are plain string suffixes, not patterns.
func (p *provider) matches(domain string, hosts []string) bool {
	needMX := false
	for _, m := range p.match {
		if m.kind == matchDomainSuffix {
			if strings.HasSuffix(domain, m.value) {
				return true
			}
			continue
		}
		needMX = true
	}
	if !needMX || len(hosts) == 0 {
		return false
	}
	for _, h := range hosts {
		ok := false
		for _, m := range p.match {
			switch m.kind {
			case matchMXSuffix:
				ok = strings.HasSuffix(h, m.value)
			case matchHostName:
				ok = h == m.value
			}
			if ok {
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// normalizeHosts lowercases host names, drops trailing dots and null-MX
// entries, and returns them sorted without duplicates.
func normalizeHosts(hosts []string) []string {
	out := make([]string, 0, len(hosts))
	for _, h := range hosts {
		if h = normalizeName(h); h != "" {
			out = append(out, h)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// SiteName names the site of a set of MX hosts as KumoMTA's factor_names
// does, label by label from the right, the labels that differ as an
// alternation: "(alt1|alt2|alt3|alt4)?.gmail-smtp-in.l.google.com". The
// hosts are sorted first, so the same set always gives the same name. It
// is "" for no hosts.
func SiteName(hosts []string) string {
	hosts = normalizeHosts(hosts)
	var split [][]string
	longest := 0
	for _, h := range hosts {
		labels := strings.Split(h, ".")
		slices.Reverse(labels)
		split = append(split, labels)
		longest = max(longest, len(labels))
	}
	elements := make([][]string, longest)
	for _, labels := range split {
		for i := range longest {
			l := "?"
			if i < len(labels) {
				l = labels[i]
			}
			if !slices.Contains(elements[i], l) {
				elements[i] = append(elements[i], l)
			}
		}
	}
	parts := make([]string, 0, longest)
	for i := longest - 1; i >= 0; i-- {
		ele := elements[i]
		optional := slices.Contains(ele, "?")
		ele = slices.DeleteFunc(slices.Clone(ele), func(s string) bool { return s == "?" })
		text := ele[0]
		if len(ele) > 1 {
			text = "(" + strings.Join(ele, "|") + ")"
		}
		if optional {
			text += "?"
		}
		parts = append(parts, text)
	}
	return strings.Join(parts, ".")
}
