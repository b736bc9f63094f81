package webhook

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the dispatcher's counters: posts by outcome, and the lag of
// each post (from the oldest entry it carries being logged to its post).
type Metrics struct {
	posts *prometheus.CounterVec
	lag   prometheus.Histogram
}

// NewMetrics registers the webhook metrics with reg (nil: unregistered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		posts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "postline_webhook_posts_total",
			Help: "Webhook posts by outcome: ok (2xx) or failed (error or another status)."}, []string{"outcome"}),
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "postline_webhook_lag_seconds",
			Help:    "Time from the oldest log entry of a post being recorded to the post.",
			Buckets: []float64{0.1, 0.5, 1, 2, 5, 10, 30, 60, 300, 900, 3600}}),
	}
	m.posts.WithLabelValues("ok")
	m.posts.WithLabelValues("failed")
	if reg != nil {
		reg.MustRegister(m.posts, m.lag)
	}
	return m
}

func (m *Metrics) posted(ok bool, lag time.Duration) {
	if m == nil {
		return
	}
	outcome := "ok"
	if !ok {
		outcome = "failed"
	}
	m.posts.WithLabelValues(outcome).Inc()
	m.lag.Observe(max(lag, 0).Seconds())
}
