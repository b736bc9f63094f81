package delivery

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/postline/postline/internal/dnsclient"
	"github.com/postline/postline/internal/egress"
	"github.com/postline/postline/internal/message"
	"github.com/postline/postline/internal/shaping"
)

// Route modes and relay TLS modes, as in Route.
const (
	ModeSMTP   = "smtp"   // through the configured relay
	ModeDirect = "direct" // to the recipient domain's MX

	TLSNone     = "none"     // plain text, never STARTTLS
	TLSStartTLS = "starttls" // STARTTLS required and verified
	TLSImplicit = "tls"      // TLS from the first byte (SMTPS)
)

// MXResolver is the DNS a Transport needs; *dnsclient.Resolver satisfies
// it. Every name is resolved through it (never the system resolver), so
// delivery and validation agree and tests can serve their own zones.
type MXResolver interface {
	LookupMX(ctx context.Context, domain string) ([]dnsclient.MX, error)
	LookupIP(ctx context.Context, host string) ([]netip.Addr, error)
}

var _ MXResolver = (*dnsclient.Resolver)(nil)

// Route is where a domain's mail goes.
type Route struct {
	Mode string // ModeSMTP or ModeDirect
	// Relay settings, used in ModeSMTP only. Host is a name or an IP
	// address; Port 0 means 465 for TLSImplicit, 25 for TLSNone and 587
	// otherwise; TLS "" means TLSStartTLS. User "" means no AUTH.
	Host           string
	Port           int
	User, Password string
	TLS            string
	// DirectTLS is the TLS policy of ModeDirect (the zero value is the
	// default; see DirectTLS). Relays ignore it. The shaping's enable_tls
	// sets the mode when this does not; its enable_mta_sts and enable_dane
	// = false turn those off.
	DirectTLS DirectTLS
	// Source names the egress source the delivery goes out through: its
	// egress path is the site (or relay) through this source, and the
	// shaping's sources."SOURCE" sections apply. "" for none. When
	// Config.Egress defines it, its source_address is bound and its
	// ehlo_domain said (direct delivery). Pool, when set, chooses it.
	Source string
	// Pool names the egress pool (Config.Egress) whose sources direct
	// deliveries go out through, chosen per site by weighted round robin
	// under their warm-up caps (egress.go). "" for none.
	Pool string
}

// Envelope is the SMTP envelope of one message to one recipient.
type Envelope struct {
	From string // MAIL FROM; "" for the null sender (<>)
	To   string // the one recipient
}

// Result describes an accepted message.
type Result struct {
	Host     string     // the MX or relay host that accepted it
	Code     int        // the final reply code (250)
	Enhanced string     // the final reply's enhanced code, "" if none
	Message  string     // the final reply's text (often carries a queue id)
	TLS      TLSOutcome // the session's TLS: version, verification, policy
	Reused   bool       // whether the session was taken from the idle pool
	// Source is the egress source used ("" for none) and SourceAddress
	// its bound address ("" when the system chose).
	Source, SourceAddress string
}

// Config configures a Transport. Only Resolver is required.
// Shares is this process's part of limits meant for every process
// together.
type Shares interface {
	// Share is this process's part of limit places.
	Share(limit int) int
	// Divisor is what this process divides a rate by; 0 when it has no
	// share yet.
	Divisor() int
}

type Config struct {
	Resolver MXResolver
	// MXPort is the port for direct delivery. Default 25.
	MXPort int
	// HeloName is the EHLO name. Default os.Hostname(), else "localhost".
	HeloName string
	// DialTimeout bounds each TCP connect; CommandTimeout each command,
	// handshake and read or write of the message. Defaults 30s and 5m.
	// The ctx given to Send bounds the whole attempt.
	DialTimeout, CommandTimeout time.Duration
	// TLSConfig is the base TLS configuration for relays (RootCAs,
	// client certificates, MinVersion). ServerName defaults to the relay
	// host. It does not apply to MX hosts (see the package documentation).
	TLSConfig *tls.Config
	// RootCAs verifies MX certificates where the TLS policy requires it
	// (MTA-STS enforce, Opportunistic, Required); nil means the system's
	// roots, which Go reads from SSL_CERT_FILE when it is set.
	RootCAs *x509.CertPool
	// MTASTS finds recipient domains' MTA-STS policies; nil turns MTA-STS
	// off.
	MTASTS MTASTSPolicies
	// Logger receives what MTA-STS policies in testing mode report.
	// Default: discarded.
	Logger *slog.Logger
	// InsecureSkipRelayVerify turns off certificate verification for
	// relays. The zero value verifies.
	InsecureSkipRelayVerify bool
	// Shares splits the provider_* limits of the shaping rules between
	// the processes delivering from one database (package members); nil:
	// this process has them whole.
	Shares Shares
	// Shaping returns the traffic-shaping rules in force, read at every
	// admission (so a reload applies to the next delivery); nil, or a nil
	// result, is no rules: every path has the defaults below.
	Shaping func() *shaping.Rules
	// Overrides returns the limits automation rules override for a site
	// now (SetConfig), applied over the shaping's at every admission;
	// nil: none.
	Overrides func(ctx context.Context, site string) shaping.Limits
	// MaxConnsPerDest is the connection_limit of an egress path whose
	// shaping sets none: the connections (busy, idle or being dialled)
	// open at once to one site, or one relay. Default 4.
	MaxConnsPerDest int
	// MaxConnsPerRelay is that default for a relay (a route through an
	// SMTP host the operator named) instead: a smarthost is the
	// operator's own or a sending service, not a receiver to be polite
	// to, and one connection fewer than the workers leaves a worker
	// waiting in line (Postfix's default for a relayhost is 20). Default
	// MaxConnsPerDest.
	MaxConnsPerRelay int
	// IdleTimeout is how long an idle connection is kept for reuse when
	// the shaping sets no idle_timeout. Default 30s; negative disables
	// reuse whatever the shaping says.
	IdleTimeout time.Duration
	// FailureDelay is how long an egress path dials nothing after
	// consecutive_connection_failures_before_delay failed connections in a
	// row (deliveries meanwhile are deferred as KumoMTA does, "no answer
	// from any host"). Default 1m.
	FailureDelay time.Duration
	// AllowPrivate lets direct delivery dial MX hosts (and implicit-MX
	// addresses) at loopback, private, link-local and other non-public
	// addresses (guard.go), for tests and simulated networks. The zero
	// value refuses them. Relays are not affected.
	AllowPrivate bool
	// Egress is the egress file's sources and pools (--egress-file); nil
	// is none, and a Route naming a pool is refused (5.3.5).
	Egress *egress.Config
	// Warmup counts messages per source per UTC day for warm-up caps,
	// shared by the processes of a database (store.RateCounter). Nil: an
	// in-process count.
	Warmup WarmupCounter
	// Now is the clock of warm-up days. Default time.Now.
	Now func() time.Time
}

// Transport sends messages over SMTP, keeping idle connections for reuse.
// It is safe for concurrent use; share one per process and Close it at
// shutdown.
type Transport struct {
	cfg      Config
	dialer   net.Dialer   // relays
	mxDialer net.Dialer   // MX hosts: refuses non-public addresses unless AllowPrivate
	tlsa     TLSAResolver // nil: the Resolver cannot look up TLSA records, no DANE

	mu      sync.Mutex
	paths   map[string]*path     // egress path key → its connections and limits
	provs   map[string]*provider // provider name → its shared limits
	pruned  time.Time            // when paths were last pruned
	closed  bool
	closing chan struct{}        // closed by Close
	pickers map[string]*picker   // site and pool → its round robin
	full    map[string]time.Time // source → the UTC day its warm-up cap was reached
	// refunds counts warm-up counts given back (refundWarmup): a source
	// found at its cap is marked full only if none came back meanwhile.
	refunds uint64
}

// New checks cfg, fills in its defaults and returns a Transport.
func New(cfg Config) (*Transport, error) {
	switch {
	case cfg.Resolver == nil:
		return nil, errors.New("delivery: Config.Resolver is required")
	case cfg.MXPort < 0 || cfg.MXPort > 65535:
		return nil, fmt.Errorf("delivery: MXPort %d is not a port", cfg.MXPort)
	case cfg.DialTimeout < 0 || cfg.CommandTimeout < 0:
		return nil, errors.New("delivery: DialTimeout and CommandTimeout must not be negative")
	case cfg.MaxConnsPerDest < 0:
		return nil, fmt.Errorf("delivery: MaxConnsPerDest is negative (%d)", cfg.MaxConnsPerDest)
	case cfg.MaxConnsPerRelay < 0:
		return nil, fmt.Errorf("delivery: MaxConnsPerRelay is negative (%d)", cfg.MaxConnsPerRelay)
	case cfg.FailureDelay < 0:
		return nil, fmt.Errorf("delivery: FailureDelay is negative (%s)", cfg.FailureDelay)
	case strings.ContainsAny(cfg.HeloName, " \t\r\n"):
		return nil, fmt.Errorf("delivery: HeloName %q contains white space", cfg.HeloName)
	}
	if cfg.HeloName == "" {
		name, err := os.Hostname()
		cfg.HeloName = cmp.Or(strings.TrimSpace(name), "localhost")
		if err != nil || strings.ContainsAny(cfg.HeloName, " \t\r\n") {
			cfg.HeloName = "localhost"
		}
	}
	cfg.MXPort = cmp.Or(cfg.MXPort, 25)
	cfg.DialTimeout = cmp.Or(cfg.DialTimeout, 30*time.Second)
	cfg.CommandTimeout = cmp.Or(cfg.CommandTimeout, 5*time.Minute)
	cfg.MaxConnsPerDest = cmp.Or(cfg.MaxConnsPerDest, defaultConns)
	cfg.MaxConnsPerRelay = cmp.Or(cfg.MaxConnsPerRelay, cfg.MaxConnsPerDest)
	cfg.IdleTimeout = cmp.Or(cfg.IdleTimeout, defaultIdle)
	cfg.FailureDelay = cmp.Or(cfg.FailureDelay, defaultFailureDelay)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	t := &Transport{
		cfg:      cfg,
		dialer:   net.Dialer{Timeout: cfg.DialTimeout},
		mxDialer: net.Dialer{Timeout: cfg.DialTimeout},
		paths:    make(map[string]*path),
		provs:    make(map[string]*provider),
		closing:  make(chan struct{}),
		pickers:  make(map[string]*picker),
		full:     make(map[string]time.Time),
	}
	if t.cfg.Now == nil {
		t.cfg.Now = time.Now
	}
	if t.cfg.Warmup == nil {
		t.cfg.Warmup = newMemCounter()
	}
	t.tlsa, _ = cfg.Resolver.(TLSAResolver)
	if !cfg.AllowPrivate {
		t.mxDialer.Control = refuseNonPublic
	}
	return t, nil
}

// Send hands msg (the complete message, CRLF line endings; bare LF is
// converted) for env.To to the next hop of r, and returns the final reply.
// Every error is an *Error. Unlike Admit it waits for its turn under the
// egress path's limits (a connection, the message rate), until ctx ends,
// when it returns promptly with a temporary error wrapping ctx.Err().
func (t *Transport) Send(ctx context.Context, r Route, env Envelope, msg []byte) (Result, error) {
	if e := checkMessage(env, msg); e != nil {
		return Result{}, e
	}
	tk, _, e := t.admit(ctx, r, env.To, true)
	if e != nil {
		return Result{}, e
	}
	return t.SendTicket(ctx, tk, env, msg)
}

// SendTicket sends msg for env.To as Send does, on the connection and at
// the time tk was admitted for, and ends tk. env.To must be the recipient
// tk was admitted for (its domain, for direct delivery). An *Error with
// Wait set means the delivery's turn did not come in time: nothing was
// attempted.
func (t *Transport) SendTicket(ctx context.Context, tk *Ticket, env Envelope, msg []byte) (Result, error) {
	if tk == nil || tk.t != t || tk.ended {
		return Result{}, configError("a delivery ticket is used once, with the transport that issued it")
	}
	e := checkMessage(env, msg)
	if e == nil && tk.route.Mode == ModeDirect && !strings.EqualFold(env.To[strings.LastIndexByte(env.To, '@')+1:], tk.domain) {
		e = configError("the delivery ticket was admitted for a recipient at %s", tk.domain)
	}
	if e != nil {
		tk.Release()
		return Result{}, e
	}
	var res Result
	res, e = t.run(ctx, tk, &txn{from: env.From, to: []string{env.To}, msg: msg})
	if e != nil {
		return Result{}, e
	}
	return res, nil
}

// run sends x on tk and ends tk.
func (t *Transport) run(ctx context.Context, tk *Ticket, x *txn) (Result, *Error) {
	tk.ended = true
	res, e := t.deliver(ctx, tk, x)
	if !tk.spent {
		// Nothing went out through the source (its turn did not come, ctx
		// ended while it waited, no MX host could be resolved or was
		// allowed): the warm-up cap counts only deliveries that did.
		t.refundWarmup(tk)
	}
	src, addr := tk.sourceNames()
	for _, r := range x.refused {
		if r != nil {
			r.Source, r.SourceAddress = src, addr
		}
	}
	if e != nil {
		if e.Wait > 0 {
			t.unchooseSource(tk) // not attempted: its pick in the round robin goes back
		}
		e.Source, e.SourceAddress = src, addr
		return Result{}, e
	}
	res.Source, res.SourceAddress = src, addr
	return res, nil
}

// checkMessage refuses what cannot be sent at all.
func checkMessage(env Envelope, msg []byte) *Error {
	if e := checkEnvelope(env); e != nil {
		return e
	}
	if err := message.CheckUnsafeBytes(msg); err != nil {
		// The SMTP writer sends a bare CR as it is, and a next hop that ends
		// DATA on <CR>.<CR><LF> would run what follows from our address.
		// The intake refuses such messages; this holds whatever built one.
		return &Error{Enhanced: "5.6.0", Stage: StageData, Err: err,
			Message: strings.TrimPrefix(err.Error(), "message: ") + " in the message; not sent (SMTP smuggling guard)"}
	}
	return nil
}

// checkEnvelope refuses addresses that cannot be sent in a command.
func checkEnvelope(env Envelope) *Error {
	bad := func(a string) bool { return strings.ContainsAny(a, "\r\n<>") }
	if bad(env.From) {
		return &Error{Enhanced: "5.1.7", Stage: StageMail, Message: fmt.Sprintf("malformed sender %q", env.From)}
	}
	if i := strings.LastIndexByte(env.To, '@'); i <= 0 || i == len(env.To)-1 || bad(env.To) {
		return &Error{Enhanced: "5.1.3", Stage: StageRcpt, Message: fmt.Sprintf("malformed recipient %q", env.To)}
	}
	return nil
}
