package dnsclient

import (
	"cmp"
	"context"
	"net/netip"
	"slices"
	"strings"
	"sync"

	"github.com/miekg/dns"
)

// MX is one mail exchanger of a domain.
type MX struct {
	// Host is the exchanger's name in lowercase ASCII without the trailing
	// dot, or "." for a null MX.
	Host string
	Pref uint16
}

// IsNullMX reports whether mxs is a null MX (RFC 7505): a single record
// whose host is ".", meaning the domain accepts no mail. The preference is
// not checked (RFC 7505 says 0), since a "." host can never be delivered to.
func IsNullMX(mxs []MX) bool {
	return len(mxs) == 1 && mxs[0].Host == "."
}

// LookupMX returns domain's MX records sorted by preference, then host.
//
// A null MX comes back as []MX{{Host: ".", Pref: 0}} with a nil error, not
// as an error: the domain exists and has said it takes no mail, which
// validation reports differently from a missing MX (NoData, where RFC 5321
// §5.1 falls back to the A/AAAA records) or a missing domain (NotFound).
// Test with IsNullMX.
func (r *Resolver) LookupMX(ctx context.Context, domain string) ([]MX, error) {
	rrs, err := r.query(ctx, domain, dns.TypeMX)
	if err != nil {
		return nil, err
	}
	mxs := make([]MX, 0, len(rrs))
	for _, rr := range rrs {
		mx := rr.(*dns.MX)
		mxs = append(mxs, MX{Host: hostName(mx.Mx), Pref: mx.Preference})
	}
	slices.SortFunc(mxs, func(a, b MX) int {
		return cmp.Or(cmp.Compare(a.Pref, b.Pref), strings.Compare(a.Host, b.Host))
	})
	return mxs, nil
}

// LookupTXT returns name's TXT records in answer order, each record's
// character-strings joined without separator (RFC 7208 §3.3, RFC 6376
// §3.6.2.2), so long SPF and DKIM records come back whole.
func (r *Resolver) LookupTXT(ctx context.Context, name string) ([]string, error) {
	rrs, err := r.query(ctx, name, dns.TypeTXT)
	if err != nil {
		return nil, err
	}
	txts := make([]string, 0, len(rrs))
	for _, rr := range rrs {
		txts = append(txts, strings.Join(rr.(*dns.TXT).Txt, ""))
	}
	return txts, nil
}

// LookupIP returns host's IPv4 then IPv6 addresses, querying A and AAAA
// concurrently (each cached on its own).
//
// If either family has addresses they are returned with a nil error, even
// when the other query failed: one reachable address is enough to deliver.
// Otherwise the error is Temporary if either query was, else the A query's
// (NotFound or NoData).
func (r *Resolver) LookupIP(ctx context.Context, host string) ([]netip.Addr, error) {
	var (
		wg         sync.WaitGroup
		a, aaaa    []dns.RR
		errA, err6 error
	)
	wg.Go(func() { a, errA = r.query(ctx, host, dns.TypeA) })
	wg.Go(func() { aaaa, err6 = r.query(ctx, host, dns.TypeAAAA) })
	wg.Wait()

	addrs := make([]netip.Addr, 0, len(a)+len(aaaa))
	for _, rr := range a {
		if ip, ok := netip.AddrFromSlice(rr.(*dns.A).A); ok {
			addrs = append(addrs, ip.Unmap())
		}
	}
	for _, rr := range aaaa {
		if ip, ok := netip.AddrFromSlice(rr.(*dns.AAAA).AAAA); ok {
			addrs = append(addrs, ip)
		}
	}
	switch {
	case len(addrs) > 0:
		return addrs, nil
	case IsTemporary(err6) && !IsTemporary(errA):
		return nil, err6
	case errA != nil:
		return nil, errA
	}
	return nil, err6
}

// LookupCNAME returns the target of the CNAME record at name (one hop, in
// lowercase ASCII without the trailing dot), which is what checks of
// published tracking and return-path aliases compare. A name that exists
// without a CNAME gives a NoData error; unlike net.LookupCNAME, the name
// itself is never returned.
func (r *Resolver) LookupCNAME(ctx context.Context, name string) (string, error) {
	rrs, err := r.query(ctx, name, dns.TypeCNAME)
	if err != nil {
		return "", err
	}
	return hostName(rrs[0].(*dns.CNAME).Target), nil
}

// hostName lowercases a name from an answer and drops the trailing dot,
// except for the root ".".
func hostName(fqdn string) string {
	if fqdn == "." {
		return "."
	}
	return strings.TrimSuffix(strings.ToLower(fqdn), ".")
}

// LookupPTR returns the names the reverse zone gives ip (its in-addr.arpa
// or ip6.arpa PTR records), lowercase without the trailing dot. SPF's ptr
// mechanism asks it; such names prove nothing until they resolve back to
// ip, which is the caller's to check.
func (r *Resolver) LookupPTR(ctx context.Context, ip netip.Addr) ([]string, error) {
	name, err := dns.ReverseAddr(ip.Unmap().String())
	if err != nil {
		return nil, &Error{Name: ip.String(), Qtype: "PTR", Kind: Invalid, Rcode: -1, Err: err}
	}
	rrs, err := r.query(ctx, name, dns.TypePTR)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(rrs))
	for _, rr := range rrs {
		names = append(names, hostName(rr.(*dns.PTR).Ptr))
	}
	return names, nil
}
