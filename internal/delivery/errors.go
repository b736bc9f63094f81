package delivery

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/emersion/go-smtp"
	"github.com/postline/postline/internal/dnsclient"
)

// The stages of an attempt, as found in Error.Stage.
const (
	StageDNS     = "dns"     // finding the next hop: MX, A/AAAA lookups
	StageConnect = "connect" // TCP connect, greeting, EHLO
	StageTLS     = "tls"     // STARTTLS or the implicit-TLS handshake
	StageAuth    = "auth"    // SMTP AUTH with the relay
	StageMail    = "mail"    // MAIL FROM
	StageRcpt    = "rcpt"    // RCPT TO
	StageData    = "data"    // DATA, the message, the final reply
)

// ErrClosed is the cause of the Error a Send on a closed Transport returns.
var ErrClosed = errors.New("delivery: transport closed")

// Error is why an attempt failed. Send returns only *Error values; Classify
// turns any other error into one. See the package documentation for the
// table of causes.
type Error struct {
	// Code is the SMTP reply code when a server replied, else 0 (network,
	// TLS, DNS, cancellation and the checks this package makes itself).
	Code int
	// Enhanced is the RFC 3463 status code ("5.1.1"): the server's when it
	// sent one, else one chosen by this package for its own verdicts;
	// empty only for a server reply without an enhanced code.
	Enhanced string
	// Message is the server's reply text, or a description of the failure.
	Message string
	// Temporary is the verdict: retry later (4xx, network, DNS timeouts,
	// TLS, cancellation, anything unknown) or give up (5xx and permanent
	// DNS answers).
	Temporary bool
	// Host is the MX or relay host involved, "" before one was chosen.
	Host string
	// Stage is where the attempt failed: one of the Stage constants, or ""
	// for an error Classify knows nothing about.
	Stage string
	// Err is the underlying error, if any.
	Err error
	// TLS is the TLS outcome of the attempt that failed: the session's,
	// or, when none was opened, no version under the policy that applied.
	// The zero value (Policy "") when the attempt never reached a host.
	TLS TLSOutcome
	// Shared, when above 1, is how many recipients this one reply answered:
	// the end-of-DATA reply of a transaction with several accepted RCPTs
	// (SendTicketAll). It names none of them alone, so it is never a
	// rejection of a recipient (RecipientRejected): one unknown address
	// named at DATA must not put the other recipients on the bounce list.
	Shared int
	// Wait, when positive, says nothing was attempted: the delivery waited
	// its turn for a connection of its egress path in vain (the path was
	// busy at its limits). Ask Admit again after Wait; it is not an
	// attempt and not a failure.
	Wait time.Duration
	// Source and SourceAddress are the egress source the attempt went
	// out through, as in Result ("" for none).
	Source, SourceAddress string
}

// Error formats as "delivery: rcpt mx.example.com: 550 5.1.1 no such user
// (permanent)".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("delivery:")
	for _, s := range []string{e.Stage, e.Host} {
		if s != "" {
			b.WriteString(" " + s)
		}
	}
	b.WriteString(":")
	if e.Code != 0 {
		b.WriteString(" " + strconv.Itoa(e.Code))
	}
	if e.Enhanced != "" {
		b.WriteString(" " + e.Enhanced)
	}
	b.WriteString(" " + e.Message)
	if e.Temporary {
		b.WriteString(" (temporary)")
	} else {
		b.WriteString(" (permanent)")
	}
	return b.String()
}

// Unwrap returns the underlying error, so errors.Is(err, context.Canceled)
// and errors.As(err, &*smtp.SMTPError) see through an *Error.
func (e *Error) Unwrap() error { return e.Err }

// Classify returns err as an *Error: err itself (or the *Error it wraps),
// or a classification of a go-smtp *smtp.SMTPError (4xx temporary, 5xx
// permanent), a DNS, TLS, network or context error. Unknown errors are
// temporary (STYLE habit 4). It returns nil only for a nil err.
func Classify(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return classify(err, "", "")
}

// classify builds the Error for err at stage with host.
func classify(err error, stage, host string) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	e = &Error{Temporary: true, Stage: stage, Host: host, Err: err, Message: describe(err)}
	var (
		se *smtp.SMTPError
		de *dnsclient.Error
		ne net.Error
	)
	switch {
	case errors.As(err, &se):
		e.Code, e.Message = se.Code, se.Message
		e.Enhanced = enhancedString(se.EnhancedCode)
		e.Temporary = se.Code/100 != 5 // unexpected 2xx/3xx replies too
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		e.Enhanced = "4.4.7"
	case errors.Is(err, ErrClosed):
		e.Enhanced = "4.3.2"
	case errors.As(err, &de):
		e.Stage = StageDNS
		e.Enhanced, e.Temporary = "4.4.3", de.Temporary()
		if !e.Temporary {
			e.Enhanced = "5.4.4"
		}
	case stage == StageTLS || isTLSError(err):
		e.Enhanced = "4.7.5"
	case isDial(err):
		e.Enhanced, e.Stage = "4.4.1", StageConnect
	case errors.As(err, &ne), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, net.ErrClosed):
		e.Enhanced = "4.4.2"
	default:
		e.Enhanced = "4.0.0"
	}
	return e
}

// enhancedString formats an enhanced code, "" when the server sent none.
func enhancedString(c smtp.EnhancedCode) string {
	if c == smtp.EnhancedCodeNotSet || c == smtp.NoEnhancedCode {
		return ""
	}
	return fmt.Sprintf("%d.%d.%d", c[0], c[1], c[2])
}

// isDial reports whether err is a failure to establish a TCP connection.
func isDial(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "dial"
}

// isTLSError reports whether err comes from a TLS handshake or certificate
// check.
func isTLSError(err error) bool {
	var (
		rh tls.RecordHeaderError
		ae tls.AlertError
		cv *tls.CertificateVerificationError
		ua x509.UnknownAuthorityError
		he x509.HostnameError
		ci x509.CertificateInvalidError
	)
	return errors.As(err, &rh) || errors.As(err, &ae) || errors.As(err, &cv) ||
		errors.As(err, &ua) || errors.As(err, &he) || errors.As(err, &ci)
}

// RecipientRejected reports whether e is a permanent refusal of the
// recipient itself, the case that justifies a bounce suppression:
//
//   - at the dns, rcpt or data stage (a 5.1.x at MAIL is about the sender;
//     a refusal at connect, tls or auth is about us or the relay);
//   - with enhanced code 5.1.x (bad mailbox, bad or null-MX destination,
//     moved), except 5.1.7 and 5.1.8, which are about the sender; or 5.2.1
//     (mailbox disabled);
//   - or, without an enhanced code, reply 550, 551 or 553 at RCPT.
//
// A full mailbox (5.2.2, and 552 at DATA in general) is not a rejection of
// the recipient: RFC 3463 calls it a "persistent transient" condition that
// the owner can clear, so the message fails but the address stays
// deliverable. Policy refusals (5.7.x, e.g. a blocklisted sending IP) are
// not either: suppressing the recipient would punish it for our problem.
func (e *Error) RecipientRejected() bool {
	if e == nil || e.Temporary || e.Shared > 1 {
		return false
	}
	switch e.Stage {
	case StageDNS, StageRcpt, StageData:
	default:
		return false
	}
	if e.Enhanced == "" {
		return e.Stage == StageRcpt && (e.Code == 550 || e.Code == 551 || e.Code == 553)
	}
	parts := strings.Split(e.Enhanced, ".")
	if len(parts) != 3 || parts[0] != "5" {
		return false
	}
	switch parts[1] {
	case "1":
		return parts[2] != "7" && parts[2] != "8"
	case "2":
		return parts[2] == "1"
	}
	return false
}

// ClassifyAt is Classify for an error at a stage of a session this
// package did not run itself (the validator's mailbox probe), so that
// RecipientRejected and the other classes read it as they read a
// delivery's.
func ClassifyAt(err error, stage, host string) *Error {
	if err == nil {
		return nil
	}
	return classify(err, stage, host)
}

// Greylisted reports a temporary refusal that asks the client to come back
// later (greylisting): 4.7.1, or 450/451 whose text says grey- or
// greylist.
func (e *Error) Greylisted() bool {
	if e == nil || !e.Temporary || e.Code == 0 {
		return false
	}
	msg := strings.ToLower(e.Message)
	return e.Enhanced == "4.7.1" || ((e.Code == 450 || e.Code == 451) &&
		(strings.Contains(msg, "greylist") || strings.Contains(msg, "graylist") || strings.Contains(msg, "grey-list")))
}

// MailboxFull reports a recipient over its quota: 452 or 552 with 4.2.2 or
// 5.2.2 (or no enhanced code).
func (e *Error) MailboxFull() bool {
	if e == nil {
		return false
	}
	switch e.Enhanced {
	case "4.2.2", "5.2.2":
		return true
	case "":
		return e.Code == 452 || e.Code == 552
	}
	return false
}
