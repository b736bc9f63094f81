package delivery

import (
	"context"
	"strings"
)

// txn is one SMTP transaction: one message from one sender to one or more
// recipients.
type txn struct {
	from string
	to   []string
	msg  []byte
	// rcptErrs[i] is the reply that refused to[i] alone (several
	// recipients only), and refused[i] the same as an *Error: that
	// recipient's outcome whatever the transaction's.
	rcptErrs []error
	refused  []*Error
}

// reset forgets the refusals of an earlier try on a dead connection.
func (x *txn) reset() {
	x.rcptErrs = make([]error, len(x.to))
	x.refused = make([]*Error, len(x.to))
}

// allASCII reports whether every address has only 7-bit bytes.
func allASCII(addrs []string) bool {
	for _, a := range addrs {
		if !isASCII(a) {
			return false
		}
	}
	return true
}

// Outcome is one recipient's answer of SendTicketAll.
type Outcome struct {
	// Result is the reply to DATA when Err is nil: the recipient was
	// accepted and the message with it.
	Result Result
	// Err, an *Error, is this recipient's RCPT refused on its own, or the
	// transaction's failure (connection, MAIL, DATA), which is every
	// recipient's that was not refused on its own. A Wait set means
	// nothing was attempted, for any recipient.
	Err error
}

// MaxRecipients is max_recipients_per_transaction for tk's egress path:
// how many recipients SendTicketAll may name in its transaction.
func (tk *Ticket) MaxRecipients() int {
	if tk == nil || !tk.warmDay.IsZero() {
		// A source under a warm-up cap counts messages a day, and mailbox
		// providers judge a new address by the recipients it reaches:
		// one recipient a message keeps the cap a count of recipients.
		return 1
	}
	return max(1, tk.lim.rcpts)
}

// SendTicketAll sends one message from from to every recipient of to in
// one SMTP transaction (MAIL once, RCPT per recipient, DATA once when one
// was accepted), as SendTicket does for one, and ends tk. It is for copies
// of a message that are byte for byte the same for every recipient with
// the same envelope sender. The recipients are those of tk's site: for
// direct delivery, at tk's domain; at most tk.MaxRecipients(). The egress
// path counts the transaction as one message (max_message_rate,
// max_deliveries_per_connection), as the receiver counts one DATA.
// It returns one Outcome per recipient, in order.
func (t *Transport) SendTicketAll(ctx context.Context, tk *Ticket, from string, to []string, msg []byte) []Outcome {
	out := make([]Outcome, len(to))
	fail := func(e *Error) []Outcome {
		for i := range out {
			if out[i].Err == nil {
				out[i].Err = e
			}
		}
		return out
	}
	if tk == nil || tk.t != t || tk.ended {
		return fail(configError("a delivery ticket is used once, with the transport that issued it"))
	}
	if len(to) == 0 || len(to) > tk.MaxRecipients() {
		tk.Release()
		return fail(configError("%d recipients in one transaction; at most %d", len(to), tk.MaxRecipients()))
	}
	x := &txn{from: from, msg: msg}
	var idx []int // out's index of each of x.to
	for i, rcpt := range to {
		e := checkEnvelope(Envelope{From: from, To: rcpt})
		if e == nil && tk.route.Mode == ModeDirect && !strings.EqualFold(rcpt[strings.LastIndexByte(rcpt, '@')+1:], tk.domain) {
			e = configError("the delivery ticket was admitted for recipients at %s", tk.domain)
		}
		if e != nil {
			out[i].Err = e
			continue
		}
		x.to, idx = append(x.to, rcpt), append(idx, i)
	}
	if e := checkMessage(Envelope{From: from, To: "x@x"}, msg); e != nil || len(x.to) == 0 {
		tk.Release()
		if e == nil {
			return out // each was refused above
		}
		return fail(e)
	}
	res, e := t.run(ctx, tk, x)
	if e != nil && e.Stage == StageData {
		accepted := len(x.to)
		for _, r := range x.refused {
			if r != nil {
				accepted--
			}
		}
		e.Shared = accepted
	}
	for k, i := range idx {
		switch {
		case x.refused != nil && x.refused[k] != nil:
			out[i].Err = x.refused[k]
		case e != nil:
			out[i].Err = e
		default:
			out[i].Result = res
		}
	}
	return out
}
