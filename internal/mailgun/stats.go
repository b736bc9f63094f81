package mailgun

import (
	"github.com/postline/postline/internal/event"
)

// Stat keys: the counters behind Mailgun's stats (GET /v3/{domain}/stats/total).
// Each log entry adds to at most one, so a bucket's totals are sums of
// keys; the keys are stored with the hourly counts and must not change.
const (
	StatAccepted                = "accepted.outgoing"
	StatDelivered               = "delivered.smtp"
	StatTemporaryESPBlock       = "failed.temporary.espblock"
	StatPermanentBounce         = "failed.permanent.bounce"
	StatPermanentDelayedBounce  = "failed.permanent.delayed-bounce"
	StatPermanentSuppressBounce = "failed.permanent.suppress-bounce"
	StatPermanentSuppressUnsub  = "failed.permanent.suppress-unsubscribe"
	// StatPermanentOther is a permanent failure of no kind Mailgun names
	// (expired, cancelled, the domain removed ...): in the total only.
	StatPermanentOther = "failed.permanent.other"
	StatOpenedUnique   = "opened.unique" // the first open of a delivery
	StatOpenedRepeat   = "opened.repeat"
	StatClickedUnique  = "clicked.unique"
	StatClickedRepeat  = "clicked.repeat"
	StatUnsubscribed   = "unsubscribed.total"
	StatComplained     = "complained.total"
)

// StatEvents are the events the stats API counts, in Mailgun's order
// (stored is Mailgun's for received mail, always 0 here).
var StatEvents = []string{"accepted", "delivered", "failed", "opened", "clicked", "unsubscribed", "complained", "stored"}

// StatKey is the stats counter an entry adds to, "" for none: exactly
// the entries the events API shows, each under its event's counter.
func StatKey(en event.Entry) string {
	d := detailsOf(en)
	name, severity := eventName(en, d)
	switch name {
	case "accepted":
		return StatAccepted
	case "delivered":
		return StatDelivered
	case "opened":
		return pick(d.First, StatOpenedUnique, StatOpenedRepeat)
	case "clicked":
		return pick(d.First, StatClickedUnique, StatClickedRepeat)
	case "unsubscribed":
		return StatUnsubscribed
	case "complained":
		return StatComplained
	case "failed":
		if severity == "temporary" {
			return StatTemporaryESPBlock
		}
		return permanentKey(en, d)
	}
	return ""
}

func permanentKey(en event.Entry, d entryDetails) string {
	switch {
	case en.Type == event.PermanentFail:
		return StatPermanentBounce
	case en.Type == event.Bounced: // a DSN after the receiving server accepted
		return StatPermanentDelayedBounce
	case d.Reason == "suppressed" && d.Suppression == "bounce":
		return StatPermanentSuppressBounce
	case d.Reason == "suppressed" && d.Suppression == "unsubscribe":
		// A complaint is kept as an unsubscribe, so a send it stops
		// counts here, never under suppress-complaint.
		return StatPermanentSuppressUnsub
	}
	return StatPermanentOther
}

func pick(first bool, a, b string) string {
	if first {
		return a
	}
	return b
}

// Bucket is one bucket of the stats in Mailgun's shape, with only the
// events asked for (the others nil). Typed rather than maps: an answer of
// 1,000 buckets of every event would otherwise be ~12,000 maps to build
// and sort while encoding. Fields are in name order, as maps encoded.
type Bucket struct {
	Accepted     *statAccepted   `json:"accepted,omitempty"`
	Clicked      *statEngagement `json:"clicked,omitempty"`
	Complained   *statTotal      `json:"complained,omitempty"`
	Delivered    *statDelivered  `json:"delivered,omitempty"`
	Failed       *statFailed     `json:"failed,omitempty"`
	Opened       *statEngagement `json:"opened,omitempty"`
	Stored       *statTotal      `json:"stored,omitempty"`
	Time         string          `json:"time"`
	Unsubscribed *statTotal      `json:"unsubscribed,omitempty"`
}

type statAccepted struct {
	Incoming int64 `json:"incoming"`
	Outgoing int64 `json:"outgoing"`
	Total    int64 `json:"total"`
}

type statDelivered struct {
	HTTP      int64 `json:"http"`
	Optimized int64 `json:"optimized"`
	SMTP      int64 `json:"smtp"`
	Total     int64 `json:"total"`
}

type statFailed struct {
	Permanent struct {
		Bounce              int64 `json:"bounce"`
		DelayedBounce       int64 `json:"delayed-bounce"`
		Optimized           int64 `json:"optimized"`
		SuppressBounce      int64 `json:"suppress-bounce"`
		SuppressComplaint   int64 `json:"suppress-complaint"`
		SuppressUnsubscribe int64 `json:"suppress-unsubscribe"`
		Total               int64 `json:"total"`
		Webhook             int64 `json:"webhook"`
	} `json:"permanent"`
	Temporary struct {
		ESPBlock int64 `json:"espblock"`
		Total    int64 `json:"total"`
	} `json:"temporary"`
}

type statEngagement struct {
	Total  int64 `json:"total"`
	Unique int64 `json:"unique"`
}

type statTotal struct {
	Total int64 `json:"total"`
}

// StatBucket renders one bucket's counters (by key) in Mailgun's shape,
// with only the events asked for.
func StatBucket(time string, counts map[string]int64, events []string) Bucket {
	out := Bucket{Time: time}
	for _, e := range events {
		switch e {
		case "accepted":
			out.Accepted = &statAccepted{Outgoing: counts[StatAccepted], Total: counts[StatAccepted]}
		case "delivered":
			out.Delivered = &statDelivered{SMTP: counts[StatDelivered], Total: counts[StatDelivered]}
		case "failed":
			f := &statFailed{}
			f.Temporary.ESPBlock = counts[StatTemporaryESPBlock]
			f.Temporary.Total = counts[StatTemporaryESPBlock]
			p := &f.Permanent
			p.SuppressBounce, p.SuppressUnsubscribe = counts[StatPermanentSuppressBounce], counts[StatPermanentSuppressUnsub]
			p.Bounce, p.DelayedBounce = counts[StatPermanentBounce], counts[StatPermanentDelayedBounce]
			p.Total = p.Bounce + p.DelayedBounce + p.SuppressBounce + p.SuppressUnsubscribe + counts[StatPermanentOther]
			out.Failed = f
		case "opened":
			out.Opened = &statEngagement{Total: counts[StatOpenedUnique] + counts[StatOpenedRepeat], Unique: counts[StatOpenedUnique]}
		case "clicked":
			out.Clicked = &statEngagement{Total: counts[StatClickedUnique] + counts[StatClickedRepeat], Unique: counts[StatClickedUnique]}
		case "unsubscribed":
			out.Unsubscribed = &statTotal{Total: counts[StatUnsubscribed]}
		case "complained":
			out.Complained = &statTotal{Total: counts[StatComplained]}
		case "stored":
			out.Stored = &statTotal{}
		}
	}
	return out
}
