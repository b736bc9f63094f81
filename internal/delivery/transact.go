package delivery

import (
	"bytes"
	"context"
	"errors"
	"strings"

	"github.com/emersion/go-smtp"
)

// deliver sends one message through tg: on an idle session if there is
// one (redialling once if it turns out dead), else on a new one.
func (t *Transport) deliver(ctx context.Context, tg target, env Envelope, msg []byte) (Result, *Error) {
	s, err := t.acquire(ctx, tg.key)
	if err != nil {
		return Result{}, t.fail(ctx, err, StageConnect, tg.host)
	}
	if s != nil && tg.mx && !tg.plan.accepts(s) {
		s.abort() // opened under weaker TLS requirements; its slot is reused
		s = nil
	}
	reused := s != nil
	if !reused {
		var e *Error
		if s, e = t.connect(ctx, tg); e != nil {
			t.release(tg.key)
			return Result{}, tg.failedTLS(e)
		}
	}
	res, e, reusable := t.transact(ctx, s, env, msg)
	if e != nil && reused && stale(e) && ctx.Err() == nil {
		// The server closed the idle connection (or refuses more messages
		// on it: 421). Nothing was accepted, so a new session is safe.
		s.abort()
		reused = false
		if s, e = t.connect(ctx, tg); e != nil {
			t.release(tg.key)
			return Result{}, tg.failedTLS(e)
		}
		res, e, reusable = t.transact(ctx, s, env, msg)
	}
	tlsOut := s.tls
	if r := joinReports(tg.plan.report, s.tls.Report); tg.mx && r != "" {
		tlsOut.Report = tg.plan.testingName() + ": " + r
	}
	t.finish(tg.key, s, reusable) // s may be another Send's from here on
	if e != nil {
		e.TLS = tlsOut
		return Result{}, e
	}
	res.Reused, res.TLS = reused, tlsOut
	return res, nil
}

// failedTLS gives e, a failure to open a session, the TLS outcome it has
// when it has none: no encryption, under the target's policy.
func (tg target) failedTLS(e *Error) *Error {
	if e.TLS.Policy == "" {
		e.TLS.Policy = PolicyNone
		if tg.mx {
			e.TLS.Policy = tg.plan.policy
		}
	}
	return e
}

// stale reports whether e, the first failure on a reused connection, means
// the connection was dead rather than the message refused.
func stale(e *Error) bool {
	return e.Stage == StageMail && e.Temporary && (e.Code == 421 || e.Code == 0)
}

// transact runs MAIL, RCPT and DATA on s. reusable says whether s can go
// back to the pool: after success, or after a refusal followed by a
// successful RSET.
func (t *Transport) transact(ctx context.Context, s *session, env Envelope, msg []byte) (Result, *Error, bool) {
	stop := context.AfterFunc(ctx, s.conn.abort)
	res, stage, err := s.send(env, msg)
	var (
		local *Error
		se    *smtp.SMTPError
	)
	reusable := err == nil
	switch {
	case errors.As(err, &local):
		reusable = true // refused before anything was sent
	case errors.As(err, &se) && se.Code != 421:
		reusable = s.c.Reset() == nil
	}
	if aborted := !stop(); aborted {
		reusable = false
	}
	switch {
	case err == nil:
		return res, nil, reusable // delivered, even if ctx ended just after
	case local != nil:
		return Result{}, local, reusable
	}
	return Result{}, t.fail(ctx, err, stage, s.host), reusable
}

// send runs the transaction and returns the stage that failed.
func (s *session) send(env Envelope, msg []byte) (Result, string, error) {
	opts := &smtp.MailOptions{Size: int64(len(msg))}
	if !isASCII(env.From) || !isASCII(env.To) || !isASCII(header(msg)) {
		if ok, _ := s.c.Extension("SMTPUTF8"); ok {
			opts.UTF8 = true
		} else if !isASCII(env.From) || !isASCII(env.To) {
			// RFC 6531 §3.2: a non-ASCII address cannot be sent to a
			// server without SMTPUTF8 (and no downgrade is defined).
			return Result{}, StageMail, &Error{Enhanced: "5.6.7", Stage: StageMail, Host: s.host,
				Message: "the server does not support SMTPUTF8, needed for a non-ASCII address"}
		}
		// A UTF-8 header alone goes out as is (BODY=8BITMIME when offered).
	}
	// go-smtp adds BODY=8BITMIME itself whenever the server offers it.
	if err := s.c.Mail(env.From, opts); err != nil {
		return Result{}, StageMail, err
	}
	if err := s.c.Rcpt(env.To, nil); err != nil {
		return Result{}, StageRcpt, err
	}
	w, err := s.c.Data()
	if err != nil {
		return Result{}, StageData, err
	}
	if _, err := w.Write(msg); err != nil {
		return Result{}, StageData, err
	}
	resp, err := w.CloseWithResponse()
	if err != nil {
		return Result{}, StageData, err
	}
	res := Result{Host: s.host, Code: 250, Message: resp.StatusText}
	if code, text, ok := strings.Cut(resp.StatusText, " "); ok && isEnhanced(code) {
		res.Enhanced, res.Message = code, text
	}
	return res, "", nil
}

// header returns the header section of msg.
func header(msg []byte) []byte {
	if i := bytes.Index(msg, []byte("\r\n\r\n")); i >= 0 {
		return msg[:i]
	}
	if i := bytes.Index(msg, []byte("\n\n")); i >= 0 {
		return msg[:i]
	}
	return msg
}

// isASCII reports whether s has only 7-bit bytes.
func isASCII[T string | []byte](s T) bool {
	for i := range len(s) {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// isEnhanced reports whether s looks like "2.0.0".
func isEnhanced(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return false
	}
	for _, p := range parts {
		if p == "" || len(p) > 3 || strings.Trim(p, "0123456789") != "" {
			return false
		}
	}
	return true
}
