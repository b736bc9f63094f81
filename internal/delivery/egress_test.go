package delivery_test

import (
	"context"
	"net"
	"strings"
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

// egressSetup is a fixture whose transport has egressFile's pools and a
// clock at now.
func egressSetup(t *testing.T, now *time.Time) *fixture {
	t.Helper()
	cfg, err := egress.Parse(egressFile)
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
	cfg, _ := egress.Parse(egressFile + "\n[pool.\"warm\"]\nentries = [{name = \"ip-3\"}]\n")
	g := setup(t, smtptest.Config{}, func(c *delivery.Config) {
		c.Egress = cfg
		c.Now = func() time.Time { return now }
	})
	g.dns.AddMX("example.test", 10, "mx.example.test")
	g.dns.AddA("mx.example.test", "127.0.0.1")
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
