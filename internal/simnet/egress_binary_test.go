package simnet_test

import (
	"context"
	"fmt"
	"maps"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/simnet"
)

// source is an egress source of a test's egress file.
type source struct {
	name, addr, ehlo string
	weight           int
	warmup           string // the warmup and warmup_start lines, or ""
}

// startPooled runs serve against n with an egress file holding sources in
// one pool "main", on which shop.sender.test sends. vars add to serve's
// environment.
func startPooled(t *testing.T, n *simnet.Net, sources []source, vars map[string]string) *serve {
	t.Helper()
	var b strings.Builder
	var entries []string
	for _, src := range sources {
		fmt.Fprintf(&b, "[source.%q]\nsource_address = %q\nehlo_domain = %q\n%s\n", src.name, src.addr, src.ehlo, src.warmup)
		entries = append(entries, fmt.Sprintf("{name = %q, weight = %d}", src.name, src.weight))
	}
	fmt.Fprintf(&b, "[pool.\"main\"]\nentries = [%s]\n", strings.Join(entries, ", "))
	path := filepath.Join(t.TempDir(), "egress.toml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"POSTLINE_EGRESS_FILE": path}
	for k, v := range vars {
		env[k] = v
	}
	return startServeSetup(t, n, env, func(s *serve) {
		s.cli(t, "domain", "update", "shop.sender.test", "--pool", "main")
	})
}

// recipients are count addresses spread over domains in turn.
func recipients(count int, domains []string) []string {
	out := make([]string, count)
	for i := range out {
		out[i] = fmt.Sprintf("user%d@%s", i, domains[i%len(domains)])
	}
	return out
}

// sendAll queues rcpts 50 to a request.
func (s *serve) sendAll(t *testing.T, rcpts []string) {
	t.Helper()
	for i := 0; i < len(rcpts); i += 50 {
		s.send(t, rcpts[i:min(i+50, len(rcpts))])
	}
}

// A pool of three sources weighted 1:2:3 on three loopback addresses
// carries 1,000 messages to two sites (two providers) in those
// proportions, ±10% of each source's share: as the providers count them
// by client address, and as the delivery log's details.source and
// details.source_address say. Each message arrives once, from the address
// and with the EHLO name of the source its log entry names.
//
// The sites allow one connection per client address (connection_limit =
// 1 in the shaping file, and the providers refuse a second), so the
// source with the largest weight turns deliveries away for want of a
// connection more often than the others: they wait for their turn, and
// the weights still hold (a delivery that waits gives its pick back to
// the round robin; it used to pick again, and 1:2:3 became 207:365:428).
// No provider sees two connections at once from one source address.
func TestBinaryWeightedPool(t *testing.T) {
	t.Parallel()
	n := simnet.New(t, simnet.Config{DiscardData: true, Providers: []simnet.ProviderConfig{
		{Name: "alpha", Domains: 10, MaxConnections: 1},
		{Name: "beta", Domains: 10, MaxConnections: 1},
	}})
	sources := []source{
		{name: "s1", addr: "127.0.0.50", ehlo: "mta1.sender.test", weight: 1},
		{name: "s2", addr: "127.0.0.51", ehlo: "mta2.sender.test", weight: 2},
		{name: "s3", addr: "127.0.0.52", ehlo: "mta3.sender.test", weight: 3},
	}
	shaping := filepath.Join(t.TempDir(), "shaping.toml")
	if err := os.WriteFile(shaping, []byte("[\"default\"]\nconnection_limit = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startPooled(t, n, sources, map[string]string{"POSTLINE_SHAPING_FILE": shaping})
	rcpts := recipients(1000, n.Domains())
	s.sendAll(t, rcpts)
	waitAll(t, n, rcpts)

	log := byRecipient(s.entries(t, "delivered"))
	seen := map[string]int{}   // by source, per the providers
	logged := map[string]int{} // by source, per the log
	total := 0
	for _, src := range sources {
		total += src.weight
	}
	for _, src := range sources {
		addr := netip.MustParseAddr(src.addr)
		for _, p := range n.Providers() {
			seen[src.name] += p.Stats(addr).Messages
		}
	}
	for _, m := range n.Messages() {
		es := log[strings.ToLower(m.To[0])]
		if len(es) != 1 {
			t.Errorf("%s has %d delivered entries, want 1", m.To[0], len(es))
			continue
		}
		e := es[0]
		logged[e.str("source")]++
		i := sourceIndex(sources, e.str("source"))
		if i < 0 {
			t.Errorf("%s: details.source = %q, not a source of the pool", m.To[0], e.str("source"))
			continue
		}
		if e.str("source_address") != sources[i].addr || m.Client.String() != sources[i].addr || m.Helo != sources[i].ehlo {
			t.Errorf("%s: logged source %s, source_address %q; the provider saw it from %v with EHLO %s; want %s and %s",
				m.To[0], e.str("source"), e.str("source_address"), m.Client, m.Helo, sources[i].addr, sources[i].ehlo)
		}
	}
	if len(log) != len(rcpts) {
		t.Errorf("%d recipients have delivered entries, want %d", len(log), len(rcpts))
	}
	for _, src := range sources {
		want := float64(len(rcpts)*src.weight) / float64(total)
		for what, got := range map[string]int{"the providers saw": seen[src.name], "the log says": logged[src.name]} {
			if math.Abs(float64(got)-want) > 0.1*want {
				t.Errorf("source %s (weight %d of %d): %s %d messages, want %.0f ±10%%", src.name, src.weight, total, what, got, want)
			}
		}
	}
	t.Logf("by source: the providers saw %v, the log says %v", seen, logged)
	for _, p := range n.Providers() {
		for _, src := range sources {
			t.Logf("%s from %s: %d messages", p.Name(), src.name, p.Stats(netip.MustParseAddr(src.addr)).Messages)
		}
	}
	n.CheckNoViolations(t)
	if local := netip.MustParseAddr("127.0.0.1"); n.Provider("alpha").Stats(local).Connections+n.Provider("beta").Stats(local).Connections != 0 {
		t.Error("a connection came from 127.0.0.1, an address of no source")
	}
}

func sourceIndex(sources []source, name string) int {
	for i, s := range sources {
		if s.name == name {
			return i
		}
	}
	return -1
}

// skipNearMidnight skips a warm-up test that could cross a UTC midnight,
// when the caps start again.
func skipNearMidnight(t *testing.T) {
	now := time.Now().UTC()
	if left := now.Truncate(24 * time.Hour).Add(24 * time.Hour).Sub(now); left < 3*time.Minute {
		t.Skipf("%v to UTC midnight: the warm-up day would change during the test", left.Round(time.Second))
	}
}

// warmup is the warm-up lines of a source starting today (UTC).
func warmup(steps string) string {
	return fmt.Sprintf("warmup = [%s]\nwarmup_start = %q\n", steps, time.Now().UTC().Format("2006-01-02"))
}

// queued is the PENDING and DEFERRED counts of shop.sender.test in
// `postline queue list`.
func (s *serve) queued(t *testing.T) (pending, deferred int) {
	t.Helper()
	out := s.cli(t, "queue", "list")
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[0] == "shop.sender.test" {
			p, err1 := strconv.Atoi(f[1])
			d, err2 := strconv.Atoi(f[2])
			if err1 != nil || err2 != nil {
				t.Fatalf("queue list: %q", line)
			}
			return p, d
		}
	}
	t.Fatalf("queue list does not list shop.sender.test:\n%s", out)
	return 0, 0
}

// countEvents is how many entries of each event type the log holds.
func countEvents(entries []logEntry) map[string]int {
	out := map[string]int{}
	for _, e := range entries {
		out[e.EventType]++
	}
	return out
}

// A source warming up at 7 a day, alone in its pool, sends exactly 7 of
// 20 messages today; the 13 others wait: no attempt (no send, deferred
// or failure entry), still pending in `postline queue list`, and nothing
// more reaches the provider.
func TestBinaryWarmupCapWaits(t *testing.T) {
	t.Parallel()
	skipNearMidnight(t)
	n := simnet.New(t, simnet.Config{Providers: []simnet.ProviderConfig{{Name: "inbox", Domains: 5}}})
	p := n.Provider("inbox")
	src := source{name: "new", addr: "127.0.0.53", ehlo: "new.sender.test", weight: 1, warmup: warmup(`"7/day", "100/day"`)}
	s := startPooled(t, n, []source{src}, nil)
	rcpts := recipients(20, p.Domains())
	s.sendAll(t, rcpts)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.WaitForMessages(ctx, 7); err != nil {
		t.Fatal(err)
	}
	// The others are turned away at once; give them time to go wrongly.
	time.Sleep(3 * time.Second)
	if got := n.Received(); got != 7 {
		t.Errorf("the provider received %d messages, want the cap, 7", got)
	}
	if st := p.Stats(netip.MustParseAddr(src.addr)); st.Messages != 7 {
		t.Errorf("%d messages from the source's address %s, want 7", st.Messages, src.addr)
	}
	entries := s.entries(t, "")
	events := countEvents(entries)
	if events["delivered"] != 7 || events["send"] != 7 || events["queued"] != 20 {
		t.Errorf("log entries by type %v; want 20 queued, 7 send and 7 delivered", events)
	}
	for _, typ := range []string{"deferred", "temporary_fail", "permanent_fail", "failed", "bounced"} {
		if events[typ] != 0 {
			t.Errorf("%d %s entries: a delivery waiting for the warm-up cap is not an attempt", events[typ], typ)
		}
	}
	for _, e := range entries {
		if e.EventType == "delivered" && (e.str("source") != "new" || e.str("source_address") != src.addr) {
			t.Errorf("delivered to %s through source %q at %q, want new at %s", e.Recipient, e.str("source"), e.str("source_address"), src.addr)
		}
	}
	if pending, deferred := s.queued(t); pending != 13 || deferred != 0 {
		t.Errorf("queue list: %d pending, %d deferred; want 13 waiting, none deferred", pending, deferred)
	}
}

// A pool of a source warming up at 5 a day (weight 3) and one without a
// cap (weight 1): of 40 messages, exactly 5 go through the first, the
// rest through the second, all today, none deferred.
func TestBinaryWarmupSkipsFullSource(t *testing.T) {
	t.Parallel()
	skipNearMidnight(t)
	n := simnet.New(t, simnet.Config{Providers: []simnet.ProviderConfig{{Name: "inbox", Domains: 5}}})
	p := n.Provider("inbox")
	sources := []source{
		{name: "new", addr: "127.0.0.54", ehlo: "new.sender.test", weight: 3, warmup: warmup(`"5/day"`)},
		{name: "old", addr: "127.0.0.55", ehlo: "old.sender.test", weight: 1},
	}
	s := startPooled(t, n, sources, nil)
	rcpts := recipients(40, p.Domains())
	s.sendAll(t, rcpts)
	waitAll(t, n, rcpts)

	for _, src := range sources {
		want := map[string]int{"new": 5, "old": 35}[src.name]
		if st := p.Stats(netip.MustParseAddr(src.addr)); st.Messages != want {
			t.Errorf("source %s (%s): the provider saw %d messages, want %d", src.name, src.addr, st.Messages, want)
		}
	}
	entries := s.entries(t, "")
	bySource := map[string]int{}
	for _, e := range entries {
		if e.EventType == "delivered" {
			bySource[e.str("source")+" "+e.str("source_address")]++
		}
	}
	if want := map[string]int{"new 127.0.0.54": 5, "old 127.0.0.55": 35}; !maps.Equal(bySource, want) {
		t.Errorf("delivered entries by details.source and source_address %v, want %v", bySource, want)
	}
	if events := countEvents(entries); events["deferred"] != 0 || events["temporary_fail"] != 0 || events["send"] != 40 {
		t.Errorf("log entries by type %v; want 40 send, no deferred or temporary_fail", events)
	}
}
