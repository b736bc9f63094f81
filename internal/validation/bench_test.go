package validation_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/postline/postline/internal/dnsclient"
	"github.com/postline/postline/internal/dnstest"
	"github.com/postline/postline/internal/validation"
)

// benchValidator is a validator on the real clock against a dnstest
// server holding 10 mail domains.
func benchValidator(b *testing.B) *validation.Validator {
	b.Helper()
	srv := dnstest.New(b)
	for d := range 10 {
		srv.AddMX(fmt.Sprintf("bench%d.com", d), 10, "mx.bench.com")
	}
	res, err := dnsclient.New(dnsclient.Config{Server: srv.Addr(), Timeout: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	v, err := validation.New(validation.Config{Resolver: res, Cache: validation.NewMemoryCache()})
	if err != nil {
		b.Fatal(err)
	}
	return v
}

// BenchmarkValidateBatch100 validates batches of 100 distinct, uncached
// addresses over 10 domains (DNS answers are cached by dnsclient after
// the first batch, as in production) and reports batch latency
// percentiles.
func BenchmarkValidateBatch100(b *testing.B) {
	v := benchValidator(b)
	ctx := context.Background()
	emails := make([]string, 100)
	var lat []time.Duration
	n := 0
	for b.Loop() {
		for i := range emails {
			emails[i] = fmt.Sprintf("user%d.%d@bench%d.com", n, i, i%10)
		}
		n++
		start := time.Now()
		_, sum, err := v.ValidateBatch(ctx, validation.ModeStandard, emails)
		lat = append(lat, time.Since(start))
		if err != nil || sum.Validated != 100 || sum.Valid != 100 {
			b.Fatalf("batch %d: %+v %v", n, sum, err)
		}
	}
	reportPercentiles(b, lat)
}

// BenchmarkValidateCached validates one address that is in the LRU.
func BenchmarkValidateCached(b *testing.B) {
	v := benchValidator(b)
	ctx := context.Background()
	if _, err := v.Validate(ctx, validation.ModeStandard, "jane@bench1.com"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		r, err := v.Validate(ctx, validation.ModeStandard, "jane@bench1.com")
		if err != nil || !r.Cached {
			b.Fatalf("Cached=%v err=%v", r.Cached, err)
		}
	}
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds())
	}
	b.ReportMetric(pct(0.50), "p50-µs/batch")
	b.ReportMetric(pct(0.99), "p99-µs/batch")
}
