package mtasts

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"syscall"
	"time"

	"github.com/postline/postline/internal/netguard"
)

// maxBody bounds a policy body; RFC 8461 §3.3 lets senders stop at 64 KiB.
const maxBody = 64 << 10

// errNonPublic is the cause of a fetch refused by the address guard.
var errNonPublic = errors.New("refused to connect to a non-public address")

// fetcher gets policy bodies over HTTPS.
type fetcher struct {
	client   *http.Client
	resolver Resolver
	guard    bool
	port     int
}

func newFetcher(cfg Config) *fetcher {
	f := &fetcher{resolver: cfg.Resolver, guard: !cfg.AllowPrivate, port: cfg.Port}
	tr := &http.Transport{
		Proxy:             nil, // the policy host is the recipient's, never a proxy's
		DialContext:       f.dial,
		TLSClientConfig:   &tls.Config{RootCAs: cfg.RootCAs, MinVersion: tls.VersionTLS12},
		DisableKeepAlives: true, // one fetch per domain per refresh: nothing to reuse
		ForceAttemptHTTP2: true,
	}
	f.client = &http.Client{Transport: tr, Timeout: cfg.Timeout,
		// §3.3: redirects MUST NOT be followed.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return f
}

// fetch returns the policy body of domain.
func (f *fetcher) fetch(ctx context.Context, domain string) (string, error) {
	start := time.Now()
	host := "mta-sts." + domain
	if f.port != 443 {
		host = net.JoinHostPort(host, strconv.Itoa(f.port))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+host+"/.well-known/mta-sts.txt", nil)
	if err != nil {
		return "", err
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("HTTP status %s", resp.Status)
	}
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err != nil || mt != "text/plain" {
		return "", fmt.Errorf("content type %q, want text/plain", resp.Header.Get("Content-Type"))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return "", err
	}
	// A body that took the whole timeout is not taken even when it
	// ended cleanly: a host that dribbles lines until the deadline and
	// then stops must not get its tail read as a policy.
	if d := time.Since(start); f.client.Timeout > 0 && d >= f.client.Timeout {
		return "", fmt.Errorf("policy fetch took %s, the limit is %s", d.Round(time.Millisecond), f.client.Timeout)
	}
	if len(body) > maxBody {
		return "", fmt.Errorf("policy larger than %d bytes", maxBody)
	}
	return string(body), nil
}

// dial resolves the policy host through the Resolver and connects to its
// first reachable address, refusing non-public ones unless allowed.
func (f *fetcher) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	addrs, err := f.resolver.LookupIP(ctx, host)
	if err != nil {
		return nil, err
	}
	d := net.Dialer{}
	if f.guard {
		var public []netip.Addr
		for _, a := range addrs {
			if !netguard.SpecialPurpose(a) {
				public = append(public, a)
			}
		}
		if len(public) == 0 {
			return nil, fmt.Errorf("%s: %w", host, errNonPublic)
		}
		addrs, d.Control = public, refuseNonPublic
	}
	var last error
	for _, a := range addrs[:min(len(addrs), 4)] {
		c, err := d.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			return c, nil
		}
		last = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, last
}

// refuseNonPublic checks the address a socket is about to connect to, so
// that a name rebinding between lookup and connect is refused too.
func refuseNonPublic(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return err
	}
	if netguard.SpecialPurpose(ap.Addr()) {
		return fmt.Errorf("%s: %w", ap.Addr(), errNonPublic)
	}
	return nil
}
