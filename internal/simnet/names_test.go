package simnet_test

import (
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/postline/postline/internal/simnet"
)

// mxOf is domain's MX answer as "PREF HOST" lines.
func mxOf(t *testing.T, n *simnet.Net, domain string) []string {
	var out []string
	for _, rr := range lookup(t, n, domain, dns.TypeMX) {
		mx := rr.(*dns.MX)
		out = append(out, fmt.Sprintf("%d %s", mx.Preference, strings.TrimSuffix(mx.Mx, ".")))
	}
	slices.Sort(out)
	return out
}

func aOf(t *testing.T, n *simnet.Net, host string) string {
	rrs := lookup(t, n, host, dns.TypeA)
	if len(rrs) != 1 {
		return fmt.Sprint(rrs)
	}
	return rrs[0].(*dns.A).A.String()
}

// The DNS gives each domain MX records at its provider's hosts, and each
// host the provider's address, with the names the package doc promises.
func TestNames(t *testing.T) {
	t.Parallel()
	n := simnet.New(t, simnet.Config{Providers: []simnet.ProviderConfig{
		{Name: "gmail"},
		{Name: "outlook", Domains: 5, PerDomainMX: true},
		{Name: "yahoo", Domains: -1, DomainNames: []string{"Yahoo.Example.", "ymail.example"},
			MXHosts: []string{"mta5.am0.yahoodns.simnet.test", "mta6.am0.yahoodns.simnet.test"}},
	}})
	tests := []struct {
		domain string
		mx     []string
		addr   string
	}{
		{"d001.gmail.example", []string{"10 mx1.gmail.simnet.test", "20 mx2.gmail.simnet.test"}, "127.0.0.2"},
		{"d100.gmail.example", []string{"10 mx1.gmail.simnet.test", "20 mx2.gmail.simnet.test"}, "127.0.0.2"},
		{"d005.outlook.example", []string{"10 d005-outlook-example.mx.outlook.simnet.test"}, "127.0.0.3"},
		{"yahoo.example", []string{"10 mta5.am0.yahoodns.simnet.test", "20 mta6.am0.yahoodns.simnet.test"}, "127.0.0.4"},
		{"ymail.example", []string{"10 mta5.am0.yahoodns.simnet.test", "20 mta6.am0.yahoodns.simnet.test"}, "127.0.0.4"},
	}
	for _, tt := range tests {
		if got := mxOf(t, n, tt.domain); !slices.Equal(got, tt.mx) {
			t.Errorf("MX of %s = %q, want %q", tt.domain, got, tt.mx)
		}
		host := strings.Fields(tt.mx[0])[1]
		if got := aOf(t, n, host); got != tt.addr {
			t.Errorf("A of %s = %s, want %s", host, got, tt.addr)
		}
		if p := n.ProviderOf(tt.domain); p == nil || p.Addr().String() != tt.addr || !slices.Equal(p.MX(tt.domain), mxHosts(tt.mx)) {
			t.Errorf("ProviderOf(%s) = %v, want the provider at %s", tt.domain, p, tt.addr)
		}
	}
	if got := len(n.Domains()); got != 100+5+2 {
		t.Errorf("%d domains, want 107", got)
	}
	if got := mxOf(t, n, "d101.gmail.example"); len(got) != 0 {
		t.Errorf("MX of a domain past the count = %q", got)
	}
	if got := n.Provider("outlook").MXHosts(); len(got) != 5 {
		t.Errorf("outlook's MXHosts() = %q, want one per domain", got)
	}
	for _, p := range n.Providers() {
		if !strings.HasSuffix(p.SMTPAddr(), ":"+strconv.Itoa(n.MXPort())) {
			t.Errorf("%s listens on %s, want port %d", p.Name(), p.SMTPAddr(), n.MXPort())
		}
	}
}

func mxHosts(lines []string) []string {
	var out []string
	for _, l := range lines {
		out = append(out, strings.Fields(l)[1])
	}
	return out
}

// Ten providers with a thousand domains, TLS and MTA-STS start in well
// under a second, so every test can have its own.
func TestStartsFast(t *testing.T) {
	t.Parallel()
	var cfg simnet.Config
	for i := range 10 {
		cfg.Providers = append(cfg.Providers, simnet.ProviderConfig{Name: fmt.Sprintf("p%d", i),
			TLS: simnet.TLSValid, MTASTS: &simnet.MTASTSPolicy{}, MaxConnections: 5, MessageRate: simnet.PerMinute(600)})
	}
	start := time.Now()
	n := simnet.New(t, cfg)
	took := time.Since(start)
	t.Logf("10 providers, %d domains: started in %v", len(n.Domains()), took)
	if took > time.Second {
		t.Errorf("Start took %v, want well under a second", took)
	}
	if got := mxOf(t, n, "d1000.p9.example"); len(got) != 0 {
		t.Errorf("MX of d1000 = %q", got)
	}
	if got := mxOf(t, n, "d100.p9.example"); len(got) != 2 {
		t.Errorf("MX of d100.p9.example = %q", got)
	}
}

// ServeEnv points a server at the Net, with the CA and the policy port
// only when TLS is in play.
func TestServeEnv(t *testing.T) {
	t.Parallel()
	plain := simnet.New(t, simnet.Config{Providers: []simnet.ProviderConfig{{Name: "a", Domains: 1}}})
	env := plain.ServeEnv()
	want := map[string]string{
		"POSTLINE_DNS_SERVER":             plain.DNS().Addr(),
		"POSTLINE_MX_PORT":                strconv.Itoa(plain.MXPort()),
		"POSTLINE_DELIVERY_ALLOW_PRIVATE": "true",
	}
	if fmt.Sprint(env) != fmt.Sprint(want) {
		t.Errorf("ServeEnv() = %v, want %v", env, want)
	}
	secure := simnet.New(t, simnet.Config{Providers: []simnet.ProviderConfig{
		{Name: "a", Domains: 1}, {Name: "b", Domains: 1, TLS: simnet.TLSValid, MTASTS: &simnet.MTASTSPolicy{}}}})
	env = secure.ServeEnv()
	if env["SSL_CERT_FILE"] != secure.CAFile() || env["POSTLINE_MTA_STS_PORT"] != strconv.Itoa(secure.MTASTSPort()) {
		t.Errorf("ServeEnv() = %v, want SSL_CERT_FILE and POSTLINE_MTA_STS_PORT", env)
	}
	pem, err := os.ReadFile(secure.CAFile())
	if err != nil || !strings.Contains(string(pem), "BEGIN CERTIFICATE") {
		t.Errorf("CA file: %v, %.40q", err, pem)
	}
}

// A configuration that cannot work is refused with a reason.
func TestConfigErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cfg  simnet.Config
		want string
	}{
		{simnet.Config{}, "no providers"},
		{simnet.Config{Providers: []simnet.ProviderConfig{{Name: "Gmail"}}}, "DNS label"},
		{simnet.Config{Providers: []simnet.ProviderConfig{{Name: "a"}, {Name: "a"}}}, "twice"},
		{simnet.Config{Providers: []simnet.ProviderConfig{{Name: "a", DANE: &simnet.DANE{Usage: 3}}}}, "DANE without TLS"},
		{simnet.Config{Providers: []simnet.ProviderConfig{{Name: "a", MessageRate: simnet.Rate{Count: 5, Per: time.Second}, RateSlack: time.Hour}}}, "slack"},
		{simnet.Config{Providers: []simnet.ProviderConfig{{Name: "a", Domains: -1, DomainNames: []string{"x.example"}},
			{Name: "b", Domains: -1, DomainNames: []string{"x.example"}}}}, "at both"},
		{simnet.Config{BaseAddr: netip.MustParseAddr("127.255.255.255"), Providers: []simnet.ProviderConfig{{Name: "a"}, {Name: "b"}}}, "127.0.0.0/8"},
	}
	for _, tt := range tests {
		n, err := simnet.Start(tt.cfg)
		if err == nil {
			n.Close()
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Start(%+v) = %v, want an error with %q", tt.cfg, err, tt.want)
		}
	}
}
