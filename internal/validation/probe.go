package validation

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/postline/postline/internal/delivery"
	"github.com/postline/postline/internal/dnsclient"
	"github.com/postline/postline/internal/netguard"
)

// Probe outcomes (Probe.Outcome).
const (
	ProbeAccepted    = "accepted"    // RCPT TO answered 2xx
	ProbeRejected    = "rejected"    // the mailbox does not exist (5.1.1 ...)
	ProbeFull        = "full"        // over quota (4.2.2, 5.2.2)
	ProbeGreylisted  = "greylisted"  // come back later
	ProbeTemporary   = "temporary"   // another 4xx: not known yet
	ProbeRefused     = "refused"     // another 5xx (policy): not known
	ProbeUnavailable = "unavailable" // no MX answered in time
	ProbePrivate     = "private"     // the MX is loopback or private: not probed
)

// Probe is what a mailbox probe found (Result.Mailbox).
type Probe struct {
	Outcome    string `json:"outcome"`
	CatchAll   bool   `json:"catch_all"`
	Code       int    `json:"smtp_code,omitempty"`
	Enhanced   string `json:"enhanced_code,omitempty"`
	Message    string `json:"smtp_message,omitempty"`
	MXHost     string `json:"mx_host,omitempty"`
	RetryAfter int    `json:"retry_after,omitempty"` // seconds, for greylisted and temporary outcomes
	// Cached says the finding was made before this request (within
	// ProbeConfig.CacheTTL); temporary outcomes are never cached.
	Cached bool `json:"cached"`
}

// verdict maps an outcome to the deliverability verdict and reasons.
func (p *Probe) verdict() (string, []string) {
	switch p.Outcome {
	case ProbeAccepted:
		if p.CatchAll {
			return Risky, []string{DRCatchAll}
		}
		return Deliverable, []string{}
	case ProbeRejected:
		return Undeliverable, []string{DRMailboxNotFound}
	case ProbeFull:
		return Risky, []string{DRMailboxFull}
	case ProbeGreylisted:
		return Unknown, []string{DRGreylisted}
	case ProbeUnavailable:
		return Unknown, []string{DRSMTPUnavailable}
	case ProbePrivate:
		return Undeliverable, []string{DRNoMailServer}
	}
	return Unknown, []string{}
}

// ProbeConfig permits and shapes mailbox probes (--validation-smtp-probe).
type ProbeConfig struct {
	Helo     string // EHLO name; required
	MailFrom string // MAIL FROM; default postmaster@Helo
	Port     int    // the MX port (--mx-port); default 25
	// Timeout bounds one address's probe (all its MX hosts). Default 15s.
	Timeout time.Duration
	// AllowPrivate probes MX hosts at loopback or private addresses
	// (tests); otherwise such a domain is undeliverable, not probed.
	AllowPrivate bool
	// CatchAllTTL is how long a domain's catch-all finding is kept.
	// Default 24h.
	CatchAllTTL time.Duration
	// CacheTTL is how long an address's definitive finding (accepted,
	// rejected, full, private) is reused. Default 24h.
	CacheTTL time.Duration
	// PerHost bounds the sessions open at once to one MX host (default 2),
	// and HostInterval spaces their starts (default 250ms): a job probes a
	// few addresses a second at one MX, never a flood.
	PerHost      int
	HostInterval time.Duration
	// Slots, when set, is delivery's connection bound per egress path
	// (delivery.Transport.MXSlot): a probe session holds one of the slots
	// of the probed domain's site while it is open, so probing never
	// takes a server's connections from sending. A session kept for
	// another domain at the same host keeps the slot it took.
	Slots interface {
		MXSlot(ctx context.Context, domain string) (release func(), err error)
	}
	// Observe counts probes by outcome (metrics); nil counts nothing.
	Observe func(outcome string)
	// Logger logs each probe's domain and outcome (never the address);
	// nil logs nothing.
	Logger *slog.Logger
}

// prober runs probes and remembers which domains accept everything.
type prober struct {
	cfg      ProbeConfig
	resolver Resolver
	mu       sync.Mutex
	catchAll map[string]catchAllEntry
	found    map[string]foundEntry     // by address
	idle     map[string][]*smtpSession // parked sessions by MX host and address
	hostsMu  sync.Mutex
	perHost  map[string]*hostGate
}

type foundEntry struct {
	probe Probe
	until time.Time
}

// hostGate bounds and spaces the sessions to one MX host.
type hostGate struct {
	slots chan struct{}
	mu    sync.Mutex
	next  time.Time
}

type catchAllEntry struct {
	yes   bool
	until time.Time
}

func newProber(cfg ProbeConfig, r Resolver) *prober {
	if cfg.MailFrom == "" {
		cfg.MailFrom = "postmaster@" + cfg.Helo
	}
	if cfg.Port == 0 {
		cfg.Port = 25
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 15 * time.Second
	}
	if cfg.CatchAllTTL <= 0 {
		cfg.CatchAllTTL = 24 * time.Hour
	}
	if cfg.CacheTTL <= 0 {
		cfg.CacheTTL = 24 * time.Hour
	}
	if cfg.PerHost <= 0 {
		cfg.PerHost = 2
	}
	if cfg.HostInterval <= 0 {
		cfg.HostInterval = 250 * time.Millisecond
	}
	return &prober{cfg: cfg, resolver: r, catchAll: map[string]catchAllEntry{}, found: map[string]foundEntry{},
		perHost: map[string]*hostGate{}, idle: map[string][]*smtpSession{}}
}

// probe asks the domain's mail servers, in preference order, whether they
// take mail for addr: EHLO, STARTTLS when offered, MAIL FROM, RCPT TO,
// then RCPT TO a random local part for catch-all, RSET, QUIT. Never DATA.
func (p *prober) probe(ctx context.Context, addr, domain string) *Probe {
	if r, ok := p.cached(addr); ok {
		return r
	}
	r := p.ask(ctx, addr, domain)
	if p.cfg.Observe != nil {
		p.cfg.Observe(r.Outcome)
	}
	if p.cfg.Logger != nil { // the domain, never the address
		p.cfg.Logger.Info("validation: mailbox probe", "domain", domain, "outcome", r.Outcome, "mx_host", r.MXHost, "smtp_code", r.Code)
	}
	switch r.Outcome {
	case ProbeAccepted, ProbeRejected, ProbeFull, ProbePrivate:
		p.mu.Lock()
		if len(p.found) > 200_000 {
			p.found = map[string]foundEntry{}
		}
		p.found[addr] = foundEntry{probe: *r, until: time.Now().Add(p.cfg.CacheTTL)}
		p.mu.Unlock()
	}
	return r
}

func (p *prober) cached(addr string) (*Probe, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.found[addr]
	if !ok || !time.Now().Before(e.until) {
		return nil, false
	}
	r := e.probe
	r.Cached = true
	return &r, true
}

// ask runs the probe within the address's time budget (and the
// request's, when it set one).
func (p *prober) ask(ctx context.Context, addr, domain string) *Probe {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	if until, ok := probeDeadline(ctx); ok {
		var cancelReq context.CancelFunc
		ctx, cancelReq = context.WithDeadline(ctx, until)
		defer cancelReq()
	}
	hosts := p.hosts(ctx, domain)
	res := &Probe{Outcome: ProbeUnavailable}
	for _, h := range hosts {
		ip, ok := p.address(ctx, h)
		if !ok {
			continue
		}
		if !p.cfg.AllowPrivate && netguard.SpecialPurpose(ip) {
			res = &Probe{Outcome: ProbePrivate, MXHost: h}
			break
		}
		release, err := p.enter(ctx, h)
		if err != nil {
			break // the budget ran out waiting for the host
		}
		r := p.session(ctx, h, ip, addr, domain)
		release()
		if r.Outcome != ProbeUnavailable {
			res = r
			break
		}
	}
	return res
}

// enter waits for a free session slot at host and for its spacing.
func (p *prober) enter(ctx context.Context, host string) (release func(), err error) {
	p.hostsMu.Lock()
	g, ok := p.perHost[host]
	if !ok {
		if len(p.perHost) > 10_000 {
			p.perHost = map[string]*hostGate{}
		}
		g = &hostGate{slots: make(chan struct{}, p.cfg.PerHost)}
		p.perHost[host] = g
	}
	p.hostsMu.Unlock()
	select {
	case g.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	g.mu.Lock()
	now := time.Now()
	start := now
	if g.next.After(now) {
		start = g.next
	}
	g.next = start.Add(p.cfg.HostInterval)
	g.mu.Unlock()
	if wait := start.Sub(now); wait > 0 {
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			<-g.slots
			return nil, ctx.Err()
		}
	}
	return func() { <-g.slots }, nil
}

// hosts are the MX hosts by preference (the domain itself without MX).
func (p *prober) hosts(ctx context.Context, domain string) []string {
	mxs, err := p.resolver.LookupMX(ctx, domain)
	if err != nil || len(mxs) == 0 || dnsclient.IsNullMX(mxs) {
		if err == nil || dnsclient.IsNoData(err) {
			return []string{domain}
		}
		return nil
	}
	slices.SortStableFunc(mxs, func(a, b dnsclient.MX) int { return int(a.Pref) - int(b.Pref) })
	out := make([]string, 0, min(len(mxs), 3))
	for _, mx := range mxs[:min(len(mxs), 3)] {
		out = append(out, mx.Host)
	}
	return out
}

func (p *prober) address(ctx context.Context, host string) (netip.Addr, bool) {
	ips, err := p.resolver.LookupIP(ctx, host)
	if err != nil || len(ips) == 0 {
		return netip.Addr{}, false
	}
	return ips[0], true
}

// session asks host at ip about addr: on a session parked by an earlier
// probe of the same host when there is one (one session serves several
// addresses of a batch), else on a new one.
func (p *prober) session(ctx context.Context, host string, ip netip.Addr, addr, domain string) *Probe {
	key := host + "|" + ip.String()
	if s := p.takeIdle(key); s != nil {
		if r, ok := p.converse(ctx, s, host, addr, domain, key); ok {
			return r
		}
		// The parked session had gone stale: ask on a new one.
	}
	s, r := p.open(ctx, host, ip, domain)
	if r != nil {
		return r
	}
	r, _ = p.converse(ctx, s, host, addr, domain, key)
	return r
}

// smtpSession is a connection that said EHLO (and STARTTLS when offered).
type smtpSession struct {
	c       *smtp.Client
	conn    net.Conn
	until   time.Time // when parked: how long it may wait for the next probe
	release func()    // gives back delivery's connection slot
}

func (s *smtpSession) close() {
	s.c.Quit()
	s.c.Close()
	s.release()
}

// idleFor is how long a parked session waits for the next probe of its
// host.
const idleFor = 5 * time.Second

// open dials host (an MX host of domain) at ip, says EHLO and starts TLS
// when offered.
func (p *prober) open(ctx context.Context, host string, ip netip.Addr, domain string) (*smtpSession, *Probe) {
	release := func() {}
	if p.cfg.Slots != nil {
		var err error
		if release, err = p.cfg.Slots.MXSlot(ctx, domain); err != nil {
			return nil, &Probe{Outcome: ProbeUnavailable, MXHost: host, Message: "no free connection to the server in time"}
		}
	}
	s, r := p.dial(ctx, host, ip)
	if r != nil {
		release()
		return nil, r
	}
	s.release = release
	return s, nil
}

func (p *prober) dial(ctx context.Context, host string, ip netip.Addr) (*smtpSession, *Probe) {
	d := net.Dialer{}
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(ip.String(), strconv.Itoa(p.cfg.Port)))
	if err != nil {
		return nil, &Probe{Outcome: ProbeUnavailable, MXHost: host, Message: "connection failed"}
	}
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	// A reply without end (a hostile MX) would grow until the deadline.
	c := smtp.NewClient(delivery.LimitReplies(conn))
	bound(ctx, c)
	if err := c.Hello(p.cfg.Helo); err != nil {
		c.Close()
		return nil, &Probe{Outcome: ProbeUnavailable, MXHost: host, Message: "no greeting"}
	}
	if ok, _ := c.Extension("STARTTLS"); ok {
		// Opportunistic, like delivery to MX hosts: a certificate that does
		// not verify still encrypts the probe.
		tc, err := delivery.StartTLS(ctx, conn, &tls.Config{ServerName: host, InsecureSkipVerify: true}, p.cfg.Helo) //nolint:gosec // opportunistic TLS
		if err != nil {
			c.Close()
			return nil, &Probe{Outcome: ProbeUnavailable, MXHost: host, Message: "STARTTLS failed"}
		}
		c = tc
	}
	return &smtpSession{c: c, conn: conn}, nil
}

// converse runs MAIL FROM, RCPT TO (and the catch-all RCPT) and RSET on s,
// then parks s for the next probe of the host or closes it. ok is false
// when a parked session turned out dead before any reply.
func (p *prober) converse(ctx context.Context, s *smtpSession, host, addr, domain, key string) (*Probe, bool) {
	if dl, ok := ctx.Deadline(); ok {
		s.conn.SetDeadline(dl)
	}
	bound(ctx, s.c)
	keep := false
	defer func() {
		if keep {
			p.park(key, s)
		} else {
			s.close()
		}
	}()
	if err := s.c.Mail(p.cfg.MailFrom, nil); err != nil {
		e := delivery.ClassifyAt(err, delivery.StageMail, host)
		return classified(e, host), e.Code != 0
	}
	var res *Probe
	if err := s.c.Rcpt(addr, nil); err != nil {
		res = classified(delivery.ClassifyAt(err, delivery.StageRcpt, host), host)
	} else {
		res = &Probe{Outcome: ProbeAccepted, MXHost: host, Code: 250}
		res.CatchAll = p.isCatchAll(s.c, domain)
	}
	keep = s.c.Reset() == nil && res.Outcome != ProbeUnavailable
	return res, true
}

// takeIdle returns a parked session of key that has not waited too long.
func (p *prober) takeIdle(key string) *smtpSession {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.idle[key]) > 0 {
		list := p.idle[key]
		s := list[len(list)-1]
		p.idle[key] = list[:len(list)-1]
		if time.Now().Before(s.until) {
			return s
		}
		go s.close()
	}
	return nil
}

// park keeps s for the next probe of its host, at most PerHost of them.
func (p *prober) park(key string, s *smtpSession) {
	s.until = time.Now().Add(idleFor)
	s.conn.SetDeadline(s.until)
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.idle[key]) >= p.cfg.PerHost || len(p.idle) > 10_000 {
		go s.close()
		return
	}
	p.idle[key] = append(p.idle[key], s)
}

// bound keeps go-smtp's own deadline for every command (5 minutes by
// default) within the probe's budget.
func bound(ctx context.Context, c *smtp.Client) {
	if dl, ok := ctx.Deadline(); ok {
		c.CommandTimeout, c.SubmissionTimeout = time.Until(dl), time.Until(dl)
	}
}

// isCatchAll asks, once per domain and TTL, whether an unguessable local
// part is accepted too.
func (p *prober) isCatchAll(c *smtp.Client, domain string) bool {
	now := time.Now()
	p.mu.Lock()
	e, ok := p.catchAll[domain]
	p.mu.Unlock()
	if ok && now.Before(e.until) {
		return e.yes
	}
	b := make([]byte, 12)
	rand.Read(b)
	yes := c.Rcpt("postline-probe-"+hex.EncodeToString(b)+"@"+domain, nil) == nil
	p.mu.Lock()
	if len(p.catchAll) > 100_000 {
		p.catchAll = map[string]catchAllEntry{}
	}
	p.catchAll[domain] = catchAllEntry{yes: yes, until: now.Add(p.cfg.CatchAllTTL)}
	p.mu.Unlock()
	return yes
}

// classified turns a refused MAIL or RCPT into an outcome with the
// shared classes of delivery's table.
func classified(e *delivery.Error, host string) *Probe {
	r := &Probe{MXHost: host, Code: e.Code, Enhanced: e.Enhanced, Message: e.Message}
	switch {
	case e.Code == 0:
		r.Outcome = ProbeUnavailable
	case e.MailboxFull():
		r.Outcome = ProbeFull
	case e.Greylisted():
		r.Outcome, r.RetryAfter = ProbeGreylisted, retrySeconds(e)
	case e.Temporary:
		r.Outcome, r.RetryAfter = ProbeTemporary, retrySeconds(e)
	case e.RecipientRejected():
		r.Outcome = ProbeRejected
	default:
		r.Outcome = ProbeRefused
	}
	return r
}

func retrySeconds(e *delivery.Error) int {
	if d := e.RetryAfter(); d > 0 {
		return int(d.Seconds())
	}
	return 300
}
