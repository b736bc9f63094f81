package dnstest

import (
	"encoding/hex"
	"fmt"
	"net/netip"

	"github.com/miekg/dns"
)

// The Add methods take names in ASCII (use the xn-- form for IDNs), with or
// without the trailing dot, in any case. They panic on a malformed IP
// address, like regexp.MustCompile, because that is a mistake in the test.

// AddMX adds an MX record for domain. A host of "." makes a null MX
// (RFC 7505) when it is the domain's only MX.
func (s *Server) AddMX(domain string, pref uint16, host string) {
	s.AddRR(&dns.MX{Hdr: s.header(domain, dns.TypeMX), Preference: pref, Mx: dns.Fqdn(host)})
}

// AddA adds an A record. It panics if ip is not an IPv4 address.
func (s *Server) AddA(host string, ip string) {
	a := mustParse(ip)
	if !a.Is4() {
		panic(fmt.Sprintf("dnstest: AddA %s: %q is not an IPv4 address", host, ip))
	}
	s.AddRR(&dns.A{Hdr: s.header(host, dns.TypeA), A: a.AsSlice()})
}

// AddAAAA adds an AAAA record. It panics if ip is not an IPv6 address.
func (s *Server) AddAAAA(host string, ip string) {
	a := mustParse(ip)
	if !a.Is6() || a.Is4In6() {
		panic(fmt.Sprintf("dnstest: AddAAAA %s: %q is not an IPv6 address", host, ip))
	}
	s.AddRR(&dns.AAAA{Hdr: s.header(host, dns.TypeAAAA), AAAA: a.AsSlice()})
}

// AddTXT adds one TXT record whose character-strings are txt. Strings longer
// than 255 bytes are split into several character-strings, as publishers of
// long SPF and DKIM records do; a client joining them gets txt back.
func (s *Server) AddTXT(name string, txt ...string) {
	var parts []string
	for _, t := range txt {
		for len(t) > 255 {
			parts = append(parts, t[:255])
			t = t[255:]
		}
		parts = append(parts, t)
	}
	s.AddRR(&dns.TXT{Hdr: s.header(name, dns.TypeTXT), Txt: parts})
}

// AddTLSA adds a TLSA record (RFC 6698) with the given usage, selector,
// matching type and certificate association data. Pair it with
// SetAuthenticated to serve it as DNSSEC-validated, as DANE requires.
func (s *Server) AddTLSA(name string, usage, selector, matchingType uint8, data []byte) {
	s.AddRR(&dns.TLSA{Hdr: s.header(name, dns.TypeTLSA), Usage: usage, Selector: selector,
		MatchingType: matchingType, Certificate: hex.EncodeToString(data)})
}

// AddCNAME makes name an alias of target.
func (s *Server) AddCNAME(name, target string) {
	s.AddRR(&dns.CNAME{Hdr: s.header(name, dns.TypeCNAME), Target: canonical(target)})
}

// AddRR adds any record as given, TTL included, for types the other Add
// methods do not cover (for example
// dns.NewRR("example.com. 5 IN NS ns.example.com.")).
func (s *Server) AddRR(rr dns.RR) {
	rr = dns.Copy(rr)
	h := rr.Header()
	h.Name = canonical(h.Name)
	if h.Class == 0 {
		h.Class = dns.ClassINET
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records[h.Name] = append(s.records[h.Name], rr)
}

// Remove deletes name's records of type rrtype (dns.TypeTXT, ...), so a
// test can change an answer: Remove, then Add the new records.
func (s *Server) Remove(name string, rrtype uint16) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := canonical(name)
	kept := s.records[key][:0]
	for _, rr := range s.records[key] {
		if rr.Header().Rrtype != rrtype {
			kept = append(kept, rr)
		}
	}
	if len(kept) == 0 {
		delete(s.records, key)
		return
	}
	s.records[key] = kept
}

// header returns a header for a record at name with the current TTL.
func (s *Server) header(name string, rrtype uint16) dns.RR_Header {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return dns.RR_Header{Name: canonical(name), Rrtype: rrtype, Class: dns.ClassINET, Ttl: s.ttl}
}

func mustParse(ip string) netip.Addr {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		panic(fmt.Sprintf("dnstest: %v", err))
	}
	return a
}
