package app_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/postline/postline/internal/dnsclient"
	"github.com/postline/postline/internal/dnstest"
	"github.com/postline/postline/internal/smtptest"
	"github.com/postline/postline/internal/validation"
)

// BenchmarkValidationProbe validates 10,000 addresses over 100 domains
// whose MX hosts are a local SMTP server, 16 at once, with mailbox probing
// on and off in the same run: addresses a second, SMTP sessions opened per
// address, and p50/p99 of one address.
//
//	go test -run '^$' -bench BenchmarkValidationProbe -benchtime 1x -timeout 30m ./internal/app/
func BenchmarkValidationProbe(b *testing.B) {
	const domains, perDomain, workers = 100, 100, 16
	sink := smtptest.New(b, smtptest.Config{})
	dns := dnstest.New(b)
	for d := 0; d < domains; d++ {
		dns.AddMX(fmt.Sprintf("d%03d-corp.net", d), 10, fmt.Sprintf("mx.d%03d-corp.net", d))
		dns.AddA(fmt.Sprintf("mx.d%03d-corp.net", d), "127.0.0.1")
	}
	resolver, err := dnsclient.New(dnsclient.Config{Server: dns.Addr()})
	if err != nil {
		b.Fatal(err)
	}
	for _, probe := range []bool{false, true} {
		b.Run(fmt.Sprintf("probe=%t", probe), func(b *testing.B) {
			cfg := validation.Config{Resolver: resolver, LRUSize: -1}
			if probe {
				cfg.Probe = &validation.ProbeConfig{Helo: "bench.postline.test", Port: sink.Port(), AllowPrivate: true}
			}
			v, err := validation.New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			if probe {
				ctx = validation.WithMailboxCheck(ctx)
			}
			var lat []time.Duration
			sessions := sink.Sessions()
			n := 0
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				next := make(chan string)
				var mu sync.Mutex
				var wg sync.WaitGroup
				for w := 0; w < workers; w++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for addr := range next {
							start := time.Now()
							if _, err := v.Validate(ctx, validation.ModeStandard, addr); err != nil {
								b.Error(err)
							}
							d := time.Since(start)
							mu.Lock()
							lat = append(lat, d)
							mu.Unlock()
						}
					}()
				}
				for a := 0; a < perDomain; a++ {
					for d := 0; d < domains; d++ {
						next <- fmt.Sprintf("u%d-%d-%t@d%03d-corp.net", i, a, probe, d)
						n++
					}
				}
				close(next)
				wg.Wait()
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "addrs/s")
			b.ReportMetric(float64(sink.Sessions()-sessions)/float64(n), "sessions/addr")
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}
