package smtptest

import (
	"crypto/subtle"
	"io"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// session is one SMTP session (go-smtp starts a new one after STARTTLS).
type session struct {
	sink     *Sink
	conn     *smtp.Conn
	authUser string

	from     string
	mailOpts smtp.MailOptions
	rcpts    []string
	rcptOpts []smtp.RcptOptions

	connectedAt time.Time
}

var _ smtp.AuthSession = (*session)(nil)

func (s *Sink) newSession(c *smtp.Conn) (smtp.Session, error) {
	return &session{sink: s, conn: c, connectedAt: time.Now()}, nil
}

// AuthMechanisms offers PLAIN and LOGIN when credentials are configured,
// and nothing (no AUTH capability) otherwise.
func (ss *session) AuthMechanisms() []string {
	if ss.sink.cfg.Auth == nil {
		return nil
	}
	return []string{sasl.Plain, sasl.Login}
}

// Auth returns the SASL server for mech.
func (ss *session) Auth(mech string) (sasl.Server, error) {
	if ss.sink.cfg.Auth == nil {
		return nil, smtp.ErrAuthUnsupported
	}
	switch mech {
	case sasl.Plain:
		return sasl.NewPlainServer(func(identity, user, pass string) error {
			if identity != "" && identity != user {
				return smtp.ErrAuthFailed
			}
			return ss.login(user, pass)
		}), nil
	case sasl.Login:
		return &loginServer{check: ss.login}, nil
	}
	return nil, smtp.ErrAuthUnknownMechanism
}

// login checks credentials and, if they match, marks the session
// authenticated.
func (ss *session) login(user, pass string) error {
	want := ss.sink.cfg.Auth
	userOK := subtle.ConstantTimeCompare([]byte(user), []byte(want.User)) == 1
	passOK := subtle.ConstantTimeCompare([]byte(pass), []byte(want.Password)) == 1
	if !userOK || !passOK {
		return smtp.ErrAuthFailed
	}
	ss.authUser = user
	return nil
}

func (ss *session) Mail(from string, opts *smtp.MailOptions) error {
	if ss.sink.cfg.Auth != nil && ss.authUser == "" {
		return smtp.ErrAuthRequired
	}
	ss.Reset()
	ss.from = from
	if opts != nil {
		ss.mailOpts = *opts
	}
	return nil
}

func (ss *session) Rcpt(to string, opts *smtp.RcptOptions) error {
	if r, ok := ss.sink.next(ss.sink.rcptScripts, to); ok {
		if err := apply(ss.conn, r); err != nil {
			return err
		}
	} else if ss.sink.unknown(to) {
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such user here"}
	}
	ss.rcpts = append(ss.rcpts, to)
	var o smtp.RcptOptions
	if opts != nil {
		o = *opts
	}
	ss.rcptOpts = append(ss.rcptOpts, o)
	return nil
}

func (ss *session) Data(r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err // e.g. smtp.ErrDataTooLarge
	}
	time.Sleep(ss.sink.cfg.DataDelay)
	if reply, ok := ss.sink.next(ss.sink.dataScripts, ss.rcpts...); ok {
		if err := apply(ss.conn, reply); err != nil {
			return err
		}
	}
	_, isTLS := ss.conn.TLSConnectionState()
	ss.sink.deliver(Message{
		From:        ss.from,
		To:          append([]string(nil), ss.rcpts...),
		Data:        data,
		ReceivedAt:  time.Now(),
		ConnectedAt: ss.connectedAt,
		Helo:        ss.conn.Hostname(),
		RemoteAddr:  ss.conn.Conn().RemoteAddr().String(),
		AuthUser:    ss.authUser,
		TLS:         isTLS,
		MailOpts:    ss.mailOpts,
		RcptOpts:    append([]smtp.RcptOptions(nil), ss.rcptOpts...),
	})
	return nil
}

// Reset forgets the current transaction (RSET, new EHLO, after DATA).
func (ss *session) Reset() {
	ss.from = ""
	ss.mailOpts = smtp.MailOptions{}
	ss.rcpts = nil
	ss.rcptOpts = nil
}

// Logout is called when the connection ends; there is nothing to free.
func (ss *session) Logout() error { return nil }

// loginServer is the server side of the LOGIN mechanism
// (draft-murchison-sasl-login), which go-sasl implements only as a client.
// It accepts the user name as an initial response (as go-sasl's client
// sends it) or after a "Username:" challenge.
type loginServer struct {
	check func(user, pass string) error
	user  string
	step  int
}

func (l *loginServer) Next(response []byte) (challenge []byte, done bool, err error) {
	switch l.step {
	case 0:
		l.step = 1
		if response == nil {
			return []byte("Username:"), false, nil
		}
		fallthrough
	case 1:
		l.user = string(response)
		l.step = 2
		return []byte("Password:"), false, nil
	default:
		return nil, true, l.check(l.user, string(response))
	}
}
