package simnet

import (
	"context"
	"crypto/x509"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/postline/postline/internal/dnstest"
)

// Net is a running simulated internet. Its methods are safe for concurrent
// use.
type Net struct {
	cfg       Config
	dns       *dnstest.Server
	ca        *authority
	dir       string // holds the CA file
	providers []*Provider
	byDomain  map[string]*Provider
	mxPort    int
	stsPort   int // 0 when no provider has a policy

	mu       sync.Mutex
	received int
	arrival  chan struct{} // closed and replaced on every accepted message

	closeOnce sync.Once
}

// New starts a Net and stops it when the test ends. It fails the test if
// the Net cannot start.
func New(t testing.TB, cfg Config) *Net {
	t.Helper()
	n, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Close)
	return n
}

// Start starts a Net: its DNS server, providers and policy servers. Call
// Close to stop it.
func Start(cfg Config) (_ *Net, err error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	n := &Net{cfg: cfg, byDomain: map[string]*Provider{}, arrival: make(chan struct{})}
	defer func() {
		if err != nil {
			n.Close()
		}
	}()
	if n.ca, err = newAuthority(); err != nil {
		return nil, err
	}
	if n.dns, err = dnstest.Start("127.0.0.1:0"); err != nil {
		return nil, err
	}
	addr := cfg.BaseAddr
	var addrs, stsAddrs []netip.Addr
	for _, pc := range cfg.Providers {
		p, err := newProvider(n, pc, addr)
		if err != nil {
			return nil, err
		}
		for _, d := range p.domains {
			if other := n.byDomain[d]; other != nil {
				return nil, fmt.Errorf("simnet: domain %s at both %s and %s", d, other.cfg.Name, pc.Name)
			}
			n.byDomain[d] = p
		}
		n.providers = append(n.providers, p)
		addrs = append(addrs, addr)
		if pc.MTASTS != nil {
			stsAddrs = append(stsAddrs, addr)
		}
		addr = addr.Next()
	}
	if err := n.listen(addrs, stsAddrs); err != nil {
		return nil, err
	}
	for _, p := range n.providers {
		if err := p.publish(n.dns, &n.cfg); err != nil {
			return nil, err
		}
	}
	if n.dir, err = os.MkdirTemp("", "simnet"); err != nil {
		return nil, fmt.Errorf("simnet: %w", err)
	}
	if err := os.WriteFile(n.CAFile(), n.ca.pem, 0o644); err != nil {
		return nil, fmt.Errorf("simnet: %w", err)
	}
	return n, nil
}

// listen binds every provider's SMTP server on one port and the policy
// servers on another, and starts them.
func (n *Net) listen(addrs, stsAddrs []netip.Addr) error {
	lns, port, err := listenAll(addrs, n.cfg.MXPort)
	if err != nil {
		return fmt.Errorf("simnet: SMTP: %w", err)
	}
	n.mxPort = port
	for i, p := range n.providers {
		p.serve(lns[i])
	}
	if len(stsAddrs) == 0 {
		return nil
	}
	lns, port, err = listenAll(stsAddrs, n.cfg.MTASTSPort)
	if err != nil {
		return fmt.Errorf("simnet: MTA-STS: %w", err)
	}
	n.stsPort = port
	i := 0
	for _, p := range n.providers {
		if p.cfg.MTASTS == nil {
			continue
		}
		if err := p.startMTASTS(lns[i]); err != nil {
			for _, ln := range lns[i:] {
				ln.Close()
			}
			return err
		}
		i++
	}
	return nil
}

// listenAll listens on port at every address; port 0 picks one free on
// all of them (trying again when one address has it taken).
func listenAll(addrs []netip.Addr, port int) ([]net.Listener, int, error) {
	attempts := 1
	if port == 0 {
		attempts = 50
	}
	var lastErr error
	for range attempts {
		var lns []net.Listener
		p := port
		for _, a := range addrs {
			ln, err := net.Listen("tcp", netip.AddrPortFrom(a, uint16(p)).String())
			if err != nil {
				lastErr = err
				break
			}
			p = ln.Addr().(*net.TCPAddr).Port
			lns = append(lns, ln)
		}
		if len(lns) == len(addrs) {
			return lns, p, nil
		}
		for _, ln := range lns {
			ln.Close()
		}
	}
	return nil, 0, lastErr
}

// Close stops every server and removes the CA file. It is safe to call
// more than once.
func (n *Net) Close() {
	n.closeOnce.Do(func() {
		for _, p := range n.providers {
			p.close()
		}
		if n.dns != nil {
			n.dns.Close()
		}
		if n.dir != "" {
			os.RemoveAll(n.dir)
		}
	})
}

// DNS is the DNS server, for records a test adds itself.
func (n *Net) DNS() *dnstest.Server { return n.dns }

// MXPort is the SMTP port of every provider.
func (n *Net) MXPort() int { return n.mxPort }

// MTASTSPort is the HTTPS port of the policy servers (0 if none).
func (n *Net) MTASTSPort() int { return n.stsPort }

// Providers are the providers, in Config order.
func (n *Net) Providers() []*Provider { return slices.Clone(n.providers) }

// Provider is the provider named name, or nil.
func (n *Net) Provider(name string) *Provider {
	for _, p := range n.providers {
		if p.cfg.Name == name {
			return p
		}
	}
	return nil
}

// ProviderOf is the provider hosting domain, or nil.
func (n *Net) ProviderOf(domain string) *Provider { return n.byDomain[domain] }

// Domains is every domain of every provider, provider by provider.
func (n *Net) Domains() []string {
	var out []string
	for _, p := range n.providers {
		out = append(out, p.domains...)
	}
	return out
}

// CA is the test CA's certificate.
func (n *Net) CA() *x509.Certificate { return n.ca.cert }

// CertPool is a pool holding only the test CA, for a client's RootCAs.
func (n *Net) CertPool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(n.ca.cert)
	return pool
}

// CAFile is a PEM file of the test CA, for SSL_CERT_FILE.
func (n *Net) CAFile() string { return filepath.Join(n.dir, "ca.pem") }

// ServeEnv is the environment `postline serve` needs to deliver into the
// Net: its DNS server, the MX port, private addresses allowed, and, when a
// provider offers STARTTLS or an MTA-STS policy, the CA as the trust roots
// (SSL_CERT_FILE) and the policy port (POSTLINE_MTA_STS_PORT).
func (n *Net) ServeEnv() map[string]string {
	env := map[string]string{
		"POSTLINE_DNS_SERVER":             n.dns.Addr(),
		"POSTLINE_MX_PORT":                strconv.Itoa(n.mxPort),
		"POSTLINE_DELIVERY_ALLOW_PRIVATE": "true",
	}
	for _, p := range n.providers {
		if p.cfg.TLS != TLSOff || p.cfg.MTASTS != nil {
			env["SSL_CERT_FILE"] = n.CAFile()
		}
	}
	if n.stsPort != 0 {
		env["POSTLINE_MTA_STS_PORT"] = strconv.Itoa(n.stsPort)
	}
	return env
}

// arrived wakes WaitForMessages.
func (n *Net) arrived() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.received++
	close(n.arrival)
	n.arrival = make(chan struct{})
}

// Received is how many messages all providers have accepted.
func (n *Net) Received() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.received
}

// WaitForMessages waits until the providers have accepted at least count
// messages in all, or ctx ends (its error is returned then).
func (n *Net) WaitForMessages(ctx context.Context, count int) error {
	for {
		n.mu.Lock()
		got, arrival := n.received, n.arrival
		n.mu.Unlock()
		if got >= count {
			return nil
		}
		select {
		case <-arrival:
		case <-ctx.Done():
			return fmt.Errorf("simnet: %d of %d messages: %w", got, count, ctx.Err())
		}
	}
}

// Messages is every provider's messages, by time of acceptance.
func (n *Net) Messages() []Message {
	var out []Message
	for _, p := range n.providers {
		out = append(out, p.Messages()...)
	}
	slices.SortStableFunc(out, func(a, b Message) int { return a.ReceivedAt.Compare(b.ReceivedAt) })
	return out
}

// Violations is every provider's violations, by time: empty when no client
// ever went past a limit.
func (n *Net) Violations() []Violation {
	var out []Violation
	for _, p := range n.providers {
		out = append(out, p.Violations()...)
	}
	slices.SortStableFunc(out, func(a, b Violation) int { return a.Time.Compare(b.Time) })
	return out
}

// CheckNoViolations fails t if any client went past a provider's limit,
// listing the first ten violations, and says whether there were none.
func (n *Net) CheckNoViolations(t testing.TB) bool {
	t.Helper()
	v := n.Violations()
	if len(v) == 0 {
		return true
	}
	var b strings.Builder
	for _, x := range v[:min(len(v), 10)] {
		b.WriteString("\n\t" + x.String())
	}
	t.Errorf("simnet: %d limit violations:%s", len(v), b.String())
	return false
}

// Refusals is every provider's refusals, by time.
func (n *Net) Refusals() []Refusal {
	var out []Refusal
	for _, p := range n.providers {
		out = append(out, p.Refusals()...)
	}
	slices.SortStableFunc(out, func(a, b Refusal) int { return a.Time.Compare(b.Time) })
	return out
}
