//go:build simnetbench

package simnet_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/postline/postline/internal/simnet"
)

// TestSimnetDeliveryBenchmark is issue 29's delivery benchmark: the built
// `postline serve` delivers POSTLINE_BENCH_MESSAGES messages (default
// 100,000) to the 1,000 domains of ten providers with published limits
// (bench_limits_test.go), told those limits by a shaping file. Messages
// are queued through the HTTP API in sends of POSTLINE_BENCH_BATCH
// recipients (default 1,000) while delivery runs. It reports the time
// from the first send request until the last message arrives against the
// lower bound the rates imply, and fails on any limit violation, any
// message received twice or any not received. SQLite; PostgreSQL when
// POSTLINE_TEST_DATABASE_URL is set. Run it with bench/simnet.sh.
func TestSimnetDeliveryBenchmark(t *testing.T) {
	total, batch := envInt(t, "POSTLINE_BENCH_MESSAGES", 100000), envInt(t, "POSTLINE_BENCH_BATCH", 1000)
	providers := onlyProviders(t, benchProviders(), os.Getenv("POSTLINE_BENCH_PROVIDERS"))
	cfg := simnet.Config{DiscardData: true}
	for _, p := range providers {
		cfg.Providers = append(cfg.Providers, p.cfg)
	}
	n := simnet.New(t, cfg)
	shaping := filepath.Join(t.TempDir(), "shaping.toml")
	if err := os.WriteFile(shaping, []byte(benchShaping(providers)), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServeWith(t, n, map[string]string{
		"POSTLINE_SHAPING_FILE":           shaping,
		"POSTLINE_RATE_DOMAIN_PER_MINUTE": "100000000",
	})
	byDomain := os.Getenv("POSTLINE_BENCH_ORDER") == "domain"
	rcpts := benchRecipients(n.Providers(), total, byDomain)
	t.Logf("%d messages to %d domains of %d providers, sends of %d recipients (by domain: %v); GOMAXPROCS %d; store %s",
		total, len(n.Domains()), len(providers), batch, byDomain, runtime.GOMAXPROCS(0), storeName())

	var queued atomic.Int64
	cpu0, load0 := cpuSample(s.pid), loadAverage()
	start := time.Now() // the clock starts as the first send request goes out
	intake := make(chan error, 1)
	go func() { intake <- s.queueAll(rcpts, batch, &queued) }()
	intakeDone := waitDelivered(t, n, total, start, intake, &queued, deadlineFor(providers, total))
	delivered := time.Now()
	time.Sleep(2 * time.Second) // a duplicate would come from a retry

	r := summarize(n, rcpts, start)
	r.intake = intakeDone.Sub(start)
	r.log(t, delivered.Sub(start))
	if cpu := cpuSample(s.pid); cpu.err == nil && cpu0.err == nil {
		used := cpu.d - cpu0.d
		t.Logf("postline serve used %.1f s of CPU in %.1f s (%.2f cores on average), %.2f ms per message, intake included; load average %s at the start, %s at the end",
			used.Seconds(), delivered.Sub(start).Seconds(), used.Seconds()/delivered.Sub(start).Seconds(),
			float64(used.Microseconds())/1000/float64(total), load0, loadAverage())
	}
	if r.duplicates > 0 || r.missing > 0 {
		t.Errorf("%d recipients received more than once, %d never", r.duplicates, r.missing)
	}
	n.CheckNoViolations(t)
}

// onlyProviders keeps the providers named in list (comma-separated;
// empty: all of them), to look at one provider's shaping alone.
func onlyProviders(t *testing.T, all []benchProvider, list string) []benchProvider {
	if list == "" {
		return all
	}
	var out []benchProvider
	for _, name := range strings.Split(list, ",") {
		i := slices.IndexFunc(all, func(p benchProvider) bool { return p.cfg.Name == strings.TrimSpace(name) })
		if i < 0 {
			t.Fatalf("POSTLINE_BENCH_PROVIDERS: no provider %q in the benchmark", name)
		}
		out = append(out, all[i])
	}
	return out
}

// benchRecipients are total recipients, one at each provider in turn and
// at each of its domains in turn, so that every send spans every provider
// and the queue, taken in order, asks all of them at once. byDomain
// (POSTLINE_BENCH_ORDER=domain) takes the domains in their order instead,
// as a list sorted by domain: a hundred recipients at one provider, then
// a hundred at the next.
func benchRecipients(providers []*simnet.Provider, total int, byDomain bool) []string {
	var domains []string
	for _, p := range providers {
		domains = append(domains, p.Domains()...)
	}
	out := make([]string, total)
	for i := range out {
		d := domains[i%len(domains)]
		if !byDomain {
			ds := providers[i%len(providers)].Domains()
			d = ds[(i/len(providers))%len(ds)]
		}
		out[i] = fmt.Sprintf("u%06d@%s", i, d)
	}
	return out
}

// queueAll sends rcpts through the API, batch at a time, one request after
// the other, counting the accepted recipients in queued.
func (s *serve) queueAll(rcpts []string, batch int, queued *atomic.Int64) error {
	client := &http.Client{Timeout: 2 * time.Minute}
	for i := 0; i < len(rcpts); i += batch {
		part := rcpts[i:min(i+batch, len(rcpts))]
		if err := s.queue(client, part); err != nil {
			return err
		}
		queued.Add(int64(len(part)))
	}
	return nil
}

// queue is one send of the same message to each of rcpts (one delivery
// each).
func (s *serve) queue(client *http.Client, rcpts []string) error {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	mw.WriteField("from", "news@shop.sender.test")
	mw.WriteField("subject", "simnet benchmark")
	mw.WriteField("text", "Hello from the delivery benchmark.")
	for _, r := range rcpts {
		mw.WriteField("to", r)
	}
	mw.Close()
	req, err := http.NewRequest("POST", "http://"+s.addr+"/api/domains/shop.sender.test/message", &buf)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.SetBasicAuth("alice", s.key)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 202 {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("send: %s %s", resp.Status, b)
	}
	io.Copy(io.Discard, resp.Body)
	return nil
}

// waitDelivered waits for total messages, logging progress every 15 s,
// and returns when the intake ended. It fails the test if the intake
// fails or the deadline passes first.
func waitDelivered(t *testing.T, n *simnet.Net, total int, start time.Time, intake <-chan error,
	queued *atomic.Int64, deadline time.Duration) time.Time {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- n.WaitForMessages(ctx, total) }()
	tick := time.NewTicker(15 * time.Second)
	defer tick.Stop()
	var intakeDone time.Time
	for {
		select {
		case err := <-intake:
			if err != nil {
				t.Fatalf("queueing: %v", err)
			}
			intakeDone = time.Now()
			t.Logf("%6.1fs all %d queued", time.Since(start).Seconds(), total)
			intake = nil
		case <-tick.C:
			t.Logf("%6.1fs queued %d, received %d, violations %d", time.Since(start).Seconds(),
				queued.Load(), n.Received(), len(n.Violations()))
		case err := <-done:
			if err != nil {
				report(t, n)
				t.Fatal(err)
			}
			if intakeDone.IsZero() {
				t.Fatal("every message arrived before the intake ended")
			}
			return intakeDone
		}
	}
}

// deadlineFor is how long the run may take: three times the slowest
// provider's bound, and five minutes more.
func deadlineFor(providers []benchProvider, total int) time.Duration {
	var d time.Duration
	for _, p := range providers {
		d = max(d, spacedBound(p.cfg.MessageRate, total/len(providers)+1))
	}
	return 3*d + 5*time.Minute
}

// benchResult is what the run measured.
type benchResult struct {
	providers           []providerResult
	received            int
	duplicates, missing int
	last                time.Time // the last message's arrival
	bound               time.Duration
	intake              time.Duration
	refusals            map[simnet.Cause]int
	start               time.Time
}

// providerResult is one provider's part.
type providerResult struct {
	name              string
	messages          int
	first, last       time.Time // first MAIL FROM, last arrival
	bound, spaced     time.Duration
	stats             simnet.ClientStats
	maxConns, perConn int
	rate              simnet.Rate
}

// summarize reads what the providers saw.
func summarize(n *simnet.Net, rcpts []string, start time.Time) benchResult {
	r := benchResult{refusals: map[simnet.Cause]int{}, start: start}
	want := map[string]int{}
	for _, x := range rcpts {
		want[domainOf(x)]++
	}
	seen := make(map[string]int, len(rcpts))
	local := netip.MustParseAddr("127.0.0.1")
	for _, p := range n.Providers() {
		pc := p.Config()
		pr := providerResult{name: p.Name(), stats: p.Stats(local), rate: pc.MessageRate,
			maxConns: pc.MaxConnections, perConn: pc.MaxMessagesPerConnection}
		for _, d := range p.Domains() {
			pr.messages += want[d]
		}
		pr.bound, pr.spaced = rateBound(pc.MessageRate, pr.messages), spacedBound(pc.MessageRate, pr.messages)
		for _, m := range p.Messages() {
			if pr.first.IsZero() || m.MailAt.Before(pr.first) {
				pr.first = m.MailAt
			}
			pr.last = later(pr.last, m.ReceivedAt)
			for _, to := range m.To {
				seen[to]++
			}
		}
		for _, x := range p.Refusals() {
			r.refusals[x.Cause]++
		}
		r.bound = max(r.bound, pr.bound)
		r.last = later(r.last, pr.last)
		r.providers = append(r.providers, pr)
	}
	for _, x := range rcpts {
		switch c := seen[x]; {
		case c == 0:
			r.missing++
		case c > 1:
			r.duplicates++
		}
		r.received += seen[x]
	}
	return r
}

// log writes the figures, per provider then in all, as Markdown tables
// for BENCHMARKS.md.
func (r benchResult) log(t *testing.T, waited time.Duration) {
	t.Logf("| provider | limits (per client address) | messages | conns at once (limit) | max in a rate window (limit) | most on one connection (limit) | connections | lower bound | spaced at the rate | first → last (from start) | ratio | violations |")
	t.Logf("|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, p := range r.providers {
		took := p.last.Sub(r.start)
		t.Logf("| %s | %s | %d | %d (%d) | %d (%d/%v) | %d (%s) | %d | %.1f s | %.1f s | %.1f → %.1f s | %.2f | %d |",
			p.name, limitsText(p), p.messages, p.stats.MaxConcurrent, p.maxConns, p.stats.MaxRate, p.rate.Count, p.rate.Per,
			p.stats.MaxPerConnection, orNone(p.perConn), p.stats.Connections, p.bound.Seconds(), p.spaced.Seconds(),
			p.first.Sub(r.start).Seconds(), took.Seconds(), ratio(p.bound, took), p.stats.Violations.Total())
	}
	took := r.last.Sub(r.start)
	t.Logf("intake: all queued after %.1f s", r.intake.Seconds())
	t.Logf("time from the first send request to the last arrival: %.1f s (waited %.1f s)", took.Seconds(), waited.Seconds())
	t.Logf("lower bound (slowest provider's rate): %.1f s; ratio %.3f (goal >= 0.8)", r.bound.Seconds(), ratio(r.bound, took))
	t.Logf("received %d for %d recipients; duplicates %d, missing %d; refusals by cause %v",
		r.received, r.received-r.duplicates, r.duplicates, r.missing, r.refusals)
}

func limitsText(p providerResult) string {
	s := fmt.Sprintf("%d conns, %d/%v", p.maxConns, p.rate.Count, p.rate.Per)
	if p.perConn > 0 {
		s += fmt.Sprintf(", %d/conn", p.perConn)
	}
	return s
}

func orNone(n int) string {
	if n == 0 {
		return "none"
	}
	return strconv.Itoa(n)
}

func ratio(bound, took time.Duration) float64 {
	if took <= 0 {
		return 0
	}
	return bound.Seconds() / took.Seconds()
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func storeName() string {
	if os.Getenv("POSTLINE_TEST_DATABASE_URL") != "" {
		return "PostgreSQL"
	}
	return "SQLite"
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// cpuUse is a process's CPU time (user and system) so far, or why it
// could not be read.
type cpuUse struct {
	d   time.Duration
	err error
}

// cpuSample reads pid's CPU time from /proc (Linux; clock ticks of 10 ms,
// USER_HZ 100 on every Linux the project runs on).
func cpuSample(pid int) cpuUse {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return cpuUse{err: err}
	}
	// The fields after the command name, which is in parentheses and may
	// hold spaces: state is field 3, utime 14 and stime 15.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return cpuUse{err: fmt.Errorf("short /proc/%d/stat", pid)}
	}
	var ticks int64
	for _, v := range f[11:13] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return cpuUse{err: err}
		}
		ticks += n
	}
	return cpuUse{d: time.Duration(ticks) * 10 * time.Millisecond}
}

// loadAverage is the 1-, 5- and 15-minute load averages, for the record
// of how busy the machine was.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}
