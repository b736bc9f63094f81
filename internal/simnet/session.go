package simnet

import (
	"crypto/tls"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/emersion/go-smtp"
	"github.com/postline/postline/internal/smtptest"
)

// session is one SMTP session; go-smtp starts a new one after STARTTLS,
// so what belongs to the connection lives in the trackedConn.
type session struct {
	p     *Provider
	conn  *smtp.Conn
	tc    *trackedConn
	from  string
	rcpts []string
	slot  *slot // the transaction's place in the rate period
}

func (p *Provider) newSession(c *smtp.Conn) (smtp.Session, error) {
	nc := c.Conn()
	if t, ok := nc.(*tls.Conn); ok {
		nc = t.NetConn()
	}
	tc, ok := nc.(*trackedConn)
	if !ok {
		return nil, fmt.Errorf("simnet: connection %T not admitted", nc)
	}
	return &session{p: p, conn: c, tc: tc}, nil
}

// Mail starts a transaction unless an injected reply, the connection's
// message limit or the client's message rate refuses it.
func (s *session) Mail(from string, _ *smtp.MailOptions) error {
	s.Reset()
	if r, ok := s.p.injected(s.tc); ok {
		return s.refuse(r)
	}
	sl, refusal := s.p.startMessage(s.tc, time.Now())
	if refusal != nil {
		return s.refuse(*refusal)
	}
	s.slot, s.from = sl, from
	return nil
}

// Rcpt accepts to unless greylisting defers it.
func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	if r, deferred := s.p.greylisted(s.tc.client, s.from, to, time.Now()); deferred {
		return s.refuse(r)
	}
	s.rcpts = append(s.rcpts, to)
	return nil
}

// Data accepts the message and records it.
func (s *session) Data(r io.Reader) error {
	var data []byte
	var err error
	if s.p.net.cfg.DiscardData {
		_, err = io.Copy(io.Discard, r)
	} else {
		data, err = io.ReadAll(r)
	}
	if err != nil {
		return err // e.g. the connection dropped
	}
	mailAt := time.Now()
	if s.slot != nil {
		mailAt = s.slot.at
	}
	m := Message{
		Provider:   s.p.cfg.Name,
		Client:     s.tc.client,
		Conn:       s.tc.id,
		From:       s.from,
		To:         slices.Clone(s.rcpts),
		Data:       data,
		MailAt:     mailAt,
		ReceivedAt: time.Now(),
		Helo:       s.conn.Hostname(),
	}
	if st, ok := s.conn.TLSConnectionState(); ok {
		m.TLS = &TLSState{Version: st.Version, ServerName: st.ServerName}
	}
	s.p.accept(s.tc, m)
	s.slot = nil // counted for good
	return nil
}

// Reset ends the transaction; one that was not accepted leaves the rate
// period.
func (s *session) Reset() {
	if s.slot != nil {
		s.p.release(s.tc.client, s.slot)
	}
	s.slot, s.from, s.rcpts = nil, "", nil
}

// Logout is called when the connection ends.
func (s *session) Logout() error {
	s.Reset()
	return nil
}

// refuse answers r. A 421 (or a Disconnect reply) is written on the
// connection, which is then closed, as RFC 5321 §3.8 has a server closing
// the channel do; other replies go back through go-smtp.
func (s *session) refuse(r smtptest.Reply) error {
	err := &smtp.SMTPError{Code: r.Code, EnhancedCode: smtp.EnhancedCode(r.Enhanced), Message: r.Message}
	if r.Code != 421 && !r.Disconnect {
		return err
	}
	nc := s.conn.Conn()
	fmt.Fprintf(nc, "%d %s\r\n", r.Code, replyText(r))
	nc.Close()
	return err // written to a closed connection: nobody reads it
}
