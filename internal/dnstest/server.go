// Package dnstest runs a real authoritative DNS server on the loopback
// interface, so that code which resolves names can be tested against actual
// DNS packets (rcodes, TTLs, truncation, timeouts) without touching the
// machine's resolver or the network.
//
// The server answers from an in-memory table that may be changed while it is
// serving:
//
//   - a name with records of the asked type gets them (NOERROR, AA set);
//   - a name holding a CNAME gets the CNAME, followed by the target's records
//     when the target is also in the table (up to 8 hops);
//   - a name that exists (it, or a name below it, has records) but lacks the
//     asked type gets NOERROR with an empty answer and an SOA in the authority
//     section, whose TTL and minimum are the negative TTL (RFC 2308);
//   - any other name gets NXDOMAIN with the same SOA;
//   - answers about a name marked with SetAuthenticated carry the AD bit
//     when the query sets AD or DO, standing in for a validating resolver
//     (DANE tests serve TLSA records that way).
//
// Over UDP, answers larger than the client's advertised size (512 bytes
// without EDNS0) are truncated with TC set, so TCP fallback can be tested.
package dnstest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// Default TTLs for records added through the Add methods and for the SOA of
// negative answers.
const (
	DefaultTTL         = 300
	DefaultNegativeTTL = 60
)

// Server is an authoritative DNS server listening on UDP and TCP on the same
// loopback port. All methods are safe for concurrent use, including while
// queries are being served.
type Server struct {
	addr    string
	udp     *dns.Server
	tcp     *dns.Server
	done    chan struct{} // closed by Close; interrupts SetDelay waits
	once    sync.Once
	closed  error
	queries atomic.Int64

	mu      sync.RWMutex
	records map[string][]dns.RR // owner (lowercase FQDN) → records
	rcodes  map[string]int
	delays  map[string]time.Duration
	authed  map[string]bool // names answered with AD set
	ttl     uint32
	negTTL  uint32
}

// New starts a Server on 127.0.0.1 with a random port and closes it when the
// test ends. It fails the test if the server cannot start.
func New(t testing.TB) *Server {
	t.Helper()
	s, err := Start("127.0.0.1:0")
	if err != nil {
		t.Fatalf("dnstest: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Start starts a Server listening on addr over both UDP and TCP. When addr's
// port is 0, it picks a port free for both protocols. Call Close to stop it.
func Start(addr string) (*Server, error) {
	pc, ln, err := listen(addr)
	if err != nil {
		return nil, err
	}
	s := &Server{
		addr:    pc.LocalAddr().String(),
		done:    make(chan struct{}),
		records: make(map[string][]dns.RR),
		rcodes:  make(map[string]int),
		delays:  make(map[string]time.Duration),
		authed:  make(map[string]bool),
		ttl:     DefaultTTL,
		negTTL:  DefaultNegativeTTL,
	}
	var started sync.WaitGroup
	started.Add(2)
	s.udp = &dns.Server{PacketConn: pc, Handler: s, NotifyStartedFunc: started.Done}
	s.tcp = &dns.Server{Listener: ln, Handler: s, NotifyStartedFunc: started.Done}
	errc := make(chan error, 2)
	for _, srv := range []*dns.Server{s.udp, s.tcp} {
		go func() { errc <- srv.ActivateAndServe() }()
	}
	// Shutdown fails on a server that has not started yet, so wait for both
	// (or for one to fail before starting).
	ready := make(chan struct{})
	go func() { started.Wait(); close(ready) }()
	select {
	case <-ready:
		return s, nil
	case err := <-errc:
		pc.Close()
		ln.Close()
		return nil, fmt.Errorf("dnstest: serve: %w", err)
	}
}

// listen binds UDP and TCP to the same port. With port 0 the UDP port is
// chosen by the kernel and TCP retried on it, since the two port spaces are
// independent and the TCP port may be taken.
func listen(addr string) (net.PacketConn, net.Listener, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, nil, fmt.Errorf("dnstest: address %q: %w", addr, err)
	}
	attempts := 1
	if port == "0" {
		attempts = 20
	}
	var lastErr error
	for range attempts {
		pc, err := net.ListenPacket("udp", net.JoinHostPort(host, port))
		if err != nil {
			return nil, nil, fmt.Errorf("dnstest: listen udp: %w", err)
		}
		p := strconv.Itoa(pc.LocalAddr().(*net.UDPAddr).Port)
		ln, err := net.Listen("tcp", net.JoinHostPort(host, p))
		if err == nil {
			return pc, ln, nil
		}
		pc.Close()
		lastErr = err
	}
	return nil, nil, fmt.Errorf("dnstest: listen tcp: %w", lastErr)
}

// Addr returns the "host:port" both listeners are bound to.
func (s *Server) Addr() string { return s.addr }

// Close stops both listeners, interrupts queries waiting on SetDelay and
// waits (briefly) for in-flight handlers. It is safe to call more than once.
func (s *Server) Close() error {
	s.once.Do(func() {
		close(s.done)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		s.closed = errors.Join(s.udp.ShutdownContext(ctx), s.tcp.ShutdownContext(ctx))
	})
	return s.closed
}

// Queries returns the number of queries received over both transports,
// including those answered with an error rcode or never answered.
func (s *Server) Queries() int { return int(s.queries.Load()) }

// SetTTL sets the TTL, in seconds, of records added by later Add calls.
func (s *Server) SetTTL(ttl uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ttl = ttl
}

// SetNegativeTTL sets the TTL and minimum of the SOA sent with NXDOMAIN and
// no-data answers.
func (s *Server) SetNegativeTTL(ttl uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.negTTL = ttl
}

// SetRcode makes every query for name answer with rcode and no records,
// for example dns.RcodeServerFailure or dns.RcodeRefused. dns.RcodeSuccess
// removes the override.
func (s *Server) SetRcode(name string, rcode int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rcode == dns.RcodeSuccess {
		delete(s.rcodes, canonical(name))
		return
	}
	s.rcodes[canonical(name)] = rcode
}

// SetDelay makes every query for name wait d before it is answered (over
// both transports). Zero removes the delay. Close interrupts the wait, and
// the interrupted query gets no answer.
func (s *Server) SetDelay(name string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d <= 0 {
		delete(s.delays, canonical(name))
		return
	}
	s.delays[canonical(name)] = d
}

// SetAuthenticated makes answers about name (records or their absence,
// not error rcodes) carry the AD bit, as a validating resolver's do for a
// DNSSEC-signed name, when the query asks for it (AD or DO set, RFC 6840
// §5.7). The server signs nothing: it stands in for the resolver that
// would have validated. false removes the mark.
func (s *Server) SetAuthenticated(name string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !on {
		delete(s.authed, canonical(name))
		return
	}
	s.authed[canonical(name)] = true
}

// canonical returns name as a lowercase FQDN, the form table keys use.
func canonical(name string) string {
	return dns.Fqdn(strings.ToLower(name))
}
