package sending

import (
	"context"
	"strings"
	"time"

	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/message"
	"github.com/postline/postline/internal/suppression"
)

// Delivery states.
const (
	StatePending   = "pending"
	StateSending   = "sending"
	StateDeferred  = "deferred"
	StateDelivered = "delivered"
	StateFailed    = "failed"
	StateBounced   = "bounced"
	// StateCancelled is a delivery its sender cancelled before it was sent.
	StateCancelled = "cancelled"
)

// Attachment is a file as stored with a send.
type Attachment struct {
	Filename, ContentType string
	Data                  []byte
	// ContentID makes the file an inline part of the HTML (cid:ContentID).
	ContentID string
}

// Send is one accepted request's content.
type Send struct {
	ID        int64
	DomainID  int64
	AccountID int64
	From      string
	FromName  string
	ReplyTo   string
	Subject   string
	Text      string
	HTML      string
	Headers   map[string]string
	Options   string // attachment_options JSON as given
	Tags      string
	Processed bool
	CreatedAt time.Time
	// Addressing is what the To and Cc headers show when the request had
	// cc recipients or display names; empty otherwise.
	Addressing Addressing
	// DeliverAt is the time the sender scheduled the message for (nil: at
	// once).
	DeliverAt *time.Time
	// Raw is a message submitted over SMTP, as the client sent it (Bcc
	// removed, Message-ID and Date added when missing): sent as it is to
	// every recipient, DKIM-signed, instead of being built from the fields.
	Raw []byte
	// Pruned says the content (bodies, raw message, attachments) was
	// pruned with the log: only what the log and tracking need is left.
	Pruned bool
}

// Delivery is one recipient's row in the queue, with the send fields the
// log needs.
type Delivery struct {
	ID            int64
	SendID        int64
	DomainID      int64
	MessageID     string // without angle brackets
	Recipient     string
	State         string
	Attempts      int
	NextAttemptAt time.Time
	CreatedAt     time.Time
	// From the send, for log entries.
	Sender, Subject, Tags string
	DeliverAt             *time.Time // scheduled time, nil: at once
	UserVars              string     // the send's user variables JSON (event.UserVariablesHeader), "" for none
	// Later says, for a claimed delivery, whether its send has a delivery
	// after it (another recipient of the message): the claim loop asks for
	// the rest of a message cut by a full claim only when there is one.
	Later bool
}

// Since is when the message's age starts: its scheduled time, or when it
// was accepted. Retries give up relative to it.
func (d Delivery) Since() time.Time {
	if d.DeliverAt != nil && d.DeliverAt.After(d.CreatedAt) {
		return *d.DeliverAt
	}
	return d.CreatedAt
}

// Outcome is what an attempt did to a delivery.
type Outcome struct {
	State         string
	NextAttemptAt time.Time // deferred only
	Code          int
	Message       string
	// Transport is how the attempt left (direct, smtp; "" before sending),
	// for the metrics only.
	Transport string
	// TLS is the attempt's delivery.TLSOutcome.Label ("" before
	// sending: "none"), for the metrics only.
	TLS string
}

// EnqueueJob is one Enqueue call's arguments, for EnqueueMany.
type EnqueueJob struct {
	Send        *Send // ID filled in
	Attachments []Attachment
	Deliveries  []Delivery // IDs filled in
	Entries     func([]Delivery) []event.Entry
}

// Completion is one Complete call's arguments, for CompleteMany.
type Completion struct {
	ID      int64
	Outcome Outcome
	Entries []event.Entry
	Bounce  *suppression.Entry // nil: no bounce suppression
}

// StoredSend is a send with its attachments, as LoadSends returns it.
type StoredSend struct {
	Send        Send
	Attachments []Attachment
}

// Store is the storage the service needs. Every method that records
// entries does so in the same transaction as its state change.
type Store interface {
	// Enqueue stores the send, its attachments, its deliveries (IDs filled
	// in) and entries in one transaction.
	Enqueue(ctx context.Context, s *Send, atts []Attachment, ds []Delivery, entries func([]Delivery) []event.Entry) error
	// Claim leases up to limit due deliveries to owner until leaseUntil,
	// increments their attempts and records entries(claimed).
	Claim(ctx context.Context, owner string, now, leaseUntil time.Time, limit int, entries func([]Delivery) []event.Entry) ([]Delivery, error)
	// ClaimSiblings claims as Claim does, recording nothing, up to limit
	// due deliveries that f selects, oldest id first.
	ClaimSiblings(ctx context.Context, owner string, now, leaseUntil time.Time, f Siblings, limit int) ([]Delivery, error)
	// EnqueueMany does what Enqueue does for each job, all in one
	// transaction: every job commits or none does.
	EnqueueMany(ctx context.Context, jobs []EnqueueJob) error
	// Complete writes an outcome (and entries, and a bounce suppression
	// when bounce is not nil) if owner still holds the lease.
	Complete(ctx context.Context, id int64, owner string, o Outcome, entries []event.Entry, bounce *suppression.Entry) (bool, error)
	// CompleteMany does what Complete does for each completion, all in one
	// transaction: held[i] reports whether owner still held cs[i]'s lease;
	// a completion whose lease was lost writes nothing (no state, entries
	// or bounce) while the others in the batch are written.
	CompleteMany(ctx context.Context, owner string, cs []Completion) (held []bool, err error)
	// MessageDeliveries returns the deliveries of a message id in the
	// domain, oldest first (several share an id when submitted over SMTP).
	MessageDeliveries(ctx context.Context, domainID int64, messageID string) ([]MessageDelivery, error)
	// CancelMessage sets the message's deliveries that are not being or
	// have not been sent to cancelled, recording entries(cancelled) in the
	// same transaction, and returns them.
	CancelMessage(ctx context.Context, domainID int64, messageID string, now time.Time,
		entries func([]Delivery) []event.Entry) ([]Delivery, error)
	// SendHeaders returns the custom headers of the sends behind message
	// ids of the domain, by message id (ids that are not the domain's are
	// absent).
	SendHeaders(ctx context.Context, domainID int64, messageIDs []string) (map[string]map[string]string, error)
	// Release returns a leased delivery to the queue, due at next, and
	// takes back the attempt it counted (the attempt never happened): to
	// pending when that was its first, else to deferred.
	Release(ctx context.Context, id int64, owner string, next time.Time) error
	// ExtendLease moves the lease end of a delivery still held by owner.
	ExtendLease(ctx context.Context, id int64, owner string, until time.Time) error
	// Rescue makes deliveries whose lease expired before now due again.
	Rescue(ctx context.Context, now time.Time) (int, error)
	// LoadSend returns a send and its attachments.
	LoadSend(ctx context.Context, id int64) (Send, []Attachment, error)
	// LoadSends returns the sends with these ids that exist, with their
	// attachments, keyed by id.
	LoadSends(ctx context.Context, ids []int64) (map[int64]StoredSend, error)
	// SaveProcessed replaces a send's attachments with processed ones,
	// once: it reports false when another worker did it first.
	SaveProcessed(ctx context.Context, sendID int64, atts []Attachment) (bool, error)
	// Reserve claims (account, key) for a request starting at now, unless a
	// claim newer than since exists (a pending one counts only when newer
	// than pendingSince: its request may have died). Without the claim it
	// returns the existing answer; status 0 means still pending.
	// The claim is marked with token. A key claimed by a request in flight
	// gives reserved false and status 0.
	Reserve(ctx context.Context, accountID int64, key, token string, now, since, pendingSince time.Time) (reserved bool, status int, body []byte, err error)
	// Remember stores the answer under a key still claimed with token;
	// Forget drops such a claim (its request failed), so the key can be
	// used again. Neither touches a claim taken over by another request.
	Remember(ctx context.Context, accountID int64, key, token string, status int, body []byte) error
	Forget(ctx context.Context, accountID int64, key, token string) error
	// PruneSends empties the content of the sends created before before
	// whose deliveries are all final since before (bodies, raw message,
	// attachments; the HTML becomes keep(html)) and marks them pruned at
	// now, in short transactions; it returns how many.
	PruneSends(ctx context.Context, before, now time.Time, batch int, keep func(html string) string) (int64, error)
	// PruneIdempotencyKeys deletes keys created before before, claimed
	// or answered, at most batch per transaction, and returns how many.
	PruneIdempotencyKeys(ctx context.Context, before time.Time, batch int) (int64, error)
}

// Addressing is the visible recipients of a send. With Cc, every copy
// shows To and Cc as given (bcc recipients never show); without, each copy
// shows its own recipient, with its display name when To gave one.
type Addressing struct {
	To []message.Mailbox `json:"to,omitempty"`
	Cc []message.Mailbox `json:"cc,omitempty"`
}

// NameOf is the display name To gave addr ("" when none).
func (a Addressing) NameOf(addr string) string {
	for _, m := range a.To {
		if strings.EqualFold(m.Addr, addr) {
			return m.Name
		}
	}
	return ""
}

// MessageDelivery is one recipient's state, for the message endpoint.
type MessageDelivery struct {
	Delivery
	LastCode    int
	LastMessage string
	UpdatedAt   time.Time
}
