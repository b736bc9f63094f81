package simnet

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emersion/go-smtp"
	"github.com/postline/postline/internal/smtptest"
)

// Provider is one running provider: an SMTP server on its own loopback
// address, and its MTA-STS policy server if it has a policy. Its methods
// are safe for concurrent use.
type Provider struct {
	net     *Net
	cfg     ProviderConfig
	addr    netip.Addr
	domains []string
	mx      map[string][]string // domain → MX hosts
	tls     *tls.Config         // STARTTLS; nil with TLSOff
	leaf    *x509.Certificate   // the STARTTLS certificate; nil with TLSOff

	smtp   *smtp.Server
	ln     *admitter
	served chan struct{} // closed when the SMTP server stops
	web    *http.Server  // MTA-STS; nil without a policy
	conns  atomic.Uint64 // connections numbered so far

	mu         sync.Mutex
	clients    map[netip.Addr]*client
	msgs       []Message
	refusals   []Refusal
	violations []Violation
	greylist   map[greyKey]time.Time // triplet → first attempt
	inject     []smtptest.Reply
	fetches    map[string]int // domain → policy fetches
}

// client is what a provider knows of one client address. Guarded by
// Provider.mu.
type client struct {
	open, peak, conns int
	changed           chan struct{} // closed and replaced when a connection ends
	slots             []*slot       // transactions within the rate period, oldest first
	accepted          []time.Time   // MAIL FROM times of accepted messages
	maxPerConn        int
	violations        ViolationCounts
}

// slot is one transaction counted against the message rate from its MAIL
// FROM: while in flight, and for good once its message is accepted.
type slot struct{ at time.Time }

type greyKey struct {
	client   netip.Addr
	from, to string
}

func newProvider(n *Net, cfg ProviderConfig, addr netip.Addr) (*Provider, error) {
	p := &Provider{
		net: n, cfg: cfg, addr: addr,
		mx:       map[string][]string{},
		clients:  map[netip.Addr]*client{},
		greylist: map[greyKey]time.Time{},
		fetches:  map[string]int{},
		served:   make(chan struct{}),
	}
	for _, d := range domainNames(cfg) {
		if _, dup := p.mx[d]; !dup {
			p.domains = append(p.domains, d)
			p.mx[d] = mxFor(cfg, d)
		}
	}
	var err error
	if p.tls, err = n.ca.serverTLS(cfg.TLS, p.MXHosts()); err != nil {
		return nil, err
	}
	if p.tls != nil {
		p.leaf = p.tls.Certificates[0].Leaf
	}
	return p, nil
}

// serve starts the SMTP server on ln.
func (p *Provider) serve(ln net.Listener) {
	srv := smtp.NewServer(smtp.BackendFunc(p.newSession))
	srv.Domain = p.MXHosts()[0]
	srv.TLSConfig = p.tls
	srv.EnableSMTPUTF8 = true
	srv.ReadTimeout = time.Minute
	srv.WriteTimeout = time.Minute
	srv.ErrorLog = log.New(io.Discard, "", 0)
	p.smtp = srv
	p.ln = newAdmitter(ln, p)
	go func() {
		defer close(p.served)
		srv.Serve(p.ln)
	}()
}

// close stops the servers and waits for the SMTP server.
func (p *Provider) close() {
	if p.web != nil {
		p.web.Close()
	}
	if p.smtp != nil {
		p.smtp.Close()
		p.ln.Close() // if Serve has not registered it yet
		<-p.served
	}
}

// Name is the provider's name.
func (p *Provider) Name() string { return p.cfg.Name }

// Config is the provider's configuration with its defaults filled in.
func (p *Provider) Config() ProviderConfig { return p.cfg }

// Addr is the provider's loopback address.
func (p *Provider) Addr() netip.Addr { return p.addr }

// SMTPAddr is "ADDR:MXPORT", where its SMTP server listens.
func (p *Provider) SMTPAddr() string {
	return net.JoinHostPort(p.addr.String(), strconv.Itoa(p.net.mxPort))
}

// Domains are the domains the provider hosts.
func (p *Provider) Domains() []string { return slices.Clone(p.domains) }

// MX is the MX hosts of domain, in preference order; nil if the provider
// does not host it.
func (p *Provider) MX(domain string) []string { return slices.Clone(p.mx[domain]) }

// MXHosts is every MX host name of the provider, each once.
func (p *Provider) MXHosts() []string {
	var out []string
	seen := map[string]bool{}
	for _, d := range p.domains {
		for _, h := range p.mx[d] {
			if !seen[h] {
				seen[h] = true
				out = append(out, h)
			}
		}
	}
	if len(out) == 0 {
		out = slices.Clone(p.cfg.MXHosts)
	}
	return out
}

// Certificate is the certificate the provider presents after STARTTLS
// (nil with TLSOff), for tests that compute TLSA records of their own.
func (p *Provider) Certificate() *x509.Certificate { return p.leaf }

// Inject queues replies to the next MAIL FROM commands the provider
// receives, from any client, one each, before any limit is checked: the
// way to make a provider answer "421 4.7.0 [TS01] ..." on demand. Replies
// with code 421 (or Disconnect) close the connection after the reply.
func (p *Provider) Inject(replies ...smtptest.Reply) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inject = append(p.inject, replies...)
}

// client returns the state of addr, creating it; p.mu must be held.
func (p *Provider) client(addr netip.Addr) *client {
	c := p.clients[addr]
	if c == nil {
		c = &client{changed: make(chan struct{})}
		p.clients[addr] = c
	}
	return c
}
