package delivery_test

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/postline/postline/internal/delivery"
	"github.com/postline/postline/internal/egress"
	"github.com/postline/postline/internal/smtptest"
)

const egressFile = `
[source."ip-2"]
source_address = "127.0.0.2"
ehlo_domain = "mta2.postline.test"

[source."ip-3"]
source_address = "127.0.0.3"
ehlo_domain = "mta3.postline.test"
warmup = ["3/day", "5/day"]
warmup_start = "2025-03-01"

[pool."main"]
entries = [{name = "ip-2", weight = 1}, {name = "ip-3", weight = 3}]
`

// egressSetup is a fixture whose transport has egressFile's pools, and
// the pools of more (egress file text) if any, and a clock at now.
func egressSetup(t *testing.T, now *time.Time, more ...string) *fixture {
	t.Helper()
	cfg, err := egress.Parse(egressFile + strings.Join(more, "\n"))
	if err != nil {
		t.Fatal(err)
	}
	f := setup(t, smtptest.Config{}, func(c *delivery.Config) {
		c.Egress = cfg
		c.Now = func() time.Time { return *now }
	})
	f.dns.AddMX("example.test", 10, "mx.example.test")
	f.dns.AddA("mx.example.test", "127.0.0.1")
	return f
}

// TestPoolSourceAddresses: each message goes out from its source's
// address with its EHLO name, and the result names the source.
func TestPoolSourceAddresses(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC) // warm-up over
	f := egressSetup(t, &now)
	route := delivery.Route{Mode: delivery.ModeDirect, Pool: "main"}
	got := map[string]int{}
	for range 8 {
		res, err := f.send(t, route, "b@example.test")
		if err != nil {
			t.Fatal(err)
		}
		got[res.Source+"="+res.SourceAddress]++
	}
	if got["ip-2=127.0.0.2"] != 2 || got["ip-3=127.0.0.3"] != 6 {
		t.Errorf("sources of 8 messages at 1:3 = %v", got)
	}
	for _, m := range f.sink.Messages() {
		host, _, _ := net.SplitHostPort(m.RemoteAddr)
		want := map[string]string{"127.0.0.2": "mta2.postline.test", "127.0.0.3": "mta3.postline.test"}[host]
		if want == "" || m.Helo != want {
			t.Errorf("a message came from %s with EHLO %q", m.RemoteAddr, m.Helo)
		}
	}
}

// TestPoolWarmup: ip-3 sends its day's cap, then only ip-2 is used; with
// ip-2 unusable too, Admit says to wait until the next UTC day.
func TestPoolWarmup(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 3, 1, 18, 0, 0, 0, time.UTC) // day 0: ip-3 may send 3
	f := egressSetup(t, &now)
	route := delivery.Route{Mode: delivery.ModeDirect, Pool: "main"}
	got := map[string]int{}
	for range 10 {
		res, err := f.send(t, route, "b@example.test")
		if err != nil {
			t.Fatal(err)
		}
		got[res.Source]++
	}
	if got["ip-3"] != 3 || got["ip-2"] != 7 {
		t.Errorf("10 messages on day 0 = %v, want ip-3 at its cap of 3", got)
	}
	now = now.Add(12 * time.Hour) // day 1: 5 more
	got = map[string]int{}
	for range 10 {
		res, err := f.send(t, route, "b@example.test")
		if err != nil {
			t.Fatal(err)
		}
		got[res.Source]++
	}
	if got["ip-3"] != 5 {
		t.Errorf("10 messages on day 1 = %v, want ip-3 at its cap of 5", got)
	}

	// A pool of ip-3 alone: full for the day, Admit says wait until midnight.
	g := egressSetup(t, &now, "\n[pool.\"warm\"]\nentries = [{name = \"ip-3\"}]\n")
	warm := delivery.Route{Mode: delivery.ModeDirect, Pool: "warm"}
	for range 5 {
		if _, err := g.send(t, warm, "b@example.test"); err != nil {
			t.Fatal(err)
		}
	}
	tk, wait, err := g.tr.Admit(context.Background(), warm, "b@example.test")
	if tk != nil || err != nil {
		t.Fatalf("Admit past the cap = %v, %v", tk, err)
	}
	midnight := time.Date(2025, 3, 3, 0, 0, 0, 0, time.UTC)
	if want := midnight.Sub(now); wait != want {
		t.Errorf("wait past the cap = %s, want %s (the next UTC day)", wait, want)
	}
	_, err = g.send(t, warm, "b@example.test")
	if e := asError(t, err); e.Wait <= 0 || !strings.Contains(e.Message, "warm-up cap") {
		t.Errorf("Send past the cap = %+v", e)
	}
}

func TestPoolUnknown(t *testing.T) {
	t.Parallel()
	now := time.Now()
	f := egressSetup(t, &now)
	_, err := f.send(t, delivery.Route{Mode: delivery.ModeDirect, Pool: "nope"}, "b@example.test")
	if e := asError(t, err); !e.Temporary || !strings.Contains(e.Message, `egress pool "nope"`) {
		t.Errorf("unknown pool: %+v", e)
	}
}

// TestPoolWarmupCountsWhatGoesOut: a source's warm-up cap counts only the
// deliveries that went out through it. Deliveries that failed before any
// connection (an MX host without addresses) or gave up while waiting for
// a connection leave the day's cap whole: ip-3, capped at 3 on its first
// day, still sends 3 messages after them, and then no more.
func TestPoolWarmupCountsWhatGoesOut(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 3, 1, 18, 0, 0, 0, time.UTC) // day 0: ip-3 may send 3
	cfg, err := egress.Parse(egressFile + "\n[pool.\"warm\"]\nentries = [{name = \"ip-3\"}]\n")
	if err != nil {
		t.Fatal(err)
	}
	f := setup(t, smtptest.Config{}, func(c *delivery.Config) {
		c.Egress = cfg
		c.Now = func() time.Time { return now }
		c.MaxConnsPerDest = 1
	})
	f.dns.AddMX("example.test", 10, "mx.example.test")
	f.dns.AddA("mx.example.test", "127.0.0.1")
	f.dns.AddMX("broken.test", 10, "mx.broken.test") // no address records
	warm := delivery.Route{Mode: delivery.ModeDirect, Pool: "warm"}

	for i := range 5 {
		_, err := f.send(t, warm, "b@broken.test")
		if e := asError(t, err); e.Stage != delivery.StageDNS || e.Wait != 0 {
			t.Fatalf("send %d to an MX without addresses = %+v; want a DNS failure, not a warm-up wait", i+1, e)
		}
	}

	// One delivery holds the only connection; the next waits for it and
	// gives up (its context ends) before it is dialled.
	ctx := context.Background()
	first, _, err := f.tr.Admit(ctx, warm, "b@example.test")
	if first == nil || err != nil {
		t.Fatalf("Admit = %v, %v", first, err)
	}
	second, _, err := f.tr.Admit(ctx, warm, "b@example.test")
	if second == nil || err != nil {
		t.Fatalf("Admit behind it = %v, %v", second, err)
	}
	gone, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := f.tr.SendTicket(gone, second, delivery.Envelope{From: "a@sender.test", To: "b@example.test"}, []byte(testMsg)); err == nil {
		t.Fatal("SendTicket with an ended context succeeded")
	}
	first.Release()
	if n := f.sessions(); n != 0 {
		t.Fatalf("the sink saw %d connections; nothing should have been dialled yet", n)
	}

	for i := range 3 {
		res, err := f.send(t, warm, "b@example.test")
		if err != nil || res.Source != "ip-3" {
			t.Fatalf("message %d of the day's 3 = %+v, %v; want it sent from ip-3", i+1, res, err)
		}
	}
	if tk, wait, err := f.tr.Admit(ctx, warm, "b@example.test"); tk != nil || err != nil || wait <= 0 {
		t.Errorf("Admit past the cap = %v, %s, %v; want a wait until the next day", tk, wait, err)
	}
}

// hookCounter is a warm-up counter whose next Decr first runs a hook: the
// moment between a delivery finding a source at its cap and its marking
// the source full for the day.
type hookCounter struct {
	mu     sync.Mutex
	n      map[string]int64
	onDecr func()
}

func (c *hookCounter) Incr(_ context.Context, key string, day time.Time, by int64, _ time.Duration) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[key+day.String()] += by
	return c.n[key+day.String()], nil
}

func (c *hookCounter) Decr(_ context.Context, key string, day time.Time) error {
	c.mu.Lock()
	hook := c.onDecr
	c.onDecr = nil
	c.mu.Unlock()
	if hook != nil {
		hook()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[key+day.String()]--
	return nil
}

// TestPoolWarmupCountGivenBackMeanwhile: a delivery finds ip-3 at its cap
// while another, admitted with the last place, is turned away and gives
// its count back. ip-3 has room again: the first takes that place,
// instead of marking ip-3 full for the rest of the day with one message
// of its cap unsent (the deliveries after it would all have waited for
// the next day: a flake of TestEgressWarmup on PostgreSQL).
func TestPoolWarmupCountGivenBackMeanwhile(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 3, 1, 18, 0, 0, 0, time.UTC) // day 0: ip-3 may send 3
	cfg, err := egress.Parse(egressFile + "\n[pool.\"warm\"]\nentries = [{name = \"ip-3\"}]\n")
	if err != nil {
		t.Fatal(err)
	}
	counter := &hookCounter{n: map[string]int64{}}
	f := setup(t, smtptest.Config{}, func(c *delivery.Config) {
		c.Egress = cfg
		c.Now = func() time.Time { return now }
		c.Warmup = counter
	})
	f.dns.AddMX("example.test", 10, "mx.example.test")
	f.dns.AddA("mx.example.test", "127.0.0.1")
	warm := delivery.Route{Mode: delivery.ModeDirect, Pool: "warm"}
	ctx := context.Background()
	var held []*delivery.Ticket
	for i := range 3 {
		tk, _, err := f.tr.Admit(ctx, warm, "b@example.test")
		if tk == nil || err != nil {
			t.Fatalf("Admit %d of the day's 3 = %v, %v", i+1, tk, err)
		}
		held = append(held, tk)
	}
	// The fourth finds the cap reached; as it takes its count back, the
	// third is released unsent and gives its own back.
	counter.onDecr = func() { held[2].Release() }
	fourth, wait, err := f.tr.Admit(ctx, warm, "b@example.test")
	if fourth == nil || err != nil {
		t.Fatalf("Admit with a place given back meanwhile = %v, wait %s, %v; want the place", fourth, wait, err)
	}
	if tk, wait, err := f.tr.Admit(ctx, warm, "b@example.test"); tk != nil || err != nil || wait <= 0 {
		t.Errorf("Admit past the cap = %v, %s, %v; want a wait until the next day", tk, wait, err)
	}
	for _, tk := range []*delivery.Ticket{held[0], held[1], fourth} {
		tk.Release()
	}
}
