package inbound

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/postline/postline/internal/message"
	"github.com/postline/postline/internal/receiving"
	"github.com/postline/postline/internal/spool"
)

// Receiver takes mail for inbound domains (receiving.Service is one): it
// decides on each recipient at RCPT and takes the message at DATA.
type Receiver interface {
	Recipient(ctx context.Context, addr string) (receiving.Decision, error)
	Receive(ctx context.Context, env receiving.Envelope, raw []byte) ([]receiving.Outcome, error)
}

// The replies of mail to inbound domains (the bounce path's are in
// session.go).
var (
	// A recipient decided after DATA must be alone, so that the one reply
	// to DATA is its verdict; the client sends the others in another
	// transaction, as RFC 5321 §4.5.3.1.10 has it for 452.
	errOwnTransaction = &smtp.SMTPError{Code: 452, EnhancedCode: smtp.EnhancedCode{4, 5, 3},
		Message: "Too many recipients for this transaction: send to this one in a transaction of its own"}
	errRateLimited = &smtp.SMTPError{Code: 421, EnhancedCode: smtp.EnhancedCode{4, 7, 0},
		Message: "Too many messages from your address; try again later (--inbound-per-ip-per-minute)"}
	errStoreFull = &smtp.SMTPError{Code: 452, EnhancedCode: smtp.EnhancedCode{4, 2, 2},
		Message: "Mailbox full: the account's stored messages hold their most; try again later"}
	errPostsFull = &smtp.SMTPError{Code: 452, EnhancedCode: smtp.EnhancedCode{4, 2, 2},
		Message: "Mailbox full: the account's messages waiting to be posted to its routes' URLs hold their most; try again later"}
	// The routes of the recipient's account cost more to match than the
	// server's bound (inboundroute.MaxMatchCost): permanent, since the
	// same message costs the same again.
	errTooCostly = &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 3, 4},
		Message: "The routes of this domain cost too much to match against this message"}
	// The routes would forward the message more times than
	// --inbound-actions-per-message: permanent, as errTooCostly.
	errTooManyActions = &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 7, 0},
		Message: "The routes of these recipients would forward this message too many times (--inbound-actions-per-message)"}
	errRoutesChanged = &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0},
		Message: "The routes for these recipients changed during the transaction; try again"}
)

// rcptInbound decides on an address that is not a bounce address: one of
// an inbound domain that a route takes (now, or after DATA), else 550.
func (ss *session) rcptInbound(to string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dec, err := ss.s.cfg.Receiver.Recipient(ctx, to)
	if err != nil {
		ss.s.cfg.Logger.Error("inbound: deciding on a recipient", "recipient", to, "error", err)
		return errTryLater
	}
	if dec.Verdict == receiving.NotOurs {
		ss.s.count("rcpt_refused")
		return errNoSuchUser
	}
	if len(ss.rcpts) > 0 {
		return errOwnTransaction // bounce recipients are a transaction apart
	}
	// A domain of ours: the transaction takes its place in the client's
	// budget, whatever the answer, so that guessing addresses costs too.
	if !ss.counted {
		if lim := ss.s.cfg.Limit; lim != nil && !lim(ctx, ss.remote) {
			ss.s.count("rate_limited")
			ss.closing = true
			// The reply goes out first; the connection is closed after it.
			if c := ss.c; c != nil {
				time.AfterFunc(time.Second, func() { c.Conn().Close() })
			}
			return errRateLimited
		}
		ss.counted = true
	}
	switch {
	case dec.Verdict == receiving.NoRoute:
		ss.s.count("no_route")
		return errNoSuchUser
	case dec.Verdict == receiving.TooCostly:
		ss.s.count("too_costly")
		return errTooCostly
	case ss.afterData || (dec.Verdict == receiving.AfterData && len(ss.inbound) > 0):
		return errOwnTransaction
	}
	for _, r := range ss.inbound {
		if r.Address == to {
			return nil // the same address twice: one copy
		}
	}
	ss.inbound = append(ss.inbound, receiving.Recipient{Address: to, Domain: dec.Domain})
	ss.afterData = dec.Verdict == receiving.AfterData
	ss.conn.Promote()
	return nil
}

// dataInbound reads a message to inbound recipients and hands it to the
// Receiver; its error, if any, is the reply for every recipient.
func (ss *session) dataInbound(r io.Reader) error {
	body, raw, err := ss.s.cfg.Spool.ReadAll(context.Background(), r)
	defer body.Close()
	switch {
	case errors.Is(err, spool.ErrFull):
		ss.s.count("spool_full")
		return errSpoolFull
	case errors.Is(err, spool.ErrBusy):
		ss.s.count("spool_busy")
		return errSpoolBusy
	case errors.Is(err, spool.ErrWrite):
		ss.s.cfg.Logger.Error("inbound: spooling a message", "error", err)
		return errTryLater
	case errors.Is(err, smtp.ErrDataTooLarge):
		ss.s.count("too_large")
		return smtp.ErrDataTooLarge
	case err != nil:
		return err
	}
	if err := message.CheckUnsafeBytes(raw); err != nil {
		ss.s.count("unsafe_bytes")
		ss.s.cfg.Logger.Info("inbound: message refused", "remote", ss.remote, "from", ss.from, "reason", err)
		return errUnsafeBytes
	}
	if n := headerBytes(raw); n > ss.s.cfg.MaxHeaderBytes {
		ss.s.count("header_too_large")
		return &smtp.SMTPError{Code: 552, EnhancedCode: smtp.EnhancedCode{5, 3, 4},
			Message: fmt.Sprintf("Message header too large: at most %d bytes (--inbound-max-header-bytes)", ss.s.cfg.MaxHeaderBytes)}
	}
	env := receiving.Envelope{Helo: ss.helo(), MailFrom: ss.from, Recipients: ss.inbound}
	env.RemoteIP, _ = netip.ParseAddr(ss.remote)
	if ss.c != nil {
		_, env.TLS = ss.c.TLSConnectionState()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = ss.s.cfg.Receiver.Receive(ctx, env, raw)
	switch {
	case err == nil:
		for range ss.inbound {
			ss.s.count("received")
		}
		return nil
	case errors.Is(err, receiving.ErrNoRoute):
		ss.s.count("no_route")
		return errNoSuchUser
	case errors.Is(err, receiving.ErrRoutesChanged):
		return errRoutesChanged
	case errors.Is(err, receiving.ErrStoreFull):
		ss.s.count("store_full")
		return errStoreFull
	case errors.Is(err, receiving.ErrTooCostly):
		ss.s.count("too_costly")
		return errTooCostly
	case errors.Is(err, receiving.ErrTooManyActions):
		ss.s.count("too_many_actions")
		return errTooManyActions
	case errors.Is(err, receiving.ErrPostsFull):
		ss.s.count("posts_full")
		ss.s.cfg.Logger.Warn("inbound: message refused for now: the account's pending posts hold their most (--inbound-post-bytes-per-account)",
			"remote", ss.remote, "recipients", len(ss.inbound))
		return errPostsFull
	}
	ss.s.cfg.Logger.Error("inbound: receiving a message", "recipients", len(ss.inbound), "error", err)
	return errTryLater
}

// headerBytes is the length of raw's header, up to the blank line that
// ends it (all of raw when there is none).
func headerBytes(raw []byte) int64 {
	if bytes.HasPrefix(raw, []byte("\r\n")) || bytes.HasPrefix(raw, []byte("\n")) {
		return 0
	}
	end := len(raw)
	if i := bytes.Index(raw, []byte("\n\r\n")); i >= 0 {
		end = i + 1
	}
	if i := bytes.Index(raw[:end], []byte("\n\n")); i >= 0 {
		end = i + 1
	}
	return int64(end)
}

func (ss *session) helo() string {
	if ss.c == nil {
		return ""
	}
	return ss.c.Hostname()
}
