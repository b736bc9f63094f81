package shaping

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

var yahooMX = []string{"mta5.am0.yahoodns.net", "mta6.am0.yahoodns.net", "mta7.am0.yahoodns.net"}

// layered sets max_deliveries_per_connection at every level, so the
// effective value says which level won; connection_limit is set only by
// default and the provider, idle_timeout only by default.
const layered = `
["default"]
max_deliveries_per_connection = 1
connection_limit = 1
idle_timeout = "60s"

[provider."yahoo"]
match = [{MXSuffix = ".yahoodns.net"}]
max_deliveries_per_connection = 2
connection_limit = 2
provider_connection_limit = 9

[provider."yahoo".sources."ip-1"]
max_deliveries_per_connection = 3

["yahoo.com"]
max_deliveries_per_connection = 4

["yahoo.com".sources."ip-1"]
max_deliveries_per_connection = 6

["foo.example"]
mx_rollup = false
max_deliveries_per_connection = 5

["foo.example".sources."ip-1"]
max_deliveries_per_connection = 7
`

func TestMergeOrderIsKumoMTAs(t *testing.T) {
	t.Parallel()
	r, err := loadText(t, layered)
	if err != nil {
		t.Fatal(err)
	}
	r = r.ResolveSites(context.Background(), fakeMX(map[string][]string{"yahoo.com": yahooMX}))
	cases := []struct {
		domain, source string
		mx             []string
		want           int
	}{
		{"other.example", "", []string{"mx.other.example"}, 1},      // default only
		{"ymail.example", "", yahooMX, 4},                           // provider (2), then yahoo.com's site section (4)
		{"ymail.example", "ip-1", yahooMX, 6},                       // ... then the site's source section
		{"ymail.example", "ip-2", yahooMX, 4},                       // another source: no source section
		{"hosted.example", "ip-1", []string{"mx1.yahoodns.net"}, 3}, // another site of the provider: provider source
		{"foo.example", "", yahooMX, 5},                             // own mx_rollup=false section over the site's
		{"foo.example", "ip-1", yahooMX, 7},                         // domain source last of all
	}
	for _, c := range cases {
		s := r.For(c.domain, c.mx, c.source)
		if s.MaxDeliveriesPerConnection != c.want {
			t.Errorf("For(%s, source %q).max_deliveries_per_connection = %d, want %d", c.domain, c.source, s.MaxDeliveriesPerConnection, c.want)
		}
	}
	s := r.For("ymail.example", yahooMX, "ip-1")
	if s.ConnectionLimit.N != 2 || s.IdleTimeout != time.Minute || s.Provider != "yahoo" {
		t.Errorf("unset keys fall through: connection_limit %v (want 2, the provider's), idle_timeout %v (want 1m), provider %q",
			s.ConnectionLimit, s.IdleTimeout, s.Provider)
	}
	if len(s.ProviderLimits) != 1 || s.ProviderLimits[0] != (ProviderLimit{Provider: "yahoo", ConnectionLimit: Limit{N: 9}}) {
		t.Errorf("ProviderLimits = %+v", s.ProviderLimits)
	}
}

func TestSiteNames(t *testing.T) {
	t.Parallel()
	r, err := loadText(t, layered)
	if err != nil {
		t.Fatal(err)
	}
	// KumoMTA's own factor_names cases (crates/mailexchanger), plus order,
	// case and trailing dots, which must not change the name.
	cases := []struct {
		hosts []string
		want  string
	}{
		{yahooMX, "(mta5|mta6|mta7).am0.yahoodns.net"},
		{[]string{"mta7.am0.yahoodns.net.", "MTA5.AM0.yahoodns.net", "mta6.am0.yahoodns.net", "mta5.am0.yahoodns.net"}, "(mta5|mta6|mta7).am0.yahoodns.net"},
		{[]string{"gmail-smtp-in.l.google.com", "alt1.gmail-smtp-in.l.google.com", "alt2.gmail-smtp-in.l.google.com",
			"alt3.gmail-smtp-in.l.google.com", "alt4.gmail-smtp-in.l.google.com"}, "(alt1|alt2|alt3|alt4)?.gmail-smtp-in.l.google.com"},
		{[]string{"mx.example.net"}, "mx.example.net"},
		{nil, ""},
	}
	for _, c := range cases {
		if got := SiteName(c.hosts); got != c.want {
			t.Errorf("SiteName(%q) = %q, want %q", c.hosts, got, c.want)
		}
	}
	if s := r.For("yahoo.com", yahooMX, ""); s.Site != "(mta5|mta6|mta7).am0.yahoodns.net" || !s.MXRollup {
		t.Errorf("rollup domain: site %q rollup %v", s.Site, s.MXRollup)
	}
	if s := r.For("foo.example", yahooMX, ""); s.Site != "foo.example" || s.MXRollup {
		t.Errorf("mx_rollup = false: site %q rollup %v; want the domain itself", s.Site, s.MXRollup)
	}
	if s := r.For("Implicit.Example.", nil, ""); s.Site != "implicit.example" || s.Domain != "implicit.example" {
		t.Errorf("no MX hosts: site %q domain %q; want the domain", s.Site, s.Domain)
	}
}

func TestProviderMatching(t *testing.T) {
	t.Parallel()
	r, err := loadText(t, `
[provider."google"]
match = [{MXSuffix = ".google.com"}, {MXSuffix = ".googlemail.com"}]
connection_limit = 5

[provider."vanity"]
match = [{DomainSuffix = ".vanity.example"}]
connection_limit = 6

[provider."exact"]
match = [{HostName = "mx.exact.example"}]
connection_limit = 7

[provider."dotted"]
match = [{MXSuffix = ".barracudanetworks.com."}]
connection_limit = 8
`)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		domain   string
		mx       []string
		provider string
	}{
		{"gmail.com", []string{"gmail-smtp-in.l.google.com", "alt1.gmail-smtp-in.l.google.com"}, "google"},
		{"mixed.example", []string{"aspmx.l.google.com", "alt.googlemail.com."}, "google"}, // every host matches one suffix
		{"blend.example", []string{"aspmx.l.google.com", "mx.other.example"}, ""},          // one host matches none
		{"google.com.evil.example", []string{"mx.evil.example"}, ""},                       // suffix of the MX, not of the domain
		{"notgoogle.com", []string{"mx.notgoogle.com"}, ""},                                // ".google.com" is not a suffix of "notgoogle.com"
		{"shop.vanity.example", []string{"mx.elsewhere.example"}, "vanity"},                // domain suffix, MX irrelevant
		{"vanity.example", []string{"mx.elsewhere.example"}, ""},                           // ".vanity.example" needs a label before it
		{"exact.example", []string{"MX.Exact.Example."}, "exact"},                          // host name, any case, trailing dot
		{"near.example", []string{"mx2.exact.example"}, ""},                                // host name is exact
		{"cuda.example", []string{"d123.ess.barracudanetworks.com"}, "dotted"},             // a suffix written with a trailing dot still matches
		{"nomx.example", nil, ""}, // no hosts: MX rules cannot match
	}
	for _, c := range cases {
		if got := r.For(c.domain, c.mx, "").Provider; got != c.provider {
			t.Errorf("For(%s, %q).Provider = %q, want %q", c.domain, c.mx, got, c.provider)
		}
	}
}

func TestLaterFilesOverrideEarlierOnes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first := writeFile(t, dir, "1.toml", `
["default"]
connection_limit = 10
max_message_rate = "100/s"

["example.com"]
mx_rollup = false
max_deliveries_per_connection = 100
enable_tls = "Required"

[["example.com".automation]]
regex = "first"
action = "Suspend"
duration = "1h"

[provider."p"]
match = [{MXSuffix = ".p.example"}]
provider_connection_limit = 5
provider_max_message_rate = "10/s"
`)
	second := writeFile(t, dir, "2.toml", `
["default"]
connection_limit = 3

["example.com"]
mx_rollup = false
max_deliveries_per_connection = 20

[["example.com".automation]]
regex = "second"
action = "SuspendTenant"
duration = "2h"

[provider."p"]
match = [{MXSuffix = ".p2.example"}]
provider_max_message_rate = "20/s"
`)
	r, err := Load(first, second)
	if err != nil {
		t.Fatal(err)
	}
	s := r.For("example.com", []string{"mx.example.com"}, "")
	if s.ConnectionLimit.N != 3 || s.MaxMessageRate.String() != "100/s" || s.MaxDeliveriesPerConnection != 20 || s.EnableTLS != TLSRequired {
		t.Errorf("merged: %+v; want connection_limit 3 (second file), max_message_rate 100/s, 20 a connection (second), Required (first)", s.Limits)
	}
	if len(s.Automation) != 2 || s.Automation[0].Regex[0] != "first" || s.Automation[1].Regex[0] != "second" {
		t.Errorf("automation accumulates in file order: %v", s.Automation)
	}
	p := r.For("x.example", []string{"mx.p2.example"}, "") // the second file's match adds to the first's
	if p.Provider != "p" || len(p.ProviderLimits) != 1 || p.ProviderLimits[0].ConnectionLimit.N != 5 || p.ProviderLimits[0].MaxMessageRate.String() != "20/s" {
		t.Errorf("provider merged across files: %+v", p.ProviderLimits)
	}
	if r.For("y.example", []string{"mx.p.example"}, "").Provider != "p" {
		t.Errorf("the first file's match entry was lost")
	}

	third := writeFile(t, dir, "3.toml", `
["example.com"]
mx_rollup = false
replace_base = true
connection_limit = 7
`)
	r, err = Load(first, second, third)
	if err != nil {
		t.Fatal(err)
	}
	s = r.For("example.com", []string{"mx.example.com"}, "")
	if s.ConnectionLimit.N != 7 || s.MaxDeliveriesPerConnection != 0 || s.EnableTLS != TLSUnset || len(s.Automation) != 0 {
		t.Errorf("replace_base drops the earlier example.com sections: %+v, %d rules", s.Limits, len(s.Automation))
	}
	if !slices.Equal(r.Files(), []string{first, second, third}) {
		t.Errorf("Files() = %v", r.Files())
	}
}

// fakeMX answers MX lookups from a table; other domains fail.
func fakeMX(table map[string][]string) MXLookup {
	return func(_ context.Context, domain string) ([]string, error) {
		if hosts, ok := table[domain]; ok {
			return hosts, nil
		}
		return nil, errors.New("SERVFAIL")
	}
}

func TestRollupSectionsApplyToTheirWholeSite(t *testing.T) {
	t.Parallel()
	r, err := loadText(t, `
["comcast.net"]
connection_limit = 25

["broken.example"]
connection_limit = 2

["nullmx.example"]
connection_limit = 3
`)
	if err != nil {
		t.Fatal(err)
	}
	comcastMX := []string{"mx1a1.comcast.net", "mx2h1.comcast.net"}
	// Before the sites are resolved a section applies to its own domain.
	if got := r.For("comcast.net", comcastMX, "").ConnectionLimit.N; got != 25 {
		t.Errorf("unresolved: comcast.net connection_limit = %d, want 25", got)
	}
	if got := r.For("customer.example", comcastMX, "").ConnectionLimit.N; got != 0 {
		t.Errorf("unresolved: a domain at comcast's MX got %d", got)
	}
	resolved := r.ResolveSites(context.Background(), fakeMX(map[string][]string{
		"comcast.net": {"MX2H1.comcast.net.", "mx1a1.comcast.net"}, "nullmx.example": nil}))
	if got := resolved.For("customer.example", comcastMX, "").ConnectionLimit.N; got != 25 {
		t.Errorf("resolved: a domain at comcast's MX hosts has connection_limit %d, want 25", got)
	}
	if got := resolved.For("elsewhere.example", []string{"mx1a1.comcast.net"}, "").ConnectionLimit.N; got != 0 {
		t.Errorf("a different set of hosts is a different site, got connection_limit %d", got)
	}
	if site, ok := resolved.SiteOf("comcast.net"); !ok || site != "(mx1a1|mx2h1).comcast.net" {
		t.Errorf("SiteOf(comcast.net) = %q, %v", site, ok)
	}
	if got := resolved.For("broken.example", []string{"mx.broken.example"}, "").ConnectionLimit.N; got != 2 {
		t.Errorf("a section whose MX lookup failed still applies to its domain: got %d", got)
	}
	w := strings.Join(resolved.Warnings(), "\n")
	if !strings.Contains(w, `"broken.example": its section applies to broken.example alone`) || !strings.Contains(w, "null MX") {
		t.Errorf("warnings %q should name the failed lookups", w)
	}
	if len(r.Warnings()) != 0 {
		t.Errorf("ResolveSites changed the original's warnings: %q", r.Warnings())
	}
}

func TestAliasedSitesMergeAndWarn(t *testing.T) {
	t.Parallel()
	r, err := loadText(t, `
["yahoo.com"]
max_deliveries_per_connection = 20
connection_limit = 4

["aol.com"]
max_deliveries_per_connection = 10
`)
	if err != nil {
		t.Fatal(err)
	}
	r = r.ResolveSites(context.Background(), fakeMX(map[string][]string{"yahoo.com": yahooMX, "aol.com": yahooMX}))
	s := r.For("ymail.example", yahooMX, "")
	if s.MaxDeliveriesPerConnection != 10 || s.ConnectionLimit.N != 4 {
		t.Errorf("two sections of one site merge in load order: %+v", s.Limits)
	}
	if w := strings.Join(r.Warnings(), "\n"); !strings.Contains(w, "share the site") {
		t.Errorf("warnings %q should say the sections alias one site", w)
	}
}
