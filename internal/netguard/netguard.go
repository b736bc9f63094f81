// Package netguard decides which addresses outbound connections the service
// makes on a tenant's behalf (webhooks) or for a DNS answer it does not
// control (mailbox probes) must never reach.
package netguard

import "net/netip"

// internalPrefixes are ranges net/netip does not call private but that
// lead inside a network or nowhere public.
var internalPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation (TEST-NET-1): never routed, so a local network if reached
	netip.MustParsePrefix("198.51.100.0/24"), // documentation (TEST-NET-2)
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation (TEST-NET-3)
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("192.88.99.0/24"),  // 6to4 relay anycast, deprecated (RFC 7526)
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, and broadcast
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use NAT64
	netip.MustParsePrefix("2001::/32"),       // Teredo (embeds an obfuscated IPv4 address)
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("100::/64"),        // discard-only
	netip.MustParsePrefix("fec0::/10"),       // site-local, deprecated (RFC 3879): a local network if routed
	netip.MustParsePrefix("::/96"),           // IPv4-compatible (deprecated): ::127.0.0.1 is loopback by another name
	netip.MustParsePrefix("::ffff:0:0:0/96"), // IPv4-translated (RFC 2765)
}

var (
	nat64  = netip.MustParsePrefix("64:ff9b::/96") // well-known NAT64: the IPv4 address is the last 4 bytes
	sixTo4 = netip.MustParsePrefix("2002::/16")    // 6to4: the IPv4 address is bytes 2-5
)

// SpecialPurpose reports whether a is an address no outbound connection
// to a tenant-chosen or DNS-chosen host may reach: loopback, private,
// link-local, multicast, unspecified, and the ranges of internalPrefixes,
// also when embedded in NAT64 or 6to4 addresses. Webhook posts and
// mailbox probes use it.
func SpecialPurpose(a netip.Addr) bool {
	a = a.Unmap()
	if a.Is6() {
		b := a.As16()
		switch {
		case nat64.Contains(a):
			return SpecialPurpose(netip.AddrFrom4([4]byte(b[12:16])))
		case sixTo4.Contains(a):
			return SpecialPurpose(netip.AddrFrom4([4]byte(b[2:6])))
		}
	}
	for _, p := range internalPrefixes {
		if p.Contains(a) {
			return true
		}
	}
	return a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsMulticast() || a.IsUnspecified() || a.IsInterfaceLocalMulticast()
}
