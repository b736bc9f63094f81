package sending

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/postline/postline/internal/delivery"
)

// Metrics are the delivery counters and timings the workers keep. Every
// outcome and transport series exists from the start (at 0), so a
// dashboard's rate() has a baseline before the first failure.
type Metrics struct {
	deliveries *prometheus.CounterVec
	attempt    *prometheus.HistogramVec
	sign       prometheus.Histogram
	claims     *prometheus.CounterVec
}

// Outcomes counted by postline_deliveries_total.
var outcomeStates = []string{StateDelivered, StateDeferred, StateBounced, StateFailed}

// Claim results counted by postline_delivery_claims_total.
var claimResults = []string{"claimed", "empty", "failed"}

// Transports: how a delivery left ("none" when it failed before sending).
var transports = []string{"direct", "smtp", "none"}

// NewMetrics registers the delivery metrics with reg (nil keeps them
// unregistered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "postline_deliveries_total",
			Help: "Delivery attempts by outcome (delivered, deferred, bounced, failed), transport (direct, smtp; none before sending) " +
				"and tls (none: plain text or no session; tls: encrypted, certificate not verified; verified: verified without a policy; " +
				"mta-sts, dane: verified under that policy)."},
			[]string{"outcome", "transport", "tls"}),
		attempt: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "postline_delivery_attempt_seconds",
			Help:    "Time of one SMTP delivery attempt, connection included, by transport.",
			Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}}, []string{"transport"}),
		sign: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "postline_dkim_sign_seconds",
			Help: "Time to DKIM-sign one message.", Buckets: []float64{0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1}}),
		// Each claim is a transaction on the shared queue: with several
		// processes on one database, claims per delivered message (and the
		// share that came back empty) is what their contention costs.
		claims: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "postline_delivery_claims_total",
			Help: "Claim transactions on the delivery queue by result (claimed: took at least one due delivery; " +
				"empty: none was due or free; failed: the database answered an error)."}, []string{"result"}),
	}
	for _, r := range claimResults {
		m.claims.WithLabelValues(r)
	}
	for _, o := range outcomeStates {
		for _, t := range transports {
			for _, l := range delivery.TLSLabels {
				m.deliveries.WithLabelValues(o, t, l)
			}
		}
	}
	for _, t := range transports[:2] {
		m.attempt.WithLabelValues(t)
	}
	if reg != nil {
		reg.MustRegister(m.deliveries, m.attempt, m.sign, m.claims)
	}
	return m
}

func (m *Metrics) outcome(state, transport, tls string) {
	if m != nil {
		m.deliveries.WithLabelValues(state, transport, tls).Inc()
	}
}

func (m *Metrics) attempted(transport string, d time.Duration) {
	if m != nil {
		m.attempt.WithLabelValues(transport).Observe(d.Seconds())
	}
}

func (m *Metrics) signed(d time.Duration) {
	if m != nil {
		m.sign.Observe(d.Seconds())
	}
}

// claim counts one claim transaction that took n deliveries or failed.
func (m *Metrics) claim(n int, err error) {
	if m == nil {
		return
	}
	switch {
	case err != nil:
		m.claims.WithLabelValues("failed").Inc()
	case n == 0:
		m.claims.WithLabelValues("empty").Inc()
	default:
		m.claims.WithLabelValues("claimed").Inc()
	}
}
