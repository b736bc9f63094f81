package webhook

import (
	"context"
	"errors"
	"fmt"
	"github.com/postline/postline/internal/netguard"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// errForbiddenAddress is what a post to an address the operator has not
// allowed fails with; it ends up in the webhook's last_error.
var errForbiddenAddress = errors.New("connecting to loopback, private, link-local or multicast addresses is not allowed (--webhook-allow-private)")

// errUnresolved is a host name the resolver had no address for.
var errUnresolved = errors.New("cannot resolve")

// Resolver looks up a host's addresses; the dispatcher uses the one every
// other lookup uses (--dns-server), not the system's.
type Resolver interface {
	LookupIP(ctx context.Context, host string) ([]netip.Addr, error)
}

// newClient returns the HTTP client of the dispatcher: bounded in time,
// never following redirects, and (unless allowPrivate) refusing to dial
// addresses inside the operator's network, checked on the IP actually
// dialled so that a name resolving there (or rebinding to there) fails too.
// Names are resolved through res when it is set.
func newClient(allowPrivate bool, timeout time.Duration, res Resolver) *http.Client {
	d := &net.Dialer{Timeout: timeout}
	if !allowPrivate {
		d.Control = func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("webhook: dialling %s: %w", address, err)
			}
			if netguard.SpecialPurpose(ap.Addr()) {
				return errForbiddenAddress
			}
			return nil
		}
	}
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy:                 nil, // a proxy would dial on our behalf, past the check
			DialContext:           dialVia(d, res),
			TLSHandshakeTimeout:   timeout,
			ResponseHeaderTimeout: timeout,
			MaxIdleConnsPerHost:   2,
			IdleConnTimeout:       time.Minute,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// dialVia dials with d, resolving host names through res (the system
// resolver when res is nil). Addresses are tried in the order the
// resolver gives them; errors name the host, never the resolver.
func dialVia(d *net.Dialer, res Resolver) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if res == nil {
		return d.DialContext
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		if _, err := netip.ParseAddr(host); err == nil {
			return d.DialContext(ctx, network, addr)
		}
		ips, err := res.LookupIP(ctx, host)
		if err != nil || len(ips) == 0 {
			return nil, fmt.Errorf("%w %s", errUnresolved, host)
		}
		var first error
		for _, ip := range ips {
			conn, err := d.DialContext(ctx, network, net.JoinHostPort(ip.String(), port))
			if err == nil {
				return conn, nil
			}
			if first == nil {
				first = err
			}
		}
		return nil, first
	}
}

// NewClient returns the guarded HTTP client webhooks post with, for other
// posters of tenants' URLs (route forwards): bounded by timeout, never
// following redirects, and refusing loopback, private, link-local and
// multicast addresses unless allowPrivate (--webhook-allow-private).
func NewClient(allowPrivate bool, timeout time.Duration, res Resolver) *http.Client {
	return newClient(allowPrivate, timeout, res)
}

// Forbidden reports a post refused because its address is one the
// operator has not allowed (no retry can change that).
func Forbidden(err error) bool { return errors.Is(err, errForbiddenAddress) }

// FailureText is what a tenant is shown of a failed post: from the kind
// of failure, never the raw network error, at most 500 bytes.
func FailureText(err error) string {
	msg := publicText(err)
	if len(msg) > 500 {
		msg = msg[:500]
	}
	return msg
}
