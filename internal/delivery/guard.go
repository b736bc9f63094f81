package delivery

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"syscall"

	"github.com/postline/postline/internal/netguard"
)

// A tenant chooses its recipients, and so the DNS that direct delivery
// follows: an MX (or, without one, an A/AAAA record) at 127.0.0.1, a
// private network or a cloud metadata address would otherwise get full
// SMTP sessions from inside the operator's network. Unless
// Config.AllowPrivate, such addresses are never dialled (netguard's rules,
// as for webhooks and mailbox probes), checked on the address actually
// dialled so that a name rebinding there fails too. Relays are not
// guarded: the operator sets them, or allows them with --relay-allowlist.

// MsgNonPublic is the message of the permanent failure of a direct
// delivery whose MX hosts all resolve to non-public addresses.
const MsgNonPublic = "MX resolves to a non-public address"

// errNonPublic is the cause of that failure; the addresses follow it in
// Error.Err, for the operator's log only.
var errNonPublic = errors.New("delivery: refused to dial a non-public address")

// publicOnly splits addrs into those direct delivery may dial and the
// refused ones.
func publicOnly(addrs []netip.Addr) (public, refused []netip.Addr) {
	for _, a := range addrs {
		if netguard.SpecialPurpose(a) {
			refused = append(refused, a)
		} else {
			public = append(public, a)
		}
	}
	return public, refused
}

// nonPublicError is the permanent failure for an MX host whose addresses
// are all refused: 5.4.4, unable to route. Its stage is connect, so that
// the next MX host is still tried.
func nonPublicError(host string, refused []netip.Addr) *Error {
	list := make([]string, len(refused))
	for i, a := range refused {
		list[i] = a.String()
	}
	return &Error{Enhanced: "5.4.4", Stage: StageConnect, Host: host, Message: MsgNonPublic,
		Err: fmt.Errorf("%w: %s", errNonPublic, strings.Join(list, ", "))}
}

// refuseNonPublic is the MX dialer's Control: the last check, on the
// address the socket is about to connect to.
func refuseNonPublic(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("delivery: dialling %q: %w", address, err)
	}
	if netguard.SpecialPurpose(ap.Addr()) {
		return fmt.Errorf("%w: %s", errNonPublic, ap.Addr())
	}
	return nil
}

// describe says what went wrong without the addresses and ports a network
// error names ("dial tcp 10.0.0.5:25: connect: connection refused"): the
// message reaches tenants (log entries, the message's state), and where
// the operator's network connects is none of their business. Error.Err
// keeps the full error for the operator's log.
func describe(err error) string {
	var ce *ctxError
	if errors.As(err, &ce) {
		return ce.ctx.Error()
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err.Error()
	}
	var op *net.OpError
	if errors.As(err, &op) {
		what := map[string]string{"dial": "connecting", "read": "reading from the server", "write": "writing to the server"}[op.Op]
		if what == "" {
			what = "network " + op.Op
		}
		var sys *os.SyscallError
		switch {
		case op.Timeout():
			return what + ": timed out"
		case errors.As(op.Err, &sys):
			return what + ": " + sys.Err.Error()
		case op.Err != nil:
			return what + ": " + op.Err.Error()
		}
		return what + " failed"
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "the server closed the connection"
	}
	return err.Error()
}
