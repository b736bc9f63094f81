// Package smtptest runs a real SMTP server (emersion/go-smtp) that records
// what it receives and replies as scripted, for testing code that relays or
// delivers mail, and for `postline dev smtp-sink`.
//
// By default the sink accepts every sender, recipient and message. Replies
// can be scripted per recipient: each attempt to that recipient (a RCPT TO,
// or the end of a DATA carrying it) takes the next reply from its queue, and
// once the queue is empty the sink accepts again. That is enough to act out
// "450 then accept", "550", "421 and hang up" or "accept RCPT, reject DATA".
//
// With Config.Auth set, MAIL FROM is refused (502 5.7.0) until the client
// has authenticated with PLAIN or LOGIN; AUTH is allowed without TLS because
// the sink only listens where tests put it. With Config.TLS set, STARTTLS is
// offered.
package smtptest

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
)

// Credentials are the only user name and password the sink accepts.
type Credentials struct {
	User, Password string
}

// Config configures a Sink. The zero value accepts everything without AUTH
// or TLS.
type Config struct {
	// Auth, when set, makes authentication mandatory before MAIL FROM.
	Auth *Credentials
	// TLS, when set, is used to offer STARTTLS.
	TLS *tls.Config
	// MaxMessageBytes, when positive, is advertised with SIZE and larger
	// messages are refused with 552 5.3.4.
	MaxMessageBytes int64
	// Domain is the name in the greeting. Default "smtptest.localhost".
	Domain string
	// ErrorLog receives go-smtp's connection errors. Default: discarded.
	ErrorLog *log.Logger
	// DataDelay, when positive, is how long the sink takes over each
	// message before it replies to the end of DATA, as a busy server
	// does: it keeps a client's connections busy, for tests of their
	// limits.
	DataDelay time.Duration
	// OnlyDomains, when set, makes RCPT TO an address at one of these
	// domains that no Script names answer 550 5.1.1 (a server that is not
	// a catch-all there); other recipients are accepted as usual.
	OnlyDomains []string
	// NoSMTPUTF8 leaves SMTPUTF8 (RFC 6531) out of the EHLO reply, as
	// an older server does.
	NoSMTPUTF8 bool
}

// Message is one accepted message as received.
type Message struct {
	From        string
	To          []string // accepted recipients, in RCPT order
	Data        []byte   // as sent, dot-unstuffed, CRLF line endings
	ReceivedAt  time.Time
	ConnectedAt time.Time // when its connection's session began
	Helo        string    // the EHLO/HELO name
	RemoteAddr  string    // the client's address and port, as the server saw them
	AuthUser    string    // "" when the client did not authenticate
	TLS         bool      // whether STARTTLS was in effect
	MailOpts    smtp.MailOptions
	RcptOpts    []smtp.RcptOptions // parallel to To
}

// Sink is a running SMTP server. Its methods are safe for concurrent use.
type Sink struct {
	cfg      Config
	srv      *smtp.Server
	ln       net.Listener
	served   chan struct{} // closed when Serve returns
	sessions atomic.Int64
	conns    connCount

	mu          sync.Mutex
	msgs        []Message
	arrived     chan struct{} // closed and replaced on every new message
	rcptScripts map[string][]Reply
	dataScripts map[string][]Reply
	known       map[string]bool // mailboxes at Config.OnlyDomains
	closeOnce   sync.Once
	closeErr    error
}

// New starts a Sink on 127.0.0.1 with a random port and closes it when the
// test ends. It fails the test if the sink cannot start.
func New(t testing.TB, cfg Config) *Sink {
	t.Helper()
	s, err := Start("127.0.0.1:0", cfg)
	if err != nil {
		t.Fatalf("smtptest: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Start starts a Sink listening on addr ("host:port"). Call Close to stop
// it.
func Start(addr string, cfg Config) (*Sink, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("smtptest: %w", err)
	}
	s := &Sink{
		cfg:         cfg,
		served:      make(chan struct{}),
		arrived:     make(chan struct{}),
		rcptScripts: make(map[string][]Reply),
		dataScripts: make(map[string][]Reply),
	}
	s.ln = &countingListener{Listener: ln, n: &s.sessions, open: &s.conns}

	srv := smtp.NewServer(smtp.BackendFunc(s.newSession))
	srv.Domain = cfg.Domain
	if srv.Domain == "" {
		srv.Domain = "smtptest.localhost"
	}
	srv.TLSConfig = cfg.TLS
	srv.MaxMessageBytes = cfg.MaxMessageBytes
	srv.AllowInsecureAuth = true
	srv.EnableSMTPUTF8 = !cfg.NoSMTPUTF8
	srv.EnableDSN = true
	srv.ReadTimeout = time.Minute
	srv.WriteTimeout = time.Minute
	srv.ErrorLog = log.New(io.Discard, "", 0)
	if cfg.ErrorLog != nil {
		srv.ErrorLog = cfg.ErrorLog
	}
	s.srv = srv
	go func() {
		defer close(s.served)
		srv.Serve(s.ln)
	}()
	return s, nil
}

// Addr returns the "host:port" the sink listens on.
func (s *Sink) Addr() string { return s.ln.Addr().String() }

// Port returns the TCP port the sink listens on.
func (s *Sink) Port() int { return s.ln.Addr().(*net.TCPAddr).Port }

// Close stops listening, drops open connections and waits for the server
// to stop. It is safe to call more than once.
func (s *Sink) Close() error {
	s.closeOnce.Do(func() {
		// go-smtp's Close only closes listeners Serve has registered; if
		// Serve has not started yet, closing the listener ourselves is what
		// makes it return.
		s.closeErr = s.srv.Close()
		s.ln.Close()
		<-s.served
	})
	return s.closeErr
}

// Sessions returns the number of connections accepted so far.
func (s *Sink) Sessions() int { return int(s.sessions.Load()) }

// Open returns the number of connections open now, and MaxOpen the most
// that were ever open at once. A connection stops counting when the client
// sends QUIT (in plain text; through TLS, when it closes) or closes it: a
// client that counts its connections until QUIT's reply, as RFC 5321's
// polite close lets it, may dial the next one before this server has
// closed the old socket, and must not look like one connection too many.
func (s *Sink) Open() int { return s.conns.now() }

// MaxOpen returns the most connections that were open at once (see Open).
func (s *Sink) MaxOpen() int { return s.conns.peak() }

// Messages returns a copy of the messages accepted so far, oldest first.
func (s *Sink) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.copyMessages()
}

// WaitForMessages waits until at least n messages have been accepted and
// returns them all. If ctx ends first it returns those accepted so far and
// ctx's error.
func (s *Sink) WaitForMessages(ctx context.Context, n int) ([]Message, error) {
	for {
		s.mu.Lock()
		if len(s.msgs) >= n {
			msgs := s.copyMessages()
			s.mu.Unlock()
			return msgs, nil
		}
		arrived := s.arrived
		s.mu.Unlock()
		select {
		case <-arrived:
		case <-ctx.Done():
			msgs := s.Messages()
			return msgs, fmt.Errorf("smtptest: %d of %d messages: %w", len(msgs), n, ctx.Err())
		}
	}
}

// copyMessages deep-copies s.msgs; s.mu must be held.
func (s *Sink) copyMessages() []Message {
	out := make([]Message, len(s.msgs))
	for i, m := range s.msgs {
		m.To = slices.Clone(m.To)
		m.Data = slices.Clone(m.Data)
		m.RcptOpts = slices.Clone(m.RcptOpts)
		out[i] = m
	}
	return out
}

// deliver records an accepted message and wakes WaitForMessages.
func (s *Sink) deliver(m Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.msgs = append(s.msgs, m)
	close(s.arrived)
	s.arrived = make(chan struct{})
}

// countingListener counts accepted connections for Sessions, and open
// ones for Open and MaxOpen.
type countingListener struct {
	net.Listener
	n    *atomic.Int64
	open *connCount
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return c, err
	}
	l.n.Add(1)
	l.open.add(1)
	return &countedConn{Conn: c, open: l.open}, nil
}

// connCount is the number of open connections and its peak.
type connCount struct {
	mu        sync.Mutex
	cur, high int
}

func (c *connCount) add(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cur += n
	c.high = max(c.high, c.cur)
}

func (c *connCount) now() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cur
}

func (c *connCount) peak() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.high
}

// countedConn leaves the open count once, at QUIT or close.
type countedConn struct {
	net.Conn
	open *connCount
	done atomic.Bool
}

func (c *countedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	// A client sends QUIT in one write, with nothing after it.
	if n == 6 && strings.EqualFold(string(p[:n]), "QUIT\r\n") {
		c.leave()
	}
	return n, err
}

func (c *countedConn) Close() error {
	c.leave()
	return c.Conn.Close()
}

func (c *countedConn) leave() {
	if c.done.CompareAndSwap(false, true) {
		c.open.add(-1)
	}
}

// key is the map key for a recipient: addresses compare case-insensitively.
func key(addr string) string { return strings.ToLower(addr) }

// Silent listens on addr ("127.0.0.3:2525") and accepts connections
// without ever sending a greeting: a server that hangs, for the time
// budgets of clients. It stops when the test ends. It returns the address
// it listens on (for a port 0 in addr).
func Silent(t testing.TB, addr string) *net.TCPAddr {
	t.Helper()
	a, _ := SilentCounting(t, addr)
	return a
}

// SilentCounting is Silent that also reports how many connections it has
// accepted: how a test knows its clients' attempts have begun.
func SilentCounting(t testing.TB, addr string) (*net.TCPAddr, func() int) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("smtptest: %v", err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	return ln.Addr().(*net.TCPAddr), func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(conns)
	}
}

// MostWithin is the most of msgs received within any window of d: what a
// receiver's limit of messages per d would have counted.
func MostWithin(msgs []Message, d time.Duration) int {
	times := make([]time.Time, len(msgs))
	for i, m := range msgs {
		times[i] = m.ReceivedAt
	}
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	most := 0
	for i, t0 := range times {
		n := 0
		for _, t1 := range times[i:] {
			if t1.Sub(t0) >= d {
				break
			}
			n++
		}
		most = max(most, n)
	}
	return most
}
