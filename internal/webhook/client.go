package webhook

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// errForbiddenAddress is what a post to an address the operator has not
// allowed fails with; it ends up in the webhook's last_error.
var errForbiddenAddress = errors.New("connecting to loopback, private, link-local or multicast addresses is not allowed (--webhook-allow-private)")

// newClient returns the HTTP client of the dispatcher: bounded in time,
// never following redirects, and (unless allowPrivate) refusing to dial
// addresses inside the operator's network, checked on the IP actually
// dialled so that a name resolving there (or rebinding to there) fails too.
func newClient(allowPrivate bool, timeout time.Duration) *http.Client {
	d := &net.Dialer{Timeout: timeout}
	if !allowPrivate {
		d.Control = func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("webhook: dialling %s: %w", address, err)
			}
			if forbidden(ap.Addr()) {
				return errForbiddenAddress
			}
			return nil
		}
	}
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy:                 nil, // a proxy would dial on our behalf, past the check
			DialContext:           d.DialContext,
			TLSHandshakeTimeout:   timeout,
			ResponseHeaderTimeout: timeout,
			MaxIdleConnsPerHost:   2,
			IdleConnTimeout:       time.Minute,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

func forbidden(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsMulticast() || a.IsUnspecified() || a.IsInterfaceLocalMulticast() ||
		// 100.64.0.0/10 (carrier-grade NAT) is not "private" to net/netip but is internal.
		netip.MustParsePrefix("100.64.0.0/10").Contains(a)
}
