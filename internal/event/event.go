package event

import (
	"encoding/json"
	"strings"
	"time"
)

// Type is what happened. The set is closed: see Types.
type Type string

// The event types, in the order a message usually meets them.
const (
	Queued        Type = "queued"         // accepted for delivery
	Send          Type = "send"           // a delivery attempt started
	Delivered     Type = "delivered"      // the receiving server answered 2xx
	TemporaryFail Type = "temporary_fail" // an attempt failed with 4xx or a network error
	Deferred      Type = "deferred"       // rescheduled (details.next_attempt_at)
	PermanentFail Type = "permanent_fail" // an attempt failed with 5xx
	Bounced       Type = "bounced"        // rejected permanently or a DSN came back
	Failed        Type = "failed"         // given up or dropped (retries exhausted, suppressed)
	Opened        Type = "opened"         // tracking pixel loaded
	Clicked       Type = "clicked"        // tracked link followed
	Unsubscribed  Type = "unsubscribed"   // unsubscribe link or one-click
	// Received is a message received for an inbound domain, with the
	// routes that took it and what each action did (details.actions).
	Received Type = "received"
	// Post is the end of a route's post of a received message to a URL
	// (a forward or a store notification): details.outcome posted (2xx)
	// or failed (refused, or given up), with the status and the error.
	Post Type = "post"
)

var types = []Type{Queued, Send, Delivered, TemporaryFail, Deferred, PermanentFail, Bounced, Failed, Opened, Clicked, Unsubscribed, Received, Post}

// Types returns the thirteen event types: the eleven of sent mail, then
// Received and Post (received mail's).
func Types() []Type { return append([]Type(nil), types...) }

// StreamTypes returns the types the stream endpoint filters on: all but
// Send, as the interface document lists them.
func StreamTypes() []Type {
	out := make([]Type, 0, len(types)-1)
	for _, t := range types {
		if t != Send {
			out = append(out, t)
		}
	}
	return out
}

// Valid reports whether t is one of the thirteen types.
func (t Type) Valid() bool {
	for _, v := range types {
		if v == t {
			return true
		}
	}
	return false
}

// Entry is one delivery log entry.
type Entry struct {
	ID        int64 // assigned by the store; grows in commit order per domain
	DomainID  int64
	MessageID string
	Type      Type
	Sender    string
	Recipient string
	Subject   string
	Tags      string // empty means none (null in the API)
	CreatedAt time.Time
	// Details is a JSON object (smtp_code, smtp_message, attempt,
	// next_attempt_at, url, user_agent, ip, reason, ...). Kept raw so that
	// reading millions of entries does not decode and re-encode them.
	Details json.RawMessage
}

// NewDetails encodes kv as a details object. A nil or empty map gives {}.
func NewDetails(kv map[string]any) json.RawMessage {
	if len(kv) == 0 {
		return json.RawMessage(`{}`)
	}
	b, err := json.Marshal(kv)
	if err != nil {
		// Only unencodable values (channels, NaN) get here: a caller bug,
		// but the log must still record that something happened.
		return json.RawMessage(`{}`)
	}
	return b
}

// UserVariablesHeader is where a message keeps its sender's own variables
// (Mailgun's v: parameters), a JSON object.
const UserVariablesHeader = "X-Mailgun-Variables"

// WithUserVariables adds a message's user variables (the JSON of its
// UserVariablesHeader, "" for none) to an entry's details as
// user_variables, so that webhooks and the events API carry them.
func WithUserVariables(details map[string]any, raw string) map[string]any {
	if raw == "" {
		return details
	}
	if details == nil {
		details = map[string]any{}
	}
	var v map[string]any
	if json.Unmarshal([]byte(raw), &v) == nil {
		details["user_variables"] = v
	}
	return details
}

// Order is the order of a List.
type Order int

const (
	// NewestFirst is created_at descending, then id descending: the list
	// endpoint's order.
	NewestFirst Order = iota
	// OldestFirst is id ascending, which is recording order: the stream's
	// order, and the only one that keyset paging by AfterID follows.
	OldestFirst
	// NewestIDFirst is id descending: keyset paging backwards by UpToID.
	NewestIDFirst
)

// Filter selects entries of one domain. Zero values mean "no constraint".
type Filter struct {
	DomainID   int64
	Start, End time.Time // inclusive bounds on CreatedAt
	Sender     string    // exact, case-insensitive
	Recipient  string    // exact, case-insensitive
	Subject    string    // substring, case-insensitive
	Tags       string    // substring, case-insensitive
	MessageID  string    // exact: one message's chain
	Type       Type
	// AnyOf, when not empty, keeps only entries of these types (with
	// Type, both apply): a reader that wants a few kinds has the store
	// skip the others instead of reading them.
	AnyOf   TypeSet
	Limit   int // rows per page; the store requires 1 or more
	Offset  int // rows to skip (list paging; streams use AfterID)
	Order   Order
	AfterID int64 // only ids > AfterID (keyset paging, resume)
	UpToID  int64 // only ids <= UpToID when > 0 (a stream's backlog snapshot)
}

// OnlyTimeAndType reports whether f constrains nothing but the time range
// and the type, the filters whose totals are kept per hour.
func (f Filter) OnlyTimeAndType() bool {
	return f.Sender == "" && f.Recipient == "" && f.Subject == "" && f.Tags == "" && f.MessageID == "" && f.AfterID == 0 && f.UpToID == 0 &&
		f.AnyOf == 0
}

// TypeSet is a set of types; the zero value is empty. It is a value (not a
// slice) so that a Filter stays comparable.
type TypeSet uint16

// SetOf returns the set of ts; types that are not Valid are left out.
func SetOf(ts ...Type) TypeSet {
	var s TypeSet
	for _, t := range ts {
		for i, v := range types {
			if v == t {
				s |= 1 << i
			}
		}
	}
	return s
}

// Types returns the set's types in the order of Types().
func (s TypeSet) Types() []Type {
	var out []Type
	for i, t := range types {
		if s&(1<<i) != 0 {
			out = append(out, t)
		}
	}
	return out
}

// Has reports whether t is in the set.
func (s TypeSet) Has(t Type) bool { return s != 0 && s&SetOf(t) != 0 }

// Fold is the case folding of the case-insensitive filters, applied once to
// the stored value (by the store, at insert) and to the filter value.
func Fold(s string) string { return strings.ToLower(s) }
