package submission

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/postline/postline/internal/connlimit"
	"github.com/postline/postline/internal/spool"
)

// listen opens a bounded listener: past its bounds a client reads a 421
// (after the TLS handshake on an implicit TLS port) and is disconnected.
func (s *Server) listen(addr string, implicitTLS bool) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("submission: %w", err)
	}
	var tc *tls.Config
	name := "submission"
	if implicitTLS {
		tc, name = s.cfg.TLS, "submissions"
	}
	conns := connlimit.SMTP(s.cfg.Conns, tc)
	conns.Name, conns.Logger = name, s.cfg.Logger
	return connlimit.New(ln, conns), nil
}

// hold counts an authenticated session against its account's bound; false
// when the account already holds as many as it may.
func (s *Server) hold(accountID int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held[accountID] >= s.cfg.SessionsPerAccount {
		return false
	}
	s.held[accountID]++
	return true
}

func (s *Server) release(accountID int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held[accountID]--; s.held[accountID] <= 0 {
		delete(s.held, accountID)
	}
}

// receive reads a message to its final dot within the spool's budgets
// (internal/spool), shared with every other door: clients who never finish
// cost neither unbounded memory nor unbounded disk. The Body holds what
// raw takes of the budgets: close it once raw is no longer used.
func (s *Server) receive(r io.Reader) (*spool.Body, []byte, error) {
	body, raw, err := s.cfg.Spool.ReadAll(context.Background(), r)
	switch {
	case errors.Is(err, spool.ErrFull):
		s.messages.WithLabelValues("spool_full").Inc()
		s.cfg.Logger.Warn("submission: message refused: the spool is full (--spool-max-bytes)")
		return nil, nil, errSpoolFull
	case errors.Is(err, spool.ErrBusy):
		s.messages.WithLabelValues("spool_busy").Inc()
		s.cfg.Logger.Warn("submission: message refused for now: too many spooled messages being processed (--spool-processing-memory)")
		return nil, nil, errSpoolBusy
	case errors.Is(err, spool.ErrWrite):
		s.messages.WithLabelValues("temporary_failure").Inc()
		s.cfg.Logger.Error("submission: spooling a message", "error", err)
		return nil, nil, errTempFailure
	}
	return body, raw, err // go-smtp answers 552 for a message over SIZE
}
