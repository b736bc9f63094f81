package delivery

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/textproto"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// quitTimeout bounds the QUIT sent to a connection being closed politely.
const quitTimeout = 5 * time.Second

// target is one next hop: a relay, or one MX host.
type target struct {
	host  string // the name (or IP) dialled: TLS ServerName, Result.Host
	port  int
	addrs []netip.Addr // set when host is an IP literal, else resolved
	mx    bool         // direct delivery: TLS as plan says
	plan  tlsPlan      // when mx
	relay Route        // relay settings when !mx
	local netip.Addr   // the egress source's address to bind; zero: the system's choice
	helo  string       // the EHLO name; "" for Config.HeloName
	// dialled, when set, is set once a connection is dialled from the
	// source: the delivery has then gone out through it, and its warm-up
	// count is spent (Ticket.spent).
	dialled *bool
}

// heloName is the EHLO name to give tg.
func (t *Transport) heloName(tg target) string {
	if tg.helo != "" {
		return tg.helo
	}
	return t.cfg.HeloName
}

// session is one open SMTP connection, ready for a transaction.
type session struct {
	c       *smtp.Client
	conn    *deadlineConn
	host    string
	tls     TLSOutcome
	planKey string      // the tlsPlan's key it was opened under (MX hosts)
	timer   *time.Timer // idle expiry; guarded by Transport.mu
	provs   []*provider // the providers whose limits it counts against
	count   int         // messages it has carried

	idleSince time.Time // when it last went idle; guarded by Transport.mu
}

// abort closes the connection at once (without a TLS close_notify, which
// could wait on a stuck peer).
func (s *session) abort() {
	s.conn.abort()
	s.conn.Close()
}

// quit says QUIT (briefly) and closes the connection.
func (s *session) quit() {
	s.c.CommandTimeout = min(s.c.CommandTimeout, quitTimeout)
	if s.c.Quit() != nil {
		s.c.Close()
	}
}

// connect opens a session to one of tg's addresses (at most maxAddrs of
// them), trying the next on a temporary failure. For an MX in
// TLSOpportunisticInsecure mode, a failed STARTTLS is retried in plain
// text on the same address.
func (t *Transport) connect(ctx context.Context, tg target) (*session, *Error) {
	addrs := tg.addrs
	if addrs == nil {
		var err error
		if addrs, err = t.cfg.Resolver.LookupIP(ctx, tg.host); err != nil {
			e := dnsError(err, tg.host)
			if !tg.mx && !e.Temporary {
				// A relay name that does not resolve is our configuration
				// (or its DNS) failing, not the recipient: keep the mail.
				e.Enhanced, e.Temporary = "4.4.4", true
			}
			return nil, e
		}
	}
	if tg.mx && !t.cfg.AllowPrivate {
		var refused []netip.Addr
		if addrs, refused = publicOnly(addrs); len(addrs) == 0 {
			return nil, nonPublicError(tg.host, refused)
		}
	}
	if tg.local.IsValid() {
		// A source address reaches only addresses of its own family.
		addrs = slices.DeleteFunc(slices.Clone(addrs), func(a netip.Addr) bool { return a.Is4() != tg.local.Is4() })
		if len(addrs) == 0 {
			return nil, &Error{Enhanced: "4.4.4", Temporary: true, Stage: StageConnect, Host: tg.host,
				Message: fmt.Sprintf("%s has no address of the egress source's family", tg.host)}
		}
	}
	var last *Error
	for _, a := range addrs[:min(len(addrs), maxAddrs)] {
		s, e := t.dial(ctx, tg, a, tg.mx)
		if e != nil && tg.mx && e.Stage == StageTLS && tg.plan.plainFallback() && ctx.Err() == nil {
			s, e = t.dial(ctx, tg, a, false)
		}
		if e == nil {
			return s, nil
		}
		last = e
		if !e.Temporary || ctx.Err() != nil {
			break
		}
	}
	return nil, last
}

// dial connects to addr and runs the greeting, EHLO, TLS and AUTH steps.
func (t *Transport) dial(ctx context.Context, tg target, addr netip.Addr, tryTLS bool) (*session, *Error) {
	d := &t.dialer
	if tg.mx {
		d = &t.mxDialer
	}
	if tg.local.IsValid() {
		bound := *d
		bound.LocalAddr = net.TCPAddrFromAddrPort(netip.AddrPortFrom(tg.local, 0))
		d = &bound
	}
	nc, err := d.DialContext(ctx, "tcp", netip.AddrPortFrom(addr, uint16(tg.port)).String())
	if errors.Is(err, errNonPublic) {
		return nil, nonPublicError(tg.host, []netip.Addr{addr}) // refused before any packet left
	}
	if tg.dialled != nil {
		*tg.dialled = true // a connection attempt from the source, answered or not
	}
	if err != nil {
		return nil, t.fail(ctx, err, StageConnect, tg.host)
	}
	dc := &deadlineConn{Conn: nc, timeout: t.cfg.CommandTimeout}
	stop := context.AfterFunc(ctx, dc.abort)
	s, stage, err := t.handshake(ctx, dc, tg, tryTLS)
	if !stop() && err == nil {
		err, stage = ctx.Err(), StageConnect
	}
	if err != nil {
		dc.Close()
		return nil, t.fail(ctx, err, stage, tg.host)
	}
	return s, nil
}

// handshake takes a new connection from the greeting to ready for MAIL,
// returning the stage that failed.
func (t *Transport) handshake(ctx context.Context, dc *deadlineConn, tg target, tryTLS bool) (*session, string, error) {
	s := &session{conn: dc, host: tg.host, tls: TLSOutcome{Policy: PolicyNone}}
	var nc net.Conn = dc
	if !tg.mx && tg.relay.TLS == TLSImplicit {
		tc := tls.Client(dc, t.relayTLS(tg.host))
		if err := tc.HandshakeContext(ctx); err != nil {
			return nil, StageTLS, err
		}
		nc, s.tls = tc, t.relayOutcome(tc.ConnectionState().Version)
	}
	s.c = t.newClient(nc)
	if err := s.c.Hello(t.heloName(tg)); err != nil {
		return nil, StageConnect, err
	}
	if tg.mx {
		if err := t.mxTLS(ctx, dc, s, tg, tryTLS); err != nil {
			return nil, StageTLS, err
		}
		return s, "", nil
	}
	wantTLS := s.tls.Version == "" && tg.relay.TLS != TLSNone
	if ok, _ := s.c.Extension("STARTTLS"); wantTLS && ok {
		var version uint16
		cfg := t.relayTLS(tg.host)
		cfg.VerifyConnection = func(cs tls.ConnectionState) error { version = cs.Version; return nil }
		c, err := t.startTLS(ctx, dc, cfg, t.heloName(tg))
		if err != nil {
			return nil, StageTLS, err
		}
		s.c, s.tls = c, t.relayOutcome(version)
	} else if wantTLS {
		return nil, StageTLS, &Error{Enhanced: "4.7.10", Temporary: true, Stage: StageTLS, Host: tg.host,
			Message: "relay does not offer STARTTLS; refusing to send in clear text"}
	}
	if tg.relay.User != "" {
		if err := t.auth(s.c, tg); err != nil {
			return nil, StageAuth, err
		}
	}
	return s, "", nil
}

// relayOutcome is the TLS outcome of a relay session: verified unless
// the operator turned verification off.
func (t *Transport) relayOutcome(version uint16) TLSOutcome {
	return TLSOutcome{Version: versionName(version), Verified: !t.cfg.InsecureSkipRelayVerify, Policy: PolicyNone}
}

// mxTLS runs STARTTLS with an MX host as tg.plan says (see doc.go: TLS
// policy); tryTLS false is the plain-text retry after a failed handshake.
func (t *Transport) mxTLS(ctx context.Context, dc *deadlineConn, s *session, tg target, tryTLS bool) error {
	p := tg.plan
	s.tls.Policy, s.planKey = p.policy, p.key()
	offered, _ := s.c.Extension("STARTTLS")
	switch {
	case !tryTLS || p.mode == TLSDisabled:
		return nil
	case !offered && p.requiresTLS():
		return p.refuse(tg.host, "4.7.10", tg.host+" does not offer STARTTLS", nil)
	case !offered:
		if p.testing {
			s.tls.Report = tg.host + " does not offer STARTTLS"
		}
		return nil
	}
	check := &tlsCheck{plan: p, host: tg.host, roots: t.cfg.RootCAs}
	c, err := t.startTLS(ctx, dc, check.config(), t.heloName(tg))
	if err != nil {
		return err
	}
	s.c, s.tls = c, check.outcome()
	s.tls.Report = check.report
	return nil
}

// newClient wraps nc in a go-smtp client bounded by CommandTimeout.
func (t *Transport) newClient(nc net.Conn) *smtp.Client {
	c := smtp.NewClient(&replyLimitConn{Conn: nc})
	c.CommandTimeout = t.cfg.CommandTimeout
	c.SubmissionTimeout = t.cfg.CommandTimeout
	return c
}

// startTLS sends STARTTLS on dc (whose EHLO exchange is complete, so
// nothing is buffered), upgrades it and returns a client on the TLS
// connection that has said EHLO again (RFC 3207 §4.2).
func (t *Transport) startTLS(ctx context.Context, dc *deadlineConn, cfg *tls.Config, helo string) (*smtp.Client, error) {
	// One deadline for the STARTTLS reply and the handshake together: the
	// per-read deadline alone would let a server trickle them out forever.
	// The new client's EHLO sets and clears its own.
	dc.SetDeadline(time.Now().Add(t.cfg.CommandTimeout))
	return upgrade(ctx, dc, cfg, t.newClient, helo)
}

// StartTLS upgrades conn, on which a client said EHLO and read the reply,
// and returns a new client on the TLS connection that has said EHLO helo
// again: go-smtp can start TLS only while making a client. The validator's
// mailbox probe uses it as delivery does.
func StartTLS(ctx context.Context, conn net.Conn, cfg *tls.Config, helo string) (*smtp.Client, error) {
	return upgrade(ctx, conn, cfg, func(c net.Conn) *smtp.Client { return smtp.NewClient(LimitReplies(c)) }, helo)
}

func upgrade(ctx context.Context, conn net.Conn, cfg *tls.Config, newClient func(net.Conn) *smtp.Client, helo string) (*smtp.Client, error) {
	if _, err := io.WriteString(conn, "STARTTLS\r\n"); err != nil {
		return nil, err
	}
	// One byte at a time, so nothing past the reply (the server's TLS
	// records, once the handshake starts) is ever read into a buffer.
	r := textproto.NewReader(bufio.NewReaderSize(oneByteReader{&replyLimitConn{Conn: conn}}, 16))
	if _, _, err := r.ReadResponse(220); err != nil {
		var pe *textproto.Error
		if errors.As(err, &pe) {
			return nil, smtpError(pe)
		}
		return nil, err
	}
	tc := tls.Client(conn, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, err
	}
	c := newClient(newGreetedConn(tc))
	return c, c.Hello(helo)
}

// oneByteReader reads at most one byte per call.
type oneByteReader struct{ r io.Reader }

func (o oneByteReader) Read(p []byte) (int, error) { return o.r.Read(p[:min(len(p), 1)]) }

// smtpError converts a reply read outside go-smtp the way go-smtp does.
func smtpError(pe *textproto.Error) *smtp.SMTPError {
	se := &smtp.SMTPError{Code: pe.Code, Message: pe.Msg}
	code, msg, ok := strings.Cut(pe.Msg, " ")
	parts := strings.Split(code, ".")
	if !ok || len(parts) != 3 {
		return se
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil {
			return se
		}
		se.EnhancedCode[i] = n
	}
	se.Message = msg
	return se
}

// auth authenticates with PLAIN, or LOGIN when only that is offered.
func (t *Transport) auth(c *smtp.Client, tg target) error {
	u, p := tg.relay.User, tg.relay.Password
	switch {
	case c.SupportsAuth(sasl.Plain):
		return c.Auth(sasl.NewPlainClient("", u, p))
	case c.SupportsAuth(sasl.Login):
		return c.Auth(sasl.NewLoginClient(u, p))
	}
	_, mechs := c.Extension("AUTH")
	return &Error{Enhanced: "4.7.0", Temporary: true, Stage: StageAuth, Host: tg.host,
		Message: "relay offers neither AUTH PLAIN nor LOGIN (offered: " + strings.TrimSpace(mechs) + ")"}
}

// relayTLS is the TLS configuration for relay host.
func (t *Transport) relayTLS(host string) *tls.Config {
	cfg := &tls.Config{}
	if t.cfg.TLSConfig != nil {
		cfg = t.cfg.TLSConfig.Clone()
	}
	if cfg.ServerName == "" {
		cfg.ServerName = host
	}
	if t.cfg.InsecureSkipRelayVerify {
		cfg.InsecureSkipVerify = true
	}
	return cfg
}

// fail classifies err at stage, as a cancellation if ctx has ended (the
// I/O error is then only the symptom of the abort).
func (t *Transport) fail(ctx context.Context, err error, stage, host string) *Error {
	var se *smtp.SMTPError
	if ctx.Err() != nil && !errors.As(err, &se) && !errors.Is(err, ctx.Err()) {
		err = &ctxError{ctx: ctx.Err(), io: err}
	}
	return classify(err, stage, host)
}

// ctxError is an I/O error caused by the end of the Send's context.
type ctxError struct{ ctx, io error }

func (e *ctxError) Error() string   { return e.ctx.Error() + " (" + e.io.Error() + ")" }
func (e *ctxError) Unwrap() []error { return []error{e.ctx, e.io} }
