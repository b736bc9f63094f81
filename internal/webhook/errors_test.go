package webhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
)

// TestFailureTextIsForTenants: whatever a post fails with, the owner reads
// what went wrong with their endpoint, and never the operator's resolver,
// proxy or internal addresses or a raw internal error.
func TestFailureTextIsForTenants(t *testing.T) {
	t.Parallel()
	internal := net.TCPAddrFromAddrPort(netip.MustParseAddrPort("10.9.8.7:3128"))
	post := func(rawURL string, err error) error { return &url.Error{Op: "Post", URL: rawURL, Err: err} }
	cases := []struct {
		cause error
		want  string
	}{
		{post("http://2130706433/h", &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "2130706433", Server: "10.9.8.7:53"}}),
			"cannot resolve 2130706433"},
		{post("http://0x7f.1:8080/h", fmt.Errorf("%w %s", errUnresolved, "0x7f.1")), "cannot resolve 0x7f.1"},
		{post("https://hooks.example.com/h", &net.OpError{Op: "dial", Net: "tcp", Addr: internal,
			Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}), "connection refused by hooks.example.com"},
		{post("https://hooks.example.com/h", &net.OpError{Op: "proxyconnect", Net: "tcp", Addr: internal, Err: errors.New("EOF")}),
			"cannot connect to hooks.example.com"},
		{post("https://hooks.example.com/h", &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}),
			"certificate of hooks.example.com is not valid"},
		{post("https://hooks.example.com/h", context.DeadlineExceeded), "no answer from hooks.example.com in time"},
		{post("https://hooks.example.com/h", errForbiddenAddress), "not allowed"},
		{fmt.Errorf("%w %s", errStatus, "500 Internal Server Error"), "the endpoint answered 500"},
		{fmt.Errorf("reading the log: store: dial tcp 10.9.8.7:5432: connection refused"), "could not make the post"},
	}
	for _, c := range cases {
		got := publicText(c.cause)
		if !strings.Contains(got, c.want) || strings.Contains(got, "10.9.8.7") {
			t.Errorf("%v\n  → %q, want it to contain %q and no internal address", c.cause, got, c.want)
		}
	}
}
