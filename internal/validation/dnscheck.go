package validation

import (
	"context"
	"net/netip"

	"github.com/postline/postline/internal/dnsclient"
)

// checkDNS asks whether domain takes mail. It returns reason "" when it
// does, with implicit set when that is through A/AAAA records only.
//
// A temporary failure of either lookup is dns_unavailable: an MX lookup
// that times out says nothing, and neither does an A lookup after NoData.
// The lookups share dnsclient's cache and in-flight deduplication, so a
// batch of addresses at one domain costs one query per record type.
func (v *Validator) checkDNS(ctx context.Context, domain string) (reason, msg string, implicit bool) {
	ctx, cancel := context.WithTimeout(ctx, v.lookupTimeout)
	defer cancel()
	mxs, err := v.resolver.LookupMX(ctx, domain)
	switch {
	case err == nil && dnsclient.IsNullMX(mxs):
		return ReasonNullMX, "domain accepts no mail (null MX, RFC 7505): " + domain, false
	case err == nil && len(mxs) > 0:
		return "", "", false
	case err == nil, dnsclient.IsNoData(err):
		// No MX: RFC 5321 §5.1 falls back to the domain's own addresses.
	case dnsclient.IsNotFound(err):
		return ReasonNXDomain, "domain does not exist: " + domain, false
	case dnsclient.IsInvalid(err):
		return ReasonSyntax, "domain is not a valid DNS name: " + domain, false
	default: // Temporary, or an error from a Resolver that is not dnsclient
		return ReasonDNSUnavailable, "DNS lookup failed temporarily; try again later", false
	}
	addrs, err := v.resolver.LookupIP(ctx, domain)
	switch {
	case err == nil && usable(addrs):
		return "", "", true
	case err == nil, dnsclient.IsNoData(err), dnsclient.IsNotFound(err):
		return ReasonNoMailServer, "domain has no mail server (no MX, A or AAAA record): " + domain, false
	case dnsclient.IsInvalid(err):
		return ReasonSyntax, "domain is not a valid DNS name: " + domain, false
	}
	return ReasonDNSUnavailable, "DNS lookup failed temporarily; try again later", false
}

// usable reports whether any address could be an SMTP server reachable
// from elsewhere: a domain whose only A record is 127.0.0.1 or 0.0.0.0
// (a common parking setup) takes no mail.
func usable(addrs []netip.Addr) bool {
	for _, a := range addrs {
		if !a.IsLoopback() && !a.IsUnspecified() {
			return true
		}
	}
	return false
}
