package delivery

import (
	"cmp"
	"time"

	"github.com/postline/postline/internal/shaping"
	"golang.org/x/time/rate"
)

// Bounds of admission (admit.go).
const (
	// defaultConns and defaultIdle are Config.MaxConnsPerDest's and
	// Config.IdleTimeout's defaults.
	defaultConns = 4
	defaultIdle  = 30 * time.Second
	// defaultFailuresBeforeDelay is KumoMTA's default
	// consecutive_connection_failures_before_delay.
	defaultFailuresBeforeDelay = 100
	// defaultFailureDelay is how long a path that reached
	// consecutive_connection_failures_before_delay dials nothing: the
	// first delay of the default retry schedule, so the deliveries it
	// turns away (each deferred on its own schedule) are back about when
	// the next dial is allowed.
	defaultFailureDelay = time.Minute
	// maxRateHold is how far ahead Admit books a message-rate slot for a
	// delivery it admits; a delivery that would have to wait longer is
	// told to come back instead of holding its worker.
	maxRateHold = time.Second
	// minWait and maxWait bound what Admit tells a refused delivery: not
	// so soon that giving it back to the queue and claiming it again
	// (two writes) costs more than the wait saves, and not so late that a
	// reload of the rules or a restart (which forgets the schedule) leaves
	// it waiting for nothing.
	minWait = 100 * time.Millisecond
	maxWait = time.Hour
	// waitPatience is how long a delivery admitted with a place in its
	// path's queue waits for a connection before it is turned away (not
	// an attempt) to come back later.
	waitPatience = 15 * time.Second
	// providerLine is the most deliveries that wait for a connection to
	// one site while its provider is full (path.lineLocked).
	providerLine = 20
	// pathIdleLife is how long an egress path with no connections is
	// remembered: its rates and failure count outlive its connections.
	pathIdleLife = time.Hour
	// defaultHold is the assumed time a delivery holds a connection
	// before a path has measured its own: on the short side, since
	// deliveries told to come back too early only ask again, while too
	// late a schedule idles the path.
	defaultHold = 100 * time.Millisecond
)

// DefaultRecipientsPerTransaction is max_recipients_per_transaction where
// no shaping file sets it: Postfix's default_destination_recipient_limit.
const DefaultRecipientsPerTransaction = 50

// DefaultShaping is what direct delivery does where no shaping file sets
// a key (with Config's defaults): connection_limit 4, idle_timeout 30s,
// enable_tls OpportunisticInsecure, MTA-STS and DANE on, KumoMTA's 100
// for consecutive_connection_failures_before_delay and Postfix's 50 for
// max_recipients_per_transaction. No rate applies and connections carry
// any number of messages.
func DefaultShaping() shaping.Limits {
	return shaping.Limits{ConnectionLimit: shaping.Limit{N: defaultConns}, IdleTimeout: defaultIdle,
		EnableTLS: shaping.TLSOpportunisticInsecure, EnableMTASTS: shaping.FlagTrue, EnableDANE: shaping.FlagTrue,
		ConsecutiveConnectionFailuresBeforeDelay: defaultFailuresBeforeDelay,
		MaxRecipientsPerTransaction:              DefaultRecipientsPerTransaction}
}

// pathLimits are the limits one egress path enforces, from the shaping
// settings in force with the Transport's defaults for what they leave
// unset.
type pathLimits struct {
	conns    int          // connection_limit (default Config.MaxConnsPerDest, or MaxConnsPerRelay)
	connRate shaping.Rate // max_connection_rate; unset: none
	msgRate  shaping.Rate // max_message_rate; unset: none
	perConn  int          // max_deliveries_per_connection; 0: no limit
	rcpts    int          // max_recipients_per_transaction (default DefaultRecipientsPerTransaction)
	idle     time.Duration
	failures int // consecutive_connection_failures_before_delay
}

// limitsOf fills in the Transport's defaults for what l leaves unset, a
// relay's path's (relay) or a site's.
func (t *Transport) limitsOf(l shaping.Limits, relay bool) pathLimits {
	p := pathLimits{conns: t.defaultConns(relay), connRate: l.MaxConnectionRate, msgRate: l.MaxMessageRate,
		perConn: l.MaxDeliveriesPerConnection, idle: t.cfg.IdleTimeout, failures: defaultFailuresBeforeDelay,
		rcpts: cmp.Or(l.MaxRecipientsPerTransaction, DefaultRecipientsPerTransaction)}
	if l.ConnectionLimit.IsSet() {
		p.conns = l.ConnectionLimit.N
	}
	if l.IdleTimeout > 0 && t.cfg.IdleTimeout >= 0 { // a negative Config.IdleTimeout turns reuse off
		p.idle = l.IdleTimeout
	}
	if n := l.ConsecutiveConnectionFailuresBeforeDelay; n > 0 {
		p.failures = n
	}
	return p
}

// defaultConns is the connection_limit of a path whose shaping sets none.
func (t *Transport) defaultConns(relay bool) int {
	if relay {
		return t.cfg.MaxConnsPerRelay
	}
	return t.cfg.MaxConnsPerDest
}

// shapedTLS is the route's direct TLS settings with what the shaping
// says: enable_tls sets the mode when the route does not, and
// enable_mta_sts or enable_dane = false turn those off. What no file sets
// keeps the defaults (OpportunisticInsecure, MTA-STS and DANE on).
func shapedTLS(dt DirectTLS, l shaping.Limits) DirectTLS {
	if dt.Mode == "" && l.EnableTLS != shaping.TLSUnset {
		dt.Mode = TLSMode(l.EnableTLS.String())
	}
	dt.DisableMTASTS = dt.DisableMTASTS || !l.EnableMTASTS.Or(true)
	dt.DisableDANE = dt.DisableDANE || !l.EnableDANE.Or(true)
	return dt
}

// newLimiter is a limiter for r, nil when r is unset. Without an explicit
// max_burst the burst is 1: events are spaced evenly, so no window of r's
// period ever holds more than its count (KumoMTA lets a period's whole
// count go at once; receivers that publish "N a minute" count windows).
func newLimiter(r shaping.Rate) *rate.Limiter {
	if !r.IsSet() {
		return nil
	}
	return rate.NewLimiter(rate.Every(r.Interval()), max(1, r.MaxBurst))
}

// retune makes lim enforce r, keeping what it has counted; it returns the
// limiter to use (nil when r is unset).
func retune(lim *rate.Limiter, r shaping.Rate, now time.Time) *rate.Limiter {
	switch {
	case !r.IsSet():
		return nil
	case lim == nil:
		return newLimiter(r)
	}
	lim.SetLimitAt(now, rate.Every(r.Interval()))
	lim.SetBurstAt(now, max(1, r.MaxBurst))
	return lim
}
