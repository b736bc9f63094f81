package dnsclient

import (
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/miekg/dns"
)

// Kind classifies a lookup failure by what the caller should conclude.
type Kind int

// The kinds of lookup failure.
const (
	// NotFound: the name does not exist (NXDOMAIN). Permanent; cached.
	NotFound Kind = iota + 1
	// NoData: the name exists but has no records of the asked type
	// (NOERROR with an empty answer). Permanent; cached.
	NoData
	// Temporary: no usable answer (timeout, network error, SERVFAIL,
	// REFUSED or any other error rcode, or the caller's context ended).
	// Retry later; never cached.
	Temporary
	// Invalid: the name cannot be queried (empty, too long, a label that is
	// not valid LDH, underscore or IDNA). Permanent; nothing was sent.
	Invalid
)

// String returns the kind as used in error messages, e.g. "not found".
func (k Kind) String() string {
	switch k {
	case NotFound:
		return "not found"
	case NoData:
		return "no data"
	case Temporary:
		return "temporary failure"
	case Invalid:
		return "invalid name"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Error is the only error type the Resolver's lookups return.
type Error struct {
	Name  string // the name as given by the caller
	Qtype string // "MX", "TXT", "A", "AAAA", "CNAME", "TLSA"
	Kind  Kind
	// Rcode is the response code (dns.RcodeNameError, dns.RcodeServerFailure,
	// ...), or -1 when no response was received.
	Rcode int
	// Err is the underlying cause, if any: a network or context error for
	// Temporary, the validation failure for Invalid.
	Err error
}

// Error formats as "dnsclient: MX example.com: not found (NXDOMAIN)",
// followed by the cause if there is one.
func (e *Error) Error() string {
	msg := fmt.Sprintf("dnsclient: %s %s: %s", e.Qtype, e.Name, e.Kind)
	if e.Rcode > 0 {
		msg += " (" + dns.RcodeToString[e.Rcode] + ")"
	}
	if e.Err != nil {
		msg += ": " + causeText(e.Err)
	}
	return msg
}

// causeText describes a lookup's cause without the resolver's address:
// these messages reach tenants (log entries, webhook errors), and the
// address of the operator's DNS server is none of their business.
func causeText(err error) string {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		if op.Timeout() {
			return "no answer from the DNS server (timeout)"
		}
		return "the DNS server could not be reached: " + causeText(op.Err)
	}
	var sys *os.SyscallError
	if errors.As(err, &sys) {
		return sys.Err.Error()
	}
	return err.Error()
}

// Unwrap returns the underlying cause, so errors.Is(err, context.Canceled)
// and errors.As(err, &net.Error) work.
func (e *Error) Unwrap() error { return e.Err }

// Temporary reports whether retrying later may succeed.
func (e *Error) Temporary() bool { return e.Kind == Temporary }

// IsNotFound reports whether err is a lookup error of kind NotFound.
func IsNotFound(err error) bool { return isKind(err, NotFound) }

// IsNoData reports whether err is a lookup error of kind NoData.
func IsNoData(err error) bool { return isKind(err, NoData) }

// IsTemporary reports whether err is a lookup error of kind Temporary.
func IsTemporary(err error) bool { return isKind(err, Temporary) }

// IsInvalid reports whether err is a lookup error of kind Invalid.
func IsInvalid(err error) bool { return isKind(err, Invalid) }

func isKind(err error, k Kind) bool {
	var e *Error
	return errors.As(err, &e) && e.Kind == k
}
