package inbound

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/emersion/go-smtp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/postline/postline/internal/connlimit"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/spool"
	"github.com/postline/postline/internal/tracking"
)

// Config configures the Server. Zero values take the defaults.
type Config struct {
	Domain          string // greeting name; default "localhost"
	MaxMessageBytes int64  // SIZE; default 25 MiB
	MaxRecipients   int    // per message; default 50
	// MaxHeaderBytes bounds the header of a message to inbound
	// recipients (552 5.3.4 past it); default 1 MiB. Bounce reports are
	// parsed within MaxMessageBytes as before.
	MaxHeaderBytes int64
	// VERPKey checks bounce addresses (the sending workers' key).
	VERPKey []byte
	// Signer checks mailto: unsubscribe tokens.
	Signer tracking.Signer
	Logger *slog.Logger
	Now    func() time.Time
	// Registerer receives the listener's counters; nil keeps them private.
	Registerer prometheus.Registerer
	// Conns bounds the listener: connections at once, per client address,
	// and silence (Timeouts.First runs from connecting to the first
	// accepted recipient, Idle after it). Zero values take connlimit's
	// SMTP defaults.
	Conns connlimit.Config
	// Spool receives messages within the process's budgets, shared with
	// the other doors; nil: a private one with the default budgets in the
	// system's temporary directory.
	Spool *spool.Spool
	// Receiver takes mail for inbound domains (inbound.go); nil: only
	// bounce and unsubscribe addresses are taken.
	Receiver Receiver
	// Limit takes one message to an inbound domain from the client
	// address from its budget and reports whether it had room (nil: no
	// bound).
	Limit func(ctx context.Context, ip string) bool
	// TLS offers STARTTLS when set (SetTLS sets it later).
	TLS *tls.Config
}

// Server is a running inbound SMTP listener.
type Server struct {
	cfg      Config
	store    tracking.Store
	events   *event.Service
	messages *prometheus.CounterVec
	srv      *smtp.Server
	ln       net.Listener
	done     chan struct{}
	ready    chan struct{} // closed once Listen has run
	once     sync.Once
}

// New returns a Server that records through st; events (may be
// nil) is woken so live log streams see the entries at once.
func New(cfg Config, st tracking.Store, events *event.Service) *Server {
	if cfg.Domain == "" {
		cfg.Domain = "localhost"
	}
	if cfg.MaxMessageBytes <= 0 {
		cfg.MaxMessageBytes = 25 << 20
	}
	if cfg.MaxHeaderBytes <= 0 {
		cfg.MaxHeaderBytes = 1 << 20
	}
	if cfg.MaxRecipients <= 0 {
		cfg.MaxRecipients = 50
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
	s := &Server{cfg: cfg, store: st, events: events, done: make(chan struct{}), ready: make(chan struct{}),
		messages: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "postline_inbound_messages_total",
			Help: "Inbound SMTP outcomes per recipient: refused, message too large, what a bounce report was, received for an inbound domain."},
			[]string{"outcome"})}
	if cfg.Registerer != nil {
		cfg.Registerer.Register(s.messages) //nolint:errcheck // registered once per process
	}
	srv := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		return &session{s: s, c: c, remote: remoteIP(c), conn: connlimit.Of(c.Conn())}, nil
	}))
	srv.Domain = cfg.Domain
	srv.MaxMessageBytes = cfg.MaxMessageBytes
	srv.MaxRecipients = cfg.MaxRecipients
	// Reads are timed by the listener's conns (30 s to the first accepted
	// recipient, then between commands), which go-smtp's one ReadTimeout
	// cannot express.
	srv.WriteTimeout = time.Minute
	srv.EnableSMTPUTF8 = true
	srv.TLSConfig = cfg.TLS
	srv.ErrorLog = log.New(io.Discard, "", 0)
	s.srv = srv
	return s
}

// SetTLS offers STARTTLS with c (nil: none); call it before Listen.
func (s *Server) SetTLS(c *tls.Config) { s.srv.TLSConfig = c }

// Listen starts serving on addr ("host:port").
func (s *Server) Listen(addr string) error {
	defer s.once.Do(func() { close(s.ready) })
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("inbound SMTP: %w", err)
	}
	conns := connlimit.SMTP(s.cfg.Conns, nil)
	conns.Name, conns.Logger = "smtp", s.cfg.Logger
	ln = connlimit.New(ln, conns)
	s.ln = ln
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, smtp.ErrServerClosed) {
			s.cfg.Logger.Error("inbound SMTP stopped", "error", err)
		}
	}()
	s.cfg.Logger.Info("inbound SMTP listening", "addr", ln.Addr().String())
	return nil
}

// Addr is the address the server listens on, once Listen has run (it
// waits for that: serve starts the listener in the background); empty if
// listening failed or has not started within 10 s.
func (s *Server) Addr() string {
	select {
	case <-s.ready:
	case <-time.After(10 * time.Second):
		return ""
	}
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// Shutdown stops accepting and waits (until ctx ends) for sessions to end.
func (s *Server) Shutdown(ctx context.Context) error {
	if s.ln == nil {
		return nil
	}
	err := s.srv.Shutdown(ctx)
	if err != nil {
		s.srv.Close()
	}
	<-s.done
	return err
}

func remoteIP(c *smtp.Conn) string {
	if c == nil || c.Conn() == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(c.Conn().RemoteAddr().String())
	if err != nil {
		return c.Conn().RemoteAddr().String()
	}
	return host
}
