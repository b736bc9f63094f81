package app_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptrace"
	"os"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/store"
)

// BenchmarkConsolePages: time to first byte and bytes transferred of each
// console page over loopback, signed in, with POSTLINE_BENCH_EVENTS log
// entries (default 1M) for the domain; the stylesheet and script count
// once (they are cached for ever afterwards).
//
//	go test -run '^$' -bench BenchmarkConsolePages -benchtime 20x -timeout 30m ./internal/app/
func BenchmarkConsolePages(b *testing.B) {
	n := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("POSTLINE_BENCH_EVENTS")); err == nil && v > 0 {
		n = v
	}
	env := apitest.Start(b, store.SQLite, func(c *config.Config) { c.LogRetention = 0 })
	alice := env.NewUser("alice")
	dom := env.NewDomain(alice, "alice.example")
	benchSeed(b, env, dom.ID, "alice.example", n, 1)
	if err := store.NewEvents(env.App.DB).CompactCounts(context.Background(), time.Now()); err != nil {
		b.Fatal(err)
	}
	sample, err := env.App.Events.List(context.Background(), event.Filter{DomainID: dom.ID, Limit: 1})
	if err != nil || len(sample.Entries) == 0 {
		b.Fatal(err)
	}
	br := &browser{t: &testing.T{}, base: env.URL}
	br.signIn("alice", alice.Key, "/")
	pages := []string{"/", "/domains", "/domains/alice.example", "/domains/alice.example/log",
		"/domains/alice.example/log?type=opened", "/domains/alice.example/messages/" + sample.Entries[0].MessageID,
		"/domains/alice.example/suppressions", "/domains/alice.example/webhooks", "/keys", "/validation"}
	client := &http.Client{}
	for _, p := range pages {
		b.Run(p, func(b *testing.B) {
			var ttfb []time.Duration
			var size, assets int64
			for i := 0; i < b.N; i++ {
				req, _ := http.NewRequest("GET", env.URL+p, nil)
				req.AddCookie(br.cookie)
				start := time.Now()
				var first time.Duration
				req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
					GotFirstResponseByte: func() { first = time.Since(start) }}))
				resp, err := client.Do(req)
				if err != nil || resp.StatusCode != 200 {
					b.Fatalf("%s: %v %v", p, err, resp)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				ttfb = append(ttfb, first)
				size = int64(len(body))
				for _, a := range regexp.MustCompile(`(?:href|src)="(/static/[^"]+)"`).FindAllStringSubmatch(string(body), -1) {
					if i == 0 {
						r, err := client.Get(env.URL + a[1])
						if err == nil {
							n, _ := io.Copy(io.Discard, r.Body)
							r.Body.Close()
							assets += n
						}
					}
				}
			}
			slices.Sort(ttfb)
			b.ReportMetric(float64(ttfb[len(ttfb)/2].Microseconds())/1000, "ttfb-p50-ms")
			b.ReportMetric(float64(ttfb[len(ttfb)-1].Microseconds())/1000, "ttfb-max-ms")
			b.ReportMetric(float64(size+assets)/1024, "KiB")
		})
	}
}
