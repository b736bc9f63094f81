package dnsclient

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"testing"
)

// TestErrorNamesNoResolverAddress: lookup errors reach tenants, so the
// DNS server's address never appears in them.
func TestErrorNamesNoResolverAddress(t *testing.T) {
	t.Parallel()
	resolver := net.UDPAddrFromAddrPort(netip.MustParseAddrPort("10.1.2.3:53"))
	for _, cause := range []error{
		&net.OpError{Op: "read", Net: "udp", Addr: resolver, Err: os.NewSyscallError("recvfrom", syscall.ECONNREFUSED)},
		&net.OpError{Op: "dial", Net: "udp", Addr: resolver, Err: &timeoutErr{}},
	} {
		e := &Error{Name: "example.com", Qtype: "MX", Kind: Temporary, Rcode: -1, Err: cause}
		if msg := e.Error(); strings.Contains(msg, "10.1.2.3") || !strings.Contains(msg, "MX example.com") {
			t.Errorf("%q: names the resolver, or not the lookup", msg)
		}
		if !errors.Is(e, cause) {
			t.Error("the cause is no longer unwrapped")
		}
	}
}

type timeoutErr struct{}

func (*timeoutErr) Error() string   { return "i/o timeout" }
func (*timeoutErr) Timeout() bool   { return true }
func (*timeoutErr) Temporary() bool { return true }
