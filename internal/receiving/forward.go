package receiving

import (
	"context"

	"github.com/postline/postline/internal/inboundroute"
)

// Forwarder carries out what a route asks beyond storing: forward(URL),
// forward(address) and store(notify=URL)'s notification. It is the seam
// the forwarding side plugs into: Receive calls it for each recipient with
// the actions of those kinds, after the message is authenticated and
// evaluated and before anything is recorded, and writes the outcomes it
// returns into the recipient's `received` log entry. An error refuses the
// whole message for now (451) with nothing recorded, so a Forwarder that
// queues durably may fail safely; one that returns must have taken
// responsibility for what it reports as taken.
type Forwarder interface {
	Forward(ctx context.Context, h Handoff) ([]ActionOutcome, error)
}

// Handoff is one recipient's message and the actions handed on.
type Handoff struct {
	AccountID, DomainID int64
	Recipient           string
	Envelope            Envelope
	// MessageID is the message id of the recipient's received log entry
	// (the message's own, else one made for the log): what a Forwarder
	// logs later under, to join the message's chain.
	MessageID string
	// Digest is the SHA-256 of the message as the client sent it (before
	// our fields): the same for a client's retry of a message refused
	// after the handoff, so that a Forwarder can recognise one.
	Digest [32]byte
	// Raw is the message as delivered onwards: our Authentication-Results
	// and Received fields on top.
	Raw []byte
	// StoredID is the id of the recipient's stored copy when a store()
	// ran (for a notification's message URL), else "".
	StoredID string
	// Actions are forwards and stores with a Notify URL, in order. A
	// store's own storing is done; only its notification is handed on.
	Actions []inboundroute.Action
}

// ActionOutcome is what became of one handed-on action: Outcome is
// "unsupported", or what the Forwarder reports ("queued", say); Reason
// says why in words; MessageID, when set, is the message the action
// queued (a forward to an address: its deliveries' log entries).
type ActionOutcome struct {
	Outcome   string
	Reason    string
	MessageID string
	// Details are added to the action's object in the log entry (an id
	// of what was queued, say); they may not replace the keys Receive
	// writes.
	Details map[string]any
}

// Outcome values Receive itself writes.
const (
	OutcomeStored      = "stored"      // store(): kept
	OutcomeSkipped     = "skipped"     // the captures made the destination invalid
	OutcomeDone        = "done"        // stop(): no later route
	OutcomeUnsupported = "unsupported" // not carried out by this server yet
)

// Unsupported is the Forwarder this release has: forwards and
// notifications are not carried out, and each one's outcome says so. The
// message is accepted all the same (other actions ran, and the log
// entry shows what did not), never dropped without a trace.
type Unsupported struct{}

// Forward implements Forwarder.
func (Unsupported) Forward(_ context.Context, h Handoff) ([]ActionOutcome, error) {
	out := make([]ActionOutcome, len(h.Actions))
	for i, a := range h.Actions {
		reason := "forward actions are not carried out yet"
		if a.Kind == inboundroute.KindStore {
			reason = "store notifications are not sent yet"
		}
		out[i] = ActionOutcome{Outcome: OutcomeUnsupported, Reason: reason}
	}
	return out, nil
}

// Forwarders hands each action to the Forwarder for its kind: URL takes
// forward(URL) and store notifications, Address takes forward(address).
// A nil one answers "unsupported" for its actions, so the two sides can
// be wired one at a time. Outcomes come back in the order of h.Actions.
type Forwarders struct {
	URL, Address Forwarder
}

// Forward implements Forwarder.
func (f Forwarders) Forward(ctx context.Context, h Handoff) ([]ActionOutcome, error) {
	var toURL, toAddress []int
	for i, a := range h.Actions {
		if a.Kind == inboundroute.KindForward && a.URL == "" {
			toAddress = append(toAddress, i)
		} else {
			toURL = append(toURL, i)
		}
	}
	out := make([]ActionOutcome, len(h.Actions))
	for _, side := range []struct {
		fw  Forwarder
		idx []int
	}{{f.URL, toURL}, {f.Address, toAddress}} {
		if len(side.idx) == 0 {
			continue
		}
		fw := side.fw
		if fw == nil {
			fw = Unsupported{}
		}
		part := h
		part.Actions = make([]inboundroute.Action, len(side.idx))
		for j, i := range side.idx {
			part.Actions[j] = h.Actions[i]
		}
		res, err := fw.Forward(ctx, part)
		if err != nil {
			return nil, err
		}
		for j, i := range side.idx {
			if j < len(res) {
				out[i] = res[j]
			}
		}
	}
	return out, nil
}
