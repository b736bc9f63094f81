package app_test

import (
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/store"
)

// BenchmarkRequests compares, in one run, an unauthenticated endpoint
// (/healthz) with an authenticated, rate-limited one that reads a domain
// (GET /api/domains/{domain}) and with a cached single validation, over
// loopback HTTP with keep-alive, to show what authentication + rate
// limiting + the ownership lookup cost, and what a cache hit costs.
//
//	go test -run '^$' -bench BenchmarkRequests -benchtime 5000x ./internal/app/
func BenchmarkRequests(b *testing.B) {
	env := apitest.Start(b, store.SQLite, func(c *config.Config) {
		c.RateDomainPerMinute, c.RateValidationPerHour = 1<<30, 1<<30
	})
	u := env.NewUser("bench")
	env.NewDomain(u, "bench.example")
	env.DNS.AddMX("acme-mail.com", 10, "mx.acme-mail.com")
	for _, c := range []struct{ name, method, path, auth, body string }{
		{"healthz", "GET", "/healthz", "", ""},
		{"authenticated", "GET", "/api/domains/bench.example", u.Auth(), ""},
		{"validate-cached", "POST", "/api/email/validate", u.Auth(), `{"email":"jane@acme-mail.com"}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			lat := make([]time.Duration, 0, b.N)
			var mu sync.Mutex
			b.SetParallelism(4)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				local := []time.Duration{}
				for pb.Next() {
					req, _ := http.NewRequest(c.method, env.URL+c.path, strings.NewReader(c.body))
					if c.auth != "" {
						req.Header.Set("Authorization", c.auth)
					}
					start := time.Now()
					resp, err := client.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					resp.Body.Close()
					if resp.StatusCode != 200 {
						b.Errorf("status %d", resp.StatusCode)
						return
					}
					local = append(local, time.Since(start))
				}
				mu.Lock()
				lat = append(lat, local...)
				mu.Unlock()
			})
			b.StopTimer()
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			if len(lat) > 0 {
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
			}
		})
	}
}
