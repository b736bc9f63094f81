package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/postline/postline/internal/validation"
)

type metrics struct {
	requests    *prometheus.CounterVec
	latency     *prometheus.HistogramVec
	validations *prometheus.CounterVec
	cache       *prometheus.CounterVec
	handler     http.Handler
}

func newMetrics(reg *prometheus.Registry) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "postline_http_requests_total", Help: "HTTP requests by route pattern, method and status.",
		}, []string{"route", "method", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "postline_http_request_duration_seconds", Help: "HTTP request latency by route pattern.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"route"}),
	}
	m.validations = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "postline_validations_total",
		Help: "Addresses validated over the API, by result (valid, invalid) and reason (\"\" when valid)."}, []string{"result", "reason"})
	m.cache = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "postline_validation_cache_total",
		Help: "Validated addresses answered from the cache (hit) or by DNS (miss)."}, []string{"result"})
	m.validations.WithLabelValues("valid", "")
	m.cache.WithLabelValues("hit")
	m.cache.WithLabelValues("miss")
	reg.MustRegister(m.requests, m.latency, m.validations, m.cache)
	// The process and Go collectors may already be registered by the caller.
	reg.Register(collectors.NewGoCollector())                                       //nolint:errcheck
	reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})) //nolint:errcheck
	m.handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	return m
}

func (m *metrics) observe(route, method string, status int, d time.Duration) {
	m.requests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	m.latency.WithLabelValues(route).Observe(d.Seconds())
}

// validated counts one validation result.
func (m *metrics) validated(r validation.Result) {
	result := "valid"
	if !r.IsValid {
		result = "invalid"
	}
	m.validations.WithLabelValues(result, r.Reason).Inc()
	if r.Cached {
		m.cache.WithLabelValues("hit").Inc()
	} else {
		m.cache.WithLabelValues("miss").Inc()
	}
}
