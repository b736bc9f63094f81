package shaping

import (
	"fmt"
	"strconv"
	"time"
)

// Limits are the per-site keys of a section, by their KumoMTA names. A
// zero field is unset: a later section sets it, or the caller keeps its
// own default.
type Limits struct {
	ConnectionLimit            Limit         // connection_limit: connections at once per site and egress source
	MaxConnectionRate          Rate          // max_connection_rate: new connections per site and source
	MaxMessageRate             Rate          // max_message_rate: messages per site and source
	MaxDeliveriesPerConnection int           // max_deliveries_per_connection: messages before a connection is closed
	IdleTimeout                time.Duration // idle_timeout: how long an unused connection stays open
	EnableTLS                  TLSMode       // enable_tls
	EnableMTASTS               Flag          // enable_mta_sts
	EnableDANE                 Flag          // enable_dane
	// ConsecutiveConnectionFailuresBeforeDelay is
	// consecutive_connection_failures_before_delay: failed connections in
	// a row before the site is backed off.
	ConsecutiveConnectionFailuresBeforeDelay int
	// MaxRecipientsPerTransaction is max_recipients_per_transaction (a
	// Postline key, Postfix's default_destination_recipient_limit): RCPTs
	// in one transaction for copies of one identical message; 1 sends
	// each recipient alone.
	MaxRecipientsPerTransaction int
}

// With returns l with every field o sets overriding it: the merge of a
// later section over an earlier one, and what a SetConfig action does.
func (l Limits) With(o Limits) Limits {
	if o.ConnectionLimit.IsSet() {
		l.ConnectionLimit = o.ConnectionLimit
	}
	if o.MaxConnectionRate.IsSet() {
		l.MaxConnectionRate = o.MaxConnectionRate
	}
	if o.MaxMessageRate.IsSet() {
		l.MaxMessageRate = o.MaxMessageRate
	}
	if o.MaxDeliveriesPerConnection > 0 {
		l.MaxDeliveriesPerConnection = o.MaxDeliveriesPerConnection
	}
	if o.MaxRecipientsPerTransaction > 0 {
		l.MaxRecipientsPerTransaction = o.MaxRecipientsPerTransaction
	}
	if o.IdleTimeout > 0 {
		l.IdleTimeout = o.IdleTimeout
	}
	if o.EnableTLS != TLSUnset {
		l.EnableTLS = o.EnableTLS
	}
	if o.EnableMTASTS != FlagUnset {
		l.EnableMTASTS = o.EnableMTASTS
	}
	if o.EnableDANE != FlagUnset {
		l.EnableDANE = o.EnableDANE
	}
	if o.ConsecutiveConnectionFailuresBeforeDelay > 0 {
		l.ConsecutiveConnectionFailuresBeforeDelay = o.ConsecutiveConnectionFailuresBeforeDelay
	}
	return l
}

// MaxRecipientsPerTransactionLimit is the largest
// max_recipients_per_transaction a shaping file may set (RFC 5321 asks
// servers to take at least 100; few take more than 1,000).
const MaxRecipientsPerTransactionLimit = 1000

// KeyValue is one setting as a shaping file names and writes it.
type KeyValue struct {
	Key, Value string
}

// KeyValues lists the fields that are set, in KumoMTA's names and
// notation, in a fixed order.
func (l Limits) KeyValues() []KeyValue {
	var out []KeyValue
	for _, k := range limitKeys {
		if v := k.show(l); v != "" {
			out = append(out, KeyValue{k.name, v})
		}
	}
	return out
}

// limitKey is one per-site key: how to parse it into Limits and show it. The table is the one list of keys a section, a source and a
// SetConfig action accept.
type limitKey struct {
	name  string
	parse func(v any, l *Limits) error
	show  func(l Limits) string // "" when unset
}

var limitKeys = []limitKey{
	{"connection_limit",
		func(v any, l *Limits) (err error) { l.ConnectionLimit, err = ParseLimit(v); return },
		func(l Limits) string { return showIf(l.ConnectionLimit.String(), l.ConnectionLimit.IsSet()) }},
	{"max_connection_rate",
		func(v any, l *Limits) (err error) { l.MaxConnectionRate, err = parseRateValue(v); return },
		func(l Limits) string { return showIf(l.MaxConnectionRate.String(), l.MaxConnectionRate.IsSet()) }},
	{"max_message_rate",
		func(v any, l *Limits) (err error) { l.MaxMessageRate, err = parseRateValue(v); return },
		func(l Limits) string { return showIf(l.MaxMessageRate.String(), l.MaxMessageRate.IsSet()) }},
	{"max_deliveries_per_connection",
		func(v any, l *Limits) (err error) { l.MaxDeliveriesPerConnection, err = parseInt(v); return },
		func(l Limits) string {
			return showIf(strconv.Itoa(l.MaxDeliveriesPerConnection), l.MaxDeliveriesPerConnection > 0)
		}},
	{"max_recipients_per_transaction",
		func(v any, l *Limits) (err error) {
			n, err := parseInt(v)
			if err == nil && n > MaxRecipientsPerTransactionLimit {
				// Each recipient of a transaction holds its own lease renewal
				// while it runs: the unit size is a resource bound too.
				return fmt.Errorf("at most %d, got %d", MaxRecipientsPerTransactionLimit, n)
			}
			l.MaxRecipientsPerTransaction = n
			return err
		},
		func(l Limits) string {
			return showIf(strconv.Itoa(l.MaxRecipientsPerTransaction), l.MaxRecipientsPerTransaction > 0)
		}},
	{"idle_timeout",
		func(v any, l *Limits) (err error) { l.IdleTimeout, err = ParseDuration(v); return },
		func(l Limits) string { return showIf(FormatDuration(l.IdleTimeout), l.IdleTimeout > 0) }},
	{"enable_tls",
		func(v any, l *Limits) (err error) { l.EnableTLS, err = ParseTLSMode(v); return },
		func(l Limits) string { return l.EnableTLS.String() }},
	{"enable_mta_sts",
		func(v any, l *Limits) error { b, err := parseBool(v); l.EnableMTASTS = flagOf(b); return err },
		func(l Limits) string { return l.EnableMTASTS.String() }},
	{"enable_dane",
		func(v any, l *Limits) error { b, err := parseBool(v); l.EnableDANE = flagOf(b); return err },
		func(l Limits) string { return l.EnableDANE.String() }},
	{"consecutive_connection_failures_before_delay",
		func(v any, l *Limits) (err error) {
			l.ConsecutiveConnectionFailuresBeforeDelay, err = parseInt(v)
			return
		},
		func(l Limits) string {
			n := l.ConsecutiveConnectionFailuresBeforeDelay
			return showIf(strconv.Itoa(n), n > 0)
		}},
}

func showIf(s string, set bool) string {
	if set {
		return s
	}
	return ""
}

// limitKeyNamed returns the per-site key called name.
func limitKeyNamed(name string) (limitKey, bool) {
	for _, k := range limitKeys {
		if k.name == name {
			return k, true
		}
	}
	return limitKey{}, false
}

// ParseSetting parses one per-site key and value into a Limits with only
// that field set, as SetConfig actions and tests use it.
func ParseSetting(name string, value any) (Limits, error) {
	k, ok := limitKeyNamed(name)
	if !ok {
		return Limits{}, fmt.Errorf("%s is not a key Postline implements", name)
	}
	if n, ok := value.(int); ok {
		value = int64(n)
	}
	var l Limits
	err := k.parse(value, &l)
	return l, err
}
