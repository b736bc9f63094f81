package dnsclient

import (
	"context"
	"encoding/hex"

	"github.com/miekg/dns"
)

// TLSA is one TLSA record (RFC 6698 §2.1): which certificate (Usage), which
// part of it (Selector) and how it is compared (MatchingType) with Data.
type TLSA struct {
	Usage        uint8 // 0 PKIX-TA, 1 PKIX-EE, 2 DANE-TA, 3 DANE-EE
	Selector     uint8 // 0 the whole certificate, 1 its SubjectPublicKeyInfo
	MatchingType uint8 // 0 exact, 1 SHA-256, 2 SHA-512
	Data         []byte
}

// LookupTLSA returns the TLSA records at name ("_25._tcp.mx.example.com")
// and whether the resolver authenticated them (the AD bit). Records that
// are not authenticated must not be used for DANE (RFC 7672 §2.2): anyone
// on the path could have written them.
func (r *Resolver) LookupTLSA(ctx context.Context, name string) ([]TLSA, bool, error) {
	res, err := r.lookup(ctx, name, dns.TypeTLSA)
	if err != nil {
		return nil, false, err
	}
	rrs, err := res.unpack(name, "TLSA")
	if err != nil {
		return nil, res.authenticated, err
	}
	recs := make([]TLSA, 0, len(rrs))
	for _, rr := range rrs {
		t := rr.(*dns.TLSA)
		data, err := hex.DecodeString(t.Certificate)
		if err != nil {
			continue // unusable, like an unknown matching type
		}
		recs = append(recs, TLSA{Usage: t.Usage, Selector: t.Selector, MatchingType: t.MatchingType, Data: data})
	}
	return recs, res.authenticated, nil
}

// AddrsAuthenticated reports whether host's A or AAAA answer (records or
// their absence) came authenticated from the resolver. DANE uses it to
// tell a failed TLSA lookup at a signed host, which must not be ignored
// (an attacker could cause it), from one at an unsigned host, whose
// broken name server must not hold mail back (RFC 7672 §2.2).
func (r *Resolver) AddrsAuthenticated(ctx context.Context, host string) bool {
	for _, qt := range []uint16{dns.TypeA, dns.TypeAAAA} {
		if res, err := r.lookup(ctx, host, qt); err == nil && res.authenticated {
			return true
		}
	}
	return false
}

// MXAuthenticated reports whether domain's MX answer (records, or their
// absence) came authenticated from the resolver. DANE applies only to MX
// hosts named by an authenticated answer (RFC 7672 §2.2.1): otherwise
// whoever forged the MX records could name a host of theirs with TLSA
// records of their own.
func (r *Resolver) MXAuthenticated(ctx context.Context, domain string) bool {
	res, err := r.lookup(ctx, domain, dns.TypeMX)
	return err == nil && res.authenticated
}
