package inboundpost

import "github.com/prometheus/client_golang/prometheus"

// Metrics count the posts' tries by outcome: posted (2xx), retried (a
// failure that will be tried again), failed (refused for good, or given
// up), dropped (the receipt was never recorded: nothing posted).
type Metrics struct {
	posts *prometheus.CounterVec
}

// The outcomes counted.
var outcomes = []string{StatePosted, "retried", StateFailed, StateDropped}

// NewMetrics registers the metrics with reg (nil: unregistered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{posts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "postline_inbound_posts_total",
		Help: "Posts of received mail to routes' URLs (forwards, store notifications) by outcome: posted, retried, failed, dropped."},
		[]string{"outcome"})}
	for _, o := range outcomes {
		m.posts.WithLabelValues(o)
	}
	if reg != nil {
		reg.MustRegister(m.posts)
	}
	return m
}

func (m *Metrics) count(outcome string) {
	if m != nil {
		m.posts.WithLabelValues(outcome).Inc()
	}
}
