package simnet

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/miekg/dns"
	"github.com/postline/postline/internal/dnstest"
)

// domainNames lists the domains a provider hosts, lowercase, in order.
func domainNames(p ProviderConfig) []string {
	var out []string
	for i := 1; i <= p.Domains; i++ {
		out = append(out, fmt.Sprintf("d%03d.%s.example", i, p.Name))
	}
	for _, d := range p.DomainNames {
		out = append(out, strings.ToLower(strings.TrimSuffix(d, ".")))
	}
	return out
}

// mxFor is the MX hosts of domain at p, in preference order.
func mxFor(p ProviderConfig, domain string) []string {
	if p.PerDomainMX {
		return []string{strings.ReplaceAll(domain, ".", "-") + ".mx." + p.Name + ".simnet.test"}
	}
	return p.MXHosts
}

// publish adds the provider's records to d: MX and A records, the MTA-STS
// and TLSA records it is configured with.
func (p *Provider) publish(d *dnstest.Server, cfg *Config) error {
	addr := p.addr.String()
	hosts := map[string]bool{}
	for _, dom := range p.domains {
		for i, mx := range p.mx[dom] {
			d.AddMX(dom, uint16(10*(i+1)), mx)
			hosts[mx] = true
		}
		if m := p.cfg.MTASTS; m != nil {
			d.AddTXT("_mta-sts."+dom, "v=STSv1; id="+m.ID+";")
			d.AddA("mta-sts."+dom, addr)
		}
	}
	for h := range hosts {
		d.AddA(h, addr)
	}
	if p.cfg.DANE == nil {
		return nil
	}
	if cfg.Authenticate == nil {
		cfg.Authenticate = func(d *dnstest.Server, name string) { d.SetAuthenticated(name, true) }
	}
	ports := []int{25}
	if p.net.mxPort != 25 {
		ports = append(ports, p.net.mxPort)
	}
	for h := range hosts {
		cfg.Authenticate(d, h)
		for _, port := range ports {
			rr, err := p.tlsa(h, port)
			if err != nil {
				return err
			}
			d.AddRR(rr)
			cfg.Authenticate(d, rr.Hdr.Name)
		}
	}
	for _, dom := range p.domains {
		cfg.Authenticate(d, dom)
	}
	return nil
}

// tlsa is the TLSA record of MX host h at port as the provider's DANE
// asks.
func (p *Provider) tlsa(h string, port int) (*dns.TLSA, error) {
	name, err := dns.TLSAName(dns.Fqdn(h), strconv.Itoa(port), "tcp")
	if err != nil {
		return nil, err
	}
	rr := &dns.TLSA{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeTLSA, Class: dns.ClassINET, Ttl: dnstest.DefaultTTL}}
	cert := p.leaf
	if p.cfg.DANE.Usage == 2 {
		cert = p.net.ca.cert
	}
	if p.cfg.DANE.Mismatch {
		cert = p.net.ca.stranger
	}
	if err := rr.Sign(int(p.cfg.DANE.Usage), 1, 1, cert); err != nil {
		return nil, fmt.Errorf("simnet: TLSA for %s: %w", h, err)
	}
	return rr, nil
}
