package app_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/testutil"
)

// BenchmarkLogs seeds POSTLINE_BENCH_EVENTS entries (default 1,000,000)
// for one domain, and a tenth as many for each of two other domains, then
// measures over loopback HTTP, on SQLite and (when configured) PostgreSQL:
// the p50/p99 latency of filtered list pages (default limit 1000, total
// included), and the time and peak RSS growth of streaming 500,000 entries.
//
//	go test -run '^$' -bench BenchmarkLogs -benchtime 40x -timeout 2h ./internal/app/
func BenchmarkLogs(b *testing.B) {
	n := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("POSTLINE_BENCH_EVENTS")); err == nil && v > 0 {
		n = v
	}
	for _, d := range testutil.Dialects() {
		b.Run(string(d), func(b *testing.B) {
			env := apitest.Start(b, d, func(c *config.Config) {
				c.RateDomainPerMinute = 1 << 30
				c.LogRetention = 0 // the seeded month must stay put
			})
			alice := env.NewUser("alice")
			dom := env.NewDomain(alice, "alice.example")
			bob := env.NewUser("bob")
			start := time.Now()
			benchSeed(b, env, dom.ID, "alice.example", n, 1)
			for i, name := range []string{"bob.example", "carol.example"} {
				other := env.NewDomain(bob, name)
				benchSeed(b, env, other.ID, name, n/10, uint64(i+2))
			}
			took := time.Since(start)
			b.Logf("%s: seeded %d entries (%d for the measured domain) in %s (%.0f/s)", d, n+n/5, n, took.Round(time.Second),
				float64(n+n/5)/took.Seconds())
			// What the maintenance pass does every 10 minutes: merge the
			// hourly count stripes the seeding connections wrote.
			if err := store.NewEvents(env.App.DB).CompactCounts(context.Background(), time.Now()); err != nil {
				b.Fatal(err)
			}
			if d == store.Postgres {
				// What autovacuum would do after a bulk load: statistics for
				// the planner, visibility map for index-only counts.
				if _, err := env.App.DB.SQL().Exec(`VACUUM ANALYZE events`); err != nil {
					b.Fatal(err)
				}
			} else if _, err := env.App.DB.SQL().Exec(`ANALYZE`); err != nil {
				b.Fatal(err)
			}
			// A recipient with several entries and a day's range near the end.
			sample, err := store.NewEvents(env.App.DB).List(context.Background(), event.Filter{DomainID: dom.ID, Limit: 1, Offset: n / 3})
			if err != nil || len(sample) == 0 {
				b.Fatal(err)
			}
			now := time.Now().UTC()
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
			for _, q := range []struct{ name, query string }{
				{"page-unfiltered", ""},
				{"page-100", "limit=100"},
				{"recipient", "recipient=" + url.QueryEscape(strings.ToUpper(sample[0].Recipient))},
				{"event_type", "event_type=opened"},
				{"time-range-1d", "start=" + now.Add(-36*time.Hour).Format(time.RFC3339) + "&end=" + now.Add(-12*time.Hour).Format(time.RFC3339)},
				{"subject-substring", "subject=invoice"},
				{"type+range+offset", "event_type=delivered&start=" + now.Add(-10*24*time.Hour).Format("2006-01-02") + "&offset=5000"},
			} {
				b.Run(q.name, func(b *testing.B) {
					lat := make([]time.Duration, 0, b.N)
					for b.Loop() {
						// A wake-up marks the domain's cached pages old: every
						// request reads the database, as a first read does.
						env.App.Events.Wake(dom.ID)
						t0 := time.Now()
						benchGet(b, client, env.URL+"/api/domains/alice.example/log?"+q.query, alice.Auth())
						lat = append(lat, time.Since(t0))
					}
					reportLatency(b, lat)
				})
			}
			// The same page asked again while the log is unchanged: from memory.
			b.Run("page-100-repeat", func(b *testing.B) {
				lat := make([]time.Duration, 0, b.N)
				for b.Loop() {
					t0 := time.Now()
					benchGet(b, client, env.URL+"/api/domains/alice.example/log?limit=100", alice.Auth())
					lat = append(lat, time.Since(t0))
				}
				reportLatency(b, lat)
			})
			if n >= 500_000 {
				b.Run("stream-500k", func(b *testing.B) {
					for b.Loop() {
						benchStream(b, env.URL+"/api/domains/alice.example/log/stream?limit=500000", alice.Auth())
					}
				})
			}
		})
	}
}

func benchSeed(b *testing.B, env *apitest.Env, domainID int64, name string, n int, seed uint64) {
	ctx := context.Background()
	now := time.Now().UTC()
	batch := make([]event.Entry, 0, 5000)
	for e := range event.Synthetic(event.SyntheticParams{DomainID: domainID, Domain: name,
		From: now.Add(-30 * 24 * time.Hour), To: now, Count: n, Seed: seed}) {
		if batch = append(batch, e); len(batch) == cap(batch) {
			if err := env.App.Events.Record(ctx, batch...); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if err := env.App.Events.Record(ctx, batch...); err != nil {
		b.Fatal(err)
	}
}

func benchGet(b *testing.B, client *http.Client, u, auth string) {
	req, _ := http.NewRequest("GET", u, nil)
	req.Header.Set("Authorization", auth)
	resp, err := client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		b.Fatalf("%s: status %d", u, resp.StatusCode)
	}
}

// benchStream reads a whole stream frame by frame, as a client would, and
// reports its time, size and the process's peak RSS growth (server and
// client share the process, so this bounds the server's).
func benchStream(b *testing.B, u, auth string) {
	runtime.GC()
	debug.FreeOSMemory()
	os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) // reset VmHWM to the current RSS
	rss0 := procStatusKB("VmRSS")
	t0 := time.Now()
	req, _ := http.NewRequest("GET", u, nil)
	req.Header.Set("Authorization", auth)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReaderSize(resp.Body, 1<<20)
	var bytes, frames int
	total := ""
	for {
		line, err := r.ReadSlice('\n')
		bytes += len(line)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			break
		}
		if strings.HasPrefix(string(line), "event: logs") {
			frames++
		}
		if strings.HasPrefix(string(line), `data: {"total":`) {
			total = strings.TrimSpace(string(line))
		}
	}
	took := time.Since(t0)
	if total != `data: {"total":500000}` {
		b.Fatalf("stream ended with %q after %d frames", total, frames)
	}
	peak := procStatusKB("VmHWM")
	b.ReportMetric(took.Seconds(), "s/stream")
	b.ReportMetric(float64(bytes)/(1<<20), "MiB/stream")
	b.ReportMetric(float64(peak-rss0)/1024, "peak-RSS-growth-MiB")
}

func procStatusKB(field string) int64 {
	raw, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			n, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			return n
		}
	}
	return 0
}

func reportLatency(b *testing.B, lat []time.Duration) {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	}
}
