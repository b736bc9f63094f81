package mailauth

import (
	"context"
	"net"
	"net/netip"

	"github.com/postline/postline/internal/dnsclient"
)

// Resolver is the DNS the checks need; *dnsclient.Resolver is one. Its
// errors are classified as dnsclient's are (NotFound, NoData, Temporary).
type Resolver interface {
	LookupTXT(ctx context.Context, name string) ([]string, error)
	LookupMX(ctx context.Context, name string) ([]dnsclient.MX, error)
	LookupIP(ctx context.Context, host string) ([]netip.Addr, error)
	LookupPTR(ctx context.Context, ip netip.Addr) ([]string, error)
}

var _ Resolver = (*dnsclient.Resolver)(nil)

// netResolver presents a Resolver as the SPF library expects one
// (net.Resolver's methods and *net.DNSError errors): no data is an empty
// answer, a missing name IsNotFound, a failure for now IsTemporary.
type netResolver struct{ r Resolver }

func netError(name string, err error) error {
	switch {
	case err == nil:
		return nil
	case dnsclient.IsNotFound(err):
		return &net.DNSError{Err: "no such host", Name: name, IsNotFound: true}
	case dnsclient.IsTemporary(err):
		return &net.DNSError{Err: err.Error(), Name: name, IsTemporary: true}
	}
	return &net.DNSError{Err: err.Error(), Name: name}
}

func (n netResolver) LookupTXT(ctx context.Context, name string) ([]string, error) {
	txts, err := n.r.LookupTXT(ctx, name)
	if dnsclient.IsNoData(err) {
		return nil, nil
	}
	return txts, netError(name, err)
}

func (n netResolver) LookupMX(ctx context.Context, name string) ([]*net.MX, error) {
	mxs, err := n.r.LookupMX(ctx, name)
	if dnsclient.IsNoData(err) || dnsclient.IsNullMX(mxs) {
		return nil, nil
	}
	out := make([]*net.MX, 0, len(mxs))
	for _, mx := range mxs {
		out = append(out, &net.MX{Host: mx.Host + ".", Pref: mx.Pref})
	}
	return out, netError(name, err)
}

func (n netResolver) LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error) {
	ips, err := n.r.LookupIP(ctx, host)
	if dnsclient.IsNoData(err) {
		return nil, nil
	}
	out := make([]net.IPAddr, 0, len(ips))
	for _, ip := range ips {
		out = append(out, net.IPAddr{IP: ip.AsSlice()})
	}
	return out, netError(host, err)
}

func (n netResolver) LookupAddr(ctx context.Context, addr string) ([]string, error) {
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return nil, &net.DNSError{Err: "not an address", Name: addr}
	}
	names, err := n.r.LookupPTR(ctx, ip)
	if dnsclient.IsNoData(err) {
		return nil, nil
	}
	for i := range names {
		names[i] += "."
	}
	return names, netError(addr, err)
}
