package app

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/postline/postline/internal/sending"
	"github.com/postline/postline/internal/store"
)

// dnsMetrics is postline_dns_lookup_seconds: queries sent to the resolver
// (cache hits are not queries), by type and outcome.
func dnsMetrics(reg prometheus.Registerer) func(qtype, outcome string, d time.Duration) {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "postline_dns_lookup_seconds",
		Help:    "DNS queries sent to the resolver, by record type and outcome (ok, not_found, no_data, temporary_failure).",
		Buckets: []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 4}}, []string{"qtype", "outcome"})
	for _, qt := range []string{"MX", "A", "AAAA", "TXT", "CNAME"} {
		h.WithLabelValues(qt, "ok")
	}
	reg.MustRegister(h)
	return func(qtype, outcome string, d time.Duration) { h.WithLabelValues(qtype, outcome).Observe(d.Seconds()) }
}

// queueCollector exports postline_queue_messages{state} at each scrape from
// the deliveries table's partial indexes (the cost follows the queue, not
// the history). Every state is exported, 0 included.
type queueCollector struct {
	q    *sending.Queue
	desc *prometheus.Desc
}

func newQueueCollector(db *store.DB) *queueCollector {
	return &queueCollector{q: sending.NewQueue(store.NewQueue(db), nil),
		desc: prometheus.NewDesc("postline_queue_messages",
			"Deliveries waiting in the queue of every domain: queued (first attempt), deferred (after a failed one), in_flight (being attempted).",
			[]string{"state"}, nil)}
}

// Describe implements prometheus.Collector.
func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	counts, err := c.q.Counts(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.desc, err)
		return
	}
	var queued, deferred, inFlight int
	for _, n := range counts {
		queued, deferred, inFlight = queued+n.Queued, deferred+n.Deferred, inFlight+n.InFlight
	}
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(queued), "queued")
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(deferred), "deferred")
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(inFlight), "in_flight")
}
