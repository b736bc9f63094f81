package simnet_test

import (
	"fmt"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
