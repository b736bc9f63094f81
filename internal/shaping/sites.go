package shaping

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
)

// MXLookup returns the MX host names of a domain: the hosts delivery
// would try (the domain itself for an implicit MX), none for a null MX.
type MXLookup func(ctx context.Context, domain string) ([]string, error)

// resolveConcurrency bounds the MX lookups of one ResolveSites.
const resolveConcurrency = 8

// RollupDomains are the domains of mx_rollup sections, whose MX hosts
// ResolveSites looks up.
func (r *Rules) RollupDomains() []string {
	return slices.Sorted(maps.Keys(r.byName))
}

// ResolveSites returns a copy of r in which each mx_rollup domain section
// applies to its whole site: every domain whose MX hosts are the set the
// section's domain has now. KumoMTA does the same when it loads a file.
// Without it (or when a lookup fails, which is a warning) a section
// applies to its own domain only.
func (r *Rules) ResolveSites(ctx context.Context, lookup MXLookup) *Rules {
	c := *r
	c.warnings = slices.Clone(r.warnings)
	c.bySite, c.siteOf = map[string][]int{}, map[string]string{}
	domains := r.RollupDomains()
	sites := make([]string, len(domains))
	errs := make([]error, len(domains))
	var wg sync.WaitGroup
	sem := make(chan struct{}, resolveConcurrency)
	for i, d := range domains {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			hosts, err := lookup(ctx, d)
			switch {
			case err != nil:
				errs[i] = err
			case len(normalizeHosts(hosts)) == 0:
				errs[i] = fmt.Errorf("it has a null MX")
			default:
				sites[i] = SiteName(hosts)
			}
		}()
	}
	wg.Wait()
	aliases := map[string][]string{}
	for i, d := range domains {
		if errs[i] != nil {
			first := r.rollup[r.byName[d][0]]
			c.warnings = append(c.warnings, fmt.Sprintf("%s: %q: its section applies to %s alone: cannot resolve its MX hosts: %v",
				fileLine(first.file, first.line), d, d, errs[i]))
			continue
		}
		c.siteOf[d] = sites[i]
		c.bySite[sites[i]] = append(c.bySite[sites[i]], r.byName[d]...)
		aliases[sites[i]] = append(aliases[sites[i]], d)
	}
	for _, site := range slices.Sorted(maps.Keys(aliases)) {
		slices.Sort(c.bySite[site])
		if names := aliases[site]; len(names) > 1 {
			c.warnings = append(c.warnings, fmt.Sprintf("domain sections %s share the site %s: their settings merge in load order",
				strings.Join(names, ", "), site))
		}
	}
	return &c
}

// SiteOf returns the site an mx_rollup domain section was resolved to by
// ResolveSites.
func (r *Rules) SiteOf(domain string) (string, bool) {
	s, ok := r.siteOf[normalizeName(domain)]
	return s, ok
}
