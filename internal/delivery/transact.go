package delivery

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-smtp"
	"github.com/postline/postline/internal/mtasts"
)

// deliver sends the message of tk: on the session admission gave it if
// that is still good for the message (redialling if it turns out dead),
// else on a new connection in its place.
func (t *Transport) deliver(ctx context.Context, tk *Ticket, x *txn) (Result, *Error) {
	g, e := t.connection(ctx, tk)
	if e != nil {
		return Result{}, e
	}
	held := time.Now()
	defer func() { t.noteHold(tk.p, time.Since(held)) }()
	var sts func() *mtasts.Policy
	if tk.route.Mode == ModeDirect {
		// Asked only for a host without DANE, and once per delivery.
		sts = sync.OnceValue(func() *mtasts.Policy { return t.mtaSTS(ctx, tk.domain, tk.dt) })
	}
	gated := false
	if s := g.s; s != nil {
		tg, e := t.target(ctx, tk, s.host, sts)
		if e == nil && slices.Contains(tk.hosts, s.host) && (!tg.mx || tg.plan.accepts(s)) {
			if e := t.gate(ctx, tk); e != nil {
				t.park(tk.p, s)
				return Result{}, e
			}
			gated, tk.spent = true, true
			res, e, reusable := t.transact(ctx, s, x)
			if e == nil || !stale(e) || ctx.Err() != nil {
				return t.done(tk, tg, s, x, reusable, true, res, e)
			}
			// The server closed the idle connection (or refuses more
			// messages on it: 421). Nothing was accepted, so a new
			// session is safe.
		}
		// Dead, or opened under weaker TLS requirements: its place serves
		// a new connection.
		s.abort()
		g = grant{provs: s.provs, dialAt: t.dialTime(tk.p)}
	}
	res, e := t.dialAndSend(ctx, tk, g, gated, x, sts)
	if !gated && e != nil {
		t.unbook(tk)
	}
	return res, e
}

// dialTime takes a max_connection_rate slot of p for a connection that
// replaces a dead one, and says when it may be dialled.
func (t *Transport) dialTime(p *path) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	if p.connLim == nil {
		return now
	}
	return now.Add(p.connLim.ReserveN(now, 1).DelayFrom(now))
}

// dialAndSend opens a connection in g's place to the hosts of tk in
// order of preference, moving to the next host when one cannot be reached
// or refuses the session (connect, tls and dns stages), and sends the
// message on the first that opens. A refusal of the message or recipient
// ends the delivery. When every host failed, the error is the most
// preferred temporary one if any (a backup MX refusing must not bounce
// mail the primary would take later), else the last one, and the path
// counts a failed connection.
func (t *Transport) dialAndSend(ctx context.Context, tk *Ticket, g grant, gated bool, x *txn,
	sts func() *mtasts.Policy) (Result, *Error) {
	if e := t.sleepUntil(ctx, g.dialAt); e != nil {
		t.release(tk.p, g.provs)
		return Result{}, e
	}
	var firstTemp, last *Error
	for _, h := range tk.hosts[:min(len(tk.hosts), maxMXHosts)] {
		tg, e := t.target(ctx, tk, h, sts)
		var s *session
		if e == nil {
			s, e = t.connect(ctx, tg)
		}
		if e == nil {
			t.connected(tk.p)
			s.provs = g.provs
			if !gated {
				if e := t.gate(ctx, tk); e != nil {
					t.park(tk.p, s)
					return Result{}, e
				}
			}
			res, e, reusable := t.transact(ctx, s, x)
			return t.done(tk, tg, s, x, reusable, false, res, e)
		}
		e = tg.failedTLS(e)
		if tk.implicit && e.Stage == StageDNS && !e.Temporary {
			e.Enhanced = "5.1.2"
			e.Message = fmt.Sprintf("domain %s has no MX and no address records: %s", tk.domain, e.Message)
		}
		switch e.Stage {
		case StageConnect, StageTLS, StageDNS:
		default:
			t.release(tk.p, g.provs)
			return Result{}, e
		}
		if ctx.Err() != nil {
			t.release(tk.p, g.provs)
			return Result{}, e
		}
		if e.Temporary && firstTemp == nil {
			firstTemp = e
		}
		last = e
	}
	t.release(tk.p, g.provs)
	t.connFailed(tk.p)
	if firstTemp != nil {
		return Result{}, firstTemp
	}
	return Result{}, last
}

// done hands s back and makes the delivery's answer, with the session's
// TLS outcome (and what an MTA-STS policy in testing mode reported), which
// x's refused recipients get too.
func (t *Transport) done(tk *Ticket, tg target, s *session, x *txn, reusable, reused bool, res Result, e *Error) (Result, *Error) {
	tlsOut := s.tls
	if r := joinReports(tg.plan.report, s.tls.Report); tg.mx && r != "" {
		tlsOut.Report = tg.plan.testingName() + ": " + r
	}
	t.finish(tk.p, s, reusable) // s may be another delivery's from here on
	for _, r := range x.refused {
		if r != nil {
			r.TLS = tlsOut
		}
	}
	if e != nil {
		e.TLS = tlsOut
		return Result{}, e
	}
	res.Reused, res.TLS = reused, tlsOut
	if tlsOut.Report != "" {
		t.cfg.Logger.Warn("delivered where an MTA-STS policy in enforce mode would refuse", "domain", tk.domain,
			"host", tg.host, "report", tlsOut.Report)
	}
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
// successful RSET. A recipient of several refused alone is in x.refused.
func (t *Transport) transact(ctx context.Context, s *session, x *txn) (Result, *Error, bool) {
	stop := context.AfterFunc(ctx, s.conn.abort)
	res, stage, err := s.send(x)
	for i, r := range x.rcptErrs {
		if r != nil {
			x.refused[i] = t.fail(ctx, r, StageRcpt, s.host)
		}
	}
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

// send runs the transaction and returns the stage that failed. With
// several recipients, a RCPT refused with a reply other than 421 (which
// ends the session) refuses that recipient alone (x.rcptErrs) and the
// others go on; DATA is sent only when one was accepted, and its reply is
// every accepted recipient's. With one recipient, or none accepted, the
// refusal is the transaction's.
func (s *session) send(x *txn) (Result, string, error) {
	x.reset()
	msg := x.msg
	opts := &smtp.MailOptions{Size: int64(len(msg))}
	if !isASCII(x.from) || !allASCII(x.to) || !isASCII(header(msg)) {
		if ok, _ := s.c.Extension("SMTPUTF8"); ok {
			opts.UTF8 = true
		} else if !isASCII(x.from) || len(x.to) == 1 && !isASCII(x.to[0]) {
			// RFC 6531 §3.2: a non-ASCII address cannot be sent to a
			// server without SMTPUTF8 (and no downgrade is defined).
			return Result{}, StageMail, &Error{Enhanced: "5.6.7", Stage: StageMail, Host: s.host,
				Message: "the server does not support SMTPUTF8, needed for a non-ASCII address"}
		}
		// A UTF-8 header alone goes out as is (BODY=8BITMIME when offered).
	}
	// go-smtp adds BODY=8BITMIME itself whenever the server offers it.
	if err := s.c.Mail(x.from, opts); err != nil {
		return Result{}, StageMail, err
	}
	var first error // the first refusal the server replied
	for i, rcpt := range x.to {
		if !opts.UTF8 && !isASCII(rcpt) { // one of several: the others may go
			x.rcptErrs[i] = &Error{Enhanced: "5.6.7", Stage: StageRcpt, Host: s.host,
				Message: "the server does not support SMTPUTF8, needed for a non-ASCII address"}
			continue
		}
		err := s.c.Rcpt(rcpt, nil)
		var se *smtp.SMTPError
		switch {
		case err == nil:
			continue
		case len(x.to) == 1 || !errors.As(err, &se) || se.Code == 421:
			return Result{}, StageRcpt, err
		}
		if tooManyRecipients(se) {
			// RFC 5321 §4.5.3.1.10: the server takes no more recipients in
			// this transaction; the rest go in another, later, without an
			// attempt counted (Wait), and DATA goes to those accepted.
			for j := i; j < len(x.to); j++ {
				x.rcptErrs[j] = &Error{Code: se.Code, Enhanced: "4.5.3", Temporary: true, Stage: StageRcpt, Host: s.host,
					Wait: time.Second, Message: "the server takes no more recipients in this transaction: " + se.Message}
			}
			break
		}
		x.rcptErrs[i] = err
		first = cmp.Or(first, err)
	}
	if !slices.Contains(x.rcptErrs, nil) { // every one refused, each with its own reply
		if first != nil {
			return Result{}, StageRcpt, first // transact resets the transaction
		}
		// Refused here alone: MAIL was accepted, so reset before reuse.
		if err := s.c.Reset(); err != nil {
			return Result{}, StageRcpt, err
		}
		return Result{}, StageRcpt, x.rcptErrs[0]
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

// tooManyRecipients reports whether a RCPT reply says the transaction has
// as many recipients as the server takes: 452 (or 552, which RFC 5321
// §4.5.3.1.10 says to treat as temporary here) with 4.5.3 or 5.5.3, or
// with "too many recipients" in its text. A 452 about a full mailbox
// (4.2.2) is that recipient's own.
func tooManyRecipients(se *smtp.SMTPError) bool {
	if se.Code != 452 && se.Code != 552 {
		return false
	}
	if se.EnhancedCode[1] == 5 && se.EnhancedCode[2] == 3 {
		return true
	}
	return strings.Contains(strings.ToLower(se.Message), "too many recipients")
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
