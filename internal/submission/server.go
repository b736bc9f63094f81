// Package submission is Postline's SMTP submission service (RFC 6409 on
// a STARTTLS port, RFC 8314 implicit TLS on another): applications that
// speak SMTP send through the same intake as POST
// /api/domains/{domain}/message. A session authenticates with an
// account's login and API key (AUTH PLAIN or LOGIN, after TLS), may send
// only from the account's verified domains, and gets 250 only once the
// message and its deliveries are committed.
//
// Every listener is bounded (internal/connlimit): connections at once and
// per client address (421 past them), 30 s from connecting to AUTH, then
// 5 minutes between commands, and sessions per account (454 at AUTH past
// it); a message past a mebibyte waits on disk until its final dot
// (internal/spool).
package submission

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/emersion/go-smtp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/connlimit"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/ratelimit"
	"github.com/postline/postline/internal/sending"
	"github.com/postline/postline/internal/spool"
)

// Config configures the Server. Zero values take the defaults.
type Config struct {
	Hostname        string // greeting name; default "localhost"
	MaxMessageBytes int64  // SIZE; default 35 MiB
	MaxRecipients   int    // per message; default 1000
	// AllowInsecureAuth offers AUTH without TLS (loopback tests only; the
	// caller checks the listen address).
	AllowInsecureAuth bool
	// TLS is the servers' certificate configuration (required).
	TLS    *tls.Config
	Logger *slog.Logger
	Now    func() time.Time
	// Registerer receives the counters; nil keeps them private.
	Registerer prometheus.Registerer
	// DomainPerMinute is the account's budget shared with the API's domain
	// endpoints (--rate-domain-per-minute): one message counts as one send.
	DomainPerMinute int
	// Conns bounds each listener: connections at once, per client address,
	// and silence (Timeouts.First runs from connecting to a successful
	// AUTH, Idle after it). Zero values take connlimit's SMTP defaults.
	Conns connlimit.Config
	// SessionsPerAccount bounds the authenticated sessions one account
	// holds at once; default 20.
	SessionsPerAccount int
	// Spool receives messages within the process's budgets, shared with
	// the other doors; nil: a private one with the default budgets in the
	// system's temporary directory.
	Spool *spool.Spool
}

// Authenticator checks a login and API key (account.Service).
type Authenticator interface {
	Authenticate(ctx context.Context, login, key string) (account.Principal, error)
}

// Domains lists an account's domains (domain.Service).
type Domains interface {
	List(ctx context.Context, accountID int64) ([]domain.Domain, error)
}

// Intake prepares and queues a submitted message (sending.Service).
type Intake interface {
	PrepareRaw(ctx context.Context, in sending.RawInput) (sending.RawPrepared, error)
	AcceptRaw(ctx context.Context, d domain.Domain, accountID int64, m sending.RawMessage) (sending.Accepted, error)
	Accept(ctx context.Context, d domain.Domain, accountID int64, r sending.Request) (sending.Accepted, error)
}

// Deps are the services a session uses.
type Deps struct {
	Accounts Authenticator
	Domains  Domains
	Intake   Intake
	Attempts *ratelimit.Attempts // failed AUTH per login and per address
	Limiter  *ratelimit.Limiter  // the account's domain budget; nil: none
}

// Server runs the submission listeners.
type Server struct {
	cfg      Config
	deps     Deps
	sessions *prometheus.CounterVec
	messages *prometheus.CounterVec

	mu       sync.Mutex
	servers  []*smtp.Server
	addrs    map[bool]string // implicit TLS → listen address
	stopping bool
	held     map[int64]int // account → authenticated sessions open
}

// New returns a Server; Listen starts listeners.
func New(cfg Config, deps Deps) *Server {
	if cfg.Hostname == "" {
		cfg.Hostname = "localhost"
	}
	if cfg.MaxMessageBytes <= 0 {
		cfg.MaxMessageBytes = 35 << 20
	}
	if cfg.MaxRecipients <= 0 {
		cfg.MaxRecipients = 1000
	}
	if cfg.SessionsPerAccount <= 0 {
		cfg.SessionsPerAccount = 20
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Spool == nil {
		cfg.Spool = spool.New(spool.Config{})
	}
	s := &Server{cfg: cfg, deps: deps, addrs: map[bool]string{}, held: map[int64]int{},
		sessions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "postline_submission_sessions_total",
			Help: "SMTP submission sessions by outcome: authenticated, auth_failed, auth_blocked, session_limit, unauthenticated."}, []string{"outcome"}),
		messages: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "postline_submission_messages_total",
			Help: "Messages submitted over SMTP by outcome: accepted, refused (sender or content), rate_limited, temporary_failure, spool_full, spool_busy."}, []string{"outcome"}),
	}
	for _, o := range []string{"authenticated", "auth_failed", "auth_blocked", "session_limit", "unauthenticated"} {
		s.sessions.WithLabelValues(o)
	}
	for _, o := range []string{"accepted", "refused", "rate_limited", "temporary_failure", "spool_full", "spool_busy"} {
		s.messages.WithLabelValues(o)
	}
	if cfg.Registerer != nil {
		cfg.Registerer.Register(s.sessions) //nolint:errcheck // once per process
		cfg.Registerer.Register(s.messages) //nolint:errcheck
	}
	return s
}

// Listen starts a listener on addr: STARTTLS submission (port 587's
// kind) or, with implicitTLS, TLS from the first byte (port 465's).
func (s *Server) Listen(addr string, implicitTLS bool) error {
	if s.cfg.TLS == nil {
		return errors.New("submission: a TLS certificate is required")
	}
	srv := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		s.mu.Lock()
		stopping := s.stopping
		s.mu.Unlock()
		if stopping {
			return nil, errShuttingDown
		}
		_, isTLS := c.TLSConnectionState()
		return &session{s: s, remote: remoteIP(c.Conn()), tls: isTLS || implicitTLS, conn: connlimit.Of(c.Conn())}, nil
	}))
	srv.Domain = s.cfg.Hostname
	srv.MaxMessageBytes = s.cfg.MaxMessageBytes
	srv.MaxRecipients = s.cfg.MaxRecipients
	// Reads are timed by the listener's conns (30 s to AUTH, then between
	// commands), which go-smtp's one ReadTimeout cannot express.
	srv.WriteTimeout = time.Minute
	srv.AllowInsecureAuth = s.cfg.AllowInsecureAuth
	srv.EnableSMTPUTF8 = true
	srv.ErrorLog = log.New(io.Discard, "", 0)
	ln, err := s.listen(addr, implicitTLS)
	if err != nil {
		return err
	}
	if implicitTLS {
		ln = tls.NewListener(ln, s.cfg.TLS)
	} else {
		srv.TLSConfig = s.cfg.TLS
	}
	s.mu.Lock()
	s.servers = append(s.servers, srv)
	s.addrs[implicitTLS] = ln.Addr().String()
	s.mu.Unlock()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, smtp.ErrServerClosed) {
			s.cfg.Logger.Error("submission listener stopped", "error", err)
		}
	}()
	kind := "STARTTLS"
	if implicitTLS {
		kind = "implicit TLS"
	}
	s.cfg.Logger.Info("SMTP submission listening", "addr", ln.Addr().String(), "tls", kind)
	return nil
}

// Addr is the address of the STARTTLS (false) or implicit TLS (true)
// listener; empty when there is none.
func (s *Server) Addr(implicitTLS bool) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addrs[implicitTLS]
}

// Shutdown stops accepting (new sessions are told 421) and waits for the
// sessions under way until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.stopping = true
	servers := s.servers
	s.mu.Unlock()
	var errs []error
	for _, srv := range servers {
		errs = append(errs, srv.Shutdown(ctx))
	}
	return errors.Join(errs...)
}

func remoteIP(c net.Conn) string {
	if c == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(c.RemoteAddr().String())
	if err != nil {
		return c.RemoteAddr().String()
	}
	return host
}
