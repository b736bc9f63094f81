package netguard

import (
	"net/netip"
	"testing"
)

func TestSpecialPurpose(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]bool{
		"127.0.0.1": true, "::1": true, "10.1.2.3": true, "192.168.0.10": true, "172.16.5.4": true, "169.254.169.254": true,
		"100.64.0.1": true, "0.0.0.0": true, "::ffff:127.0.0.1": true, "fe80::1": true, "fd00::1": true, "224.0.0.1": true,
		"93.184.216.34": false, "2606:2800:220:1::1": false, "100.128.0.1": false,
		"0.1.2.3": true, "198.18.0.1": true, "192.0.0.8": true, "240.0.0.1": true, "255.255.255.255": true,
		"64:ff9b::a00:1": true, "64:ff9b::5db8:d822": false, "2002:7f00:1::1": true, "2002:5db8:d822::1": false,
		"2001:0:4136:e378:8000:63bf:3fff:fdd2": true, "64:ff9b:1::1": true,
		"192.0.2.1": true, "198.51.100.7": true, "203.0.113.9": true, "::127.0.0.1": true, "::ffff:0:7f00:1": true, "::c000:201": true, "192.88.99.1": true, "fec0::1": true,
	} {
		if got := SpecialPurpose(netip.MustParseAddr(addr)); got != want {
			t.Errorf("SpecialPurpose(%s) = %v, want %v", addr, got, want)
		}
	}
}
