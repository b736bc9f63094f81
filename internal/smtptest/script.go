package smtptest

import (
	"crypto/tls"
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/emersion/go-smtp"
)

// Reply is one scripted server reply.
type Reply struct {
	// Code is the SMTP reply code. 4xx and 5xx refuse; anything below 400
	// (including 0) accepts with go-smtp's usual 250 reply, whose text
	// cannot be changed, so Message is then unused.
	Code int
	// Enhanced is the RFC 3463 status code; zero means class.0.0.
	Enhanced [3]int
	// Message is the reply text; empty means "scripted reply".
	Message string
	// Disconnect closes the connection at this point instead of replying
	// normally. If Code is set, that reply line is written first (as a
	// server shutting down sends 421) and the connection closed; otherwise
	// it is reset (TCP RST) with no reply.
	Disconnect bool
}

// Script queues replies for RCPT TO:<rcpt> (matched case-insensitively).
// Each RCPT for that address takes the next one; when none are left, RCPT
// is accepted.
func (s *Sink) Script(rcpt string, replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rcptScripts[key(rcpt)] = append(s.rcptScripts[key(rcpt)], replies...)
}

// ScriptData queues replies for the end of DATA of messages addressed to
// rcpt (among the recipients accepted in that transaction). The first such
// recipient, in RCPT order, with a queued reply decides the reply, and only
// its queue advances. When none is queued, the message is accepted.
func (s *Sink) ScriptData(rcpt string, replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dataScripts[key(rcpt)] = append(s.dataScripts[key(rcpt)], replies...)
}

// next pops the first queued reply among addrs from scripts.
func (s *Sink) next(scripts map[string][]Reply, addrs ...string) (Reply, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range addrs {
		if q := scripts[key(a)]; len(q) > 0 {
			scripts[key(a)] = q[1:]
			return q[0], true
		}
	}
	return Reply{}, false
}

// apply carries out r on conn: nil to accept, an *smtp.SMTPError to refuse,
// or, for Disconnect, hangs up and returns an error nobody will read.
func apply(conn *smtp.Conn, r Reply) error {
	msg := r.Message
	if msg == "" {
		msg = "scripted reply"
	}
	if r.Disconnect {
		nc := conn.Conn()
		if r.Code != 0 {
			fmt.Fprintf(nc, "%d %s\r\n", r.Code, enhanced(r, msg))
		}
		if tc, ok := nc.(*tls.Conn); ok {
			nc = tc.NetConn() // no close_notify: hang up abruptly
		}
		if tcp, ok := nc.(*net.TCPConn); ok && r.Code == 0 {
			// RST rather than FIN, like a crashed server. Not after a
			// reply line, which a reset could discard unread.
			tcp.SetLinger(0)
		}
		nc.Close()
		return &smtp.SMTPError{Code: 421, EnhancedCode: smtp.EnhancedCode{4, 4, 2}, Message: "disconnected"}
	}
	if r.Code < 400 {
		return nil
	}
	return &smtp.SMTPError{Code: r.Code, EnhancedCode: smtp.EnhancedCode(r.Enhanced), Message: msg}
}

// enhanced formats the enhanced status code and text of a raw reply line.
func enhanced(r Reply, msg string) string {
	e := r.Enhanced
	if e == [3]int{} {
		e = [3]int{r.Code / 100, 0, 0}
	}
	return fmt.Sprintf("%d.%d.%d %s", e[0], e[1], e[2], msg)
}

// unknown says whether rcpt is at one of Config.OnlyDomains and was never
// scripted: such a server knows only the scripted mailboxes there.
func (s *Sink) unknown(rcpt string) bool {
	_, dom, _ := strings.Cut(key(rcpt), "@")
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Contains(s.cfg.OnlyDomains, dom) {
		return false
	}
	_, scripted := s.known[key(rcpt)]
	return !scripted
}

// Known makes rcpt a mailbox of a Config.OnlyDomains domain that accepts.
func (s *Sink) Known(rcpts ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.known == nil {
		s.known = map[string]bool{}
	}
	for _, r := range rcpts {
		s.known[key(r)] = true
	}
}
