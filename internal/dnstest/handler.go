package dnstest

import (
	"net"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// maxChase bounds CNAME chains, so a loop in the table cannot hang a query.
const maxChase = 8

// ServeDNS answers one query from the table; it implements dns.Handler.
func (s *Server) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	s.queries.Add(1)
	if len(req.Question) != 1 {
		m := new(dns.Msg)
		m.SetRcode(req, dns.RcodeFormatError)
		w.WriteMsg(m)
		return
	}
	q := req.Question[0]
	name := canonical(q.Name)

	s.mu.RLock()
	delay := s.delays[name]
	s.mu.RUnlock()
	if delay > 0 {
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-s.done:
			return
		}
	}

	m := s.answer(req, name, q.Qtype)
	size := dns.MaxMsgSize
	if _, udp := w.RemoteAddr().(*net.UDPAddr); udp {
		size = dns.MinMsgSize
	}
	if opt := req.IsEdns0(); opt != nil {
		m.SetEdns0(opt.UDPSize(), false)
		if size == dns.MinMsgSize && int(opt.UDPSize()) > size {
			size = int(opt.UDPSize())
		}
	}
	m.Truncate(size)
	w.WriteMsg(m)
}

// answer builds the reply from the table (without EDNS0 or truncation).
func (s *Server) answer(req *dns.Msg, name string, qtype uint16) *dns.Msg {
	s.mu.RLock()
	defer s.mu.RUnlock()

	m := new(dns.Msg)
	if rc, ok := s.rcodes[name]; ok {
		m.SetRcode(req, rc)
		return m
	}
	m.SetReply(req)
	m.Authoritative = true
	do := false
	if opt := req.IsEdns0(); opt != nil {
		do = opt.Do()
	}
	m.AuthenticatedData = s.authed[name] && (req.AuthenticatedData || do)

	owner := name
	for range maxChase {
		var cname *dns.CNAME
		found := false
		for _, rr := range s.records[owner] {
			if rr.Header().Rrtype == qtype || qtype == dns.TypeANY {
				m.Answer = append(m.Answer, dns.Copy(rr))
				found = true
			} else if c, ok := rr.(*dns.CNAME); ok {
				cname = c
			}
		}
		if found || cname == nil {
			break
		}
		m.Answer = append(m.Answer, dns.Copy(cname))
		owner = canonical(cname.Target)
	}
	if len(m.Answer) > 0 {
		return m
	}
	if !s.exists(name) {
		m.Rcode = dns.RcodeNameError
	}
	m.Ns = []dns.RR{s.soa(name)}
	return m
}

// exists reports whether name has records or is an empty non-terminal (a
// name below it has records), the two cases RFC 8020 says are not NXDOMAIN.
func (s *Server) exists(name string) bool {
	if len(s.records[name]) > 0 {
		return true
	}
	for owner := range s.records {
		if strings.HasSuffix(owner, "."+name) {
			return true
		}
	}
	return false
}

// soa returns the SOA sent with negative answers. Its owner is the name's
// registrable-looking parent (the last two labels), which is all clients
// need: they read the TTL and minimum.
func (s *Server) soa(name string) dns.RR {
	labels := dns.SplitDomainName(name)
	zone := name
	if len(labels) > 2 {
		zone = dns.Fqdn(strings.Join(labels[len(labels)-2:], "."))
	}
	return &dns.SOA{
		Hdr:     dns.RR_Header{Name: zone, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: s.negTTL},
		Ns:      "ns.dnstest.invalid.",
		Mbox:    "hostmaster.dnstest.invalid.",
		Serial:  1,
		Refresh: 3600,
		Retry:   600,
		Expire:  86400,
		Minttl:  s.negTTL,
	}
}
