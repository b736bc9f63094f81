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

// StatBucket renders one bucket's counters (by key) in Mailgun's shape,
// with only the events asked for.
func StatBucket(time string, counts map[string]int64, events []string) map[string]any {
	out := map[string]any{"time": time}
	total := func(keys ...string) int64 {
		var n int64
		for _, k := range keys {
			n += counts[k]
		}
		return n
	}
	for _, e := range events {
		switch e {
		case "accepted":
			out[e] = map[string]int64{"incoming": 0, "outgoing": counts[StatAccepted], "total": counts[StatAccepted]}
		case "delivered":
			out[e] = map[string]int64{"smtp": counts[StatDelivered], "http": 0, "optimized": 0, "total": counts[StatDelivered]}
		case "failed":
			out[e] = map[string]any{
				"temporary": map[string]int64{"espblock": counts[StatTemporaryESPBlock], "total": counts[StatTemporaryESPBlock]},
				"permanent": map[string]int64{
					"suppress-bounce":      counts[StatPermanentSuppressBounce],
					"suppress-unsubscribe": counts[StatPermanentSuppressUnsub],
					"suppress-complaint":   0,
					"bounce":               counts[StatPermanentBounce],
					"delayed-bounce":       counts[StatPermanentDelayedBounce],
					"webhook":              0,
					"optimized":            0,
					"total": total(StatPermanentBounce, StatPermanentDelayedBounce, StatPermanentSuppressBounce,
						StatPermanentSuppressUnsub, StatPermanentOther),
				},
			}
		case "opened":
			out[e] = map[string]int64{"total": total(StatOpenedUnique, StatOpenedRepeat), "unique": counts[StatOpenedUnique]}
		case "clicked":
			out[e] = map[string]int64{"total": total(StatClickedUnique, StatClickedRepeat), "unique": counts[StatClickedUnique]}
		case "unsubscribed":
			out[e] = map[string]int64{"total": counts[StatUnsubscribed]}
		case "complained":
			out[e] = map[string]int64{"total": counts[StatComplained]}
		case "stored":
			out[e] = map[string]int64{"total": 0}
		}
	}
	return out
}
