package delivery_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/postline/postline/internal/delivery"
	"github.com/postline/postline/internal/shaping"
	"github.com/postline/postline/internal/smtptest"
)

// rulesFrom loads a shaping file with the given content.
func rulesFrom(t testing.TB, content string) *shaping.Rules {
	t.Helper()
	p := filepath.Join(t.TempDir(), "shaping.toml")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := shaping.Load(p)
	if err != nil {
		t.Fatalf("loading %q: %v", content, err)
	}
	return r
}

// shaped is setup with the rules of a shaping file in force.
func shaped(t testing.TB, sc smtptest.Config, rules string, mod ...func(*delivery.Config)) *fixture {
	t.Helper()
	r := rulesFrom(t, rules)
	return setup(t, sc, append([]func(*delivery.Config){func(c *delivery.Config) {
		c.Shaping = func() *shaping.Rules { return r }
	}}, mod...)...)
}

// mx gives each domain an MX record naming hosts (at 127.0.0.1, the sink).
func (f *fixture) mx(hosts []string, domains ...string) {
	for _, h := range hosts {
		f.dns.AddA(h, "127.0.0.1")
	}
	for _, d := range domains {
		for i, h := range hosts {
			f.dns.AddMX(d, uint16(10*(i+1)), h)
		}
	}
}

// sendAll sends to every recipient at once (blocking Sends) and fails the
// test on any error.
func (f *fixture) sendAll(t testing.TB, rcpts []string) []delivery.Result {
	t.Helper()
	res := make([]delivery.Result, len(rcpts))
	var wg sync.WaitGroup
	for i, r := range rcpts {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var err error
			if res[i], err = f.tr.Send(ctx, direct, delivery.Envelope{From: "a@sender.test", To: r}, []byte(testMsg)); err != nil {
				t.Errorf("Send to %s: %v", r, err)
			}
		})
	}
	wg.Wait()
	return res
}

func rcpts(n int, domains ...string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("r%d@%s", i, domains[i%len(domains)])
	}
	return out
}

// connection_limit holds for an egress path however many deliveries run
// at once, and a connection counts until QUIT's reply: with connections
// closed and replaced after every two messages, the server never sees
// one more.
func TestConnectionLimit(t *testing.T) {
	t.Parallel()
	for _, perConn := range []int{0, 2} {
		t.Run(fmt.Sprintf("max_deliveries_per_connection=%d", perConn), func(t *testing.T) {
			t.Parallel()
			rules := "[\"default\"]\nconnection_limit = 3\n"
			if perConn > 0 {
				rules += fmt.Sprintf("max_deliveries_per_connection = %d\n", perConn)
			}
			f := shaped(t, smtptest.Config{DataDelay: 20 * time.Millisecond}, rules)
			f.mx([]string{"mx.example.test"}, "example.test")
			f.sendAll(t, rcpts(40, "example.test"))
			if n := len(f.sink.Messages()); n != 40 {
				t.Fatalf("sink got %d messages, want 40", n)
			}
			if peak := f.sink.MaxOpen(); peak != 3 {
				t.Errorf("at most %d connections were open at once, want exactly connection_limit = 3", peak)
			}
			if perConn > 0 && f.sessions() < 40/perConn {
				t.Errorf("%d sessions for 40 messages at %d a connection", f.sessions(), perConn)
			}
		})
	}
}

// max_deliveries_per_connection closes a connection after that many
// messages (with QUIT) and the next message opens a new one.
func TestMaxDeliveriesPerConnection(t *testing.T) {
	t.Parallel()
	f := shaped(t, smtptest.Config{}, "[\"default\"]\nmax_deliveries_per_connection = 5\n")
	f.mx([]string{"mx.example.test"}, "example.test")
	var reused []bool
	for i := range 12 {
		res, err := f.send(t, direct, fmt.Sprintf("r%d@example.test", i))
		if err != nil {
			t.Fatal(err)
		}
		reused = append(reused, res.Reused)
	}
	want := []bool{false, true, true, true, true, false, true, true, true, true, false, true}
	if !slices.Equal(reused, want) {
		t.Errorf("Reused over 12 messages = %v, want %v", reused, want)
	}
	if n := f.sessions(); n != 3 {
		t.Errorf("%d sessions, want 3 (5 + 5 + 2 messages)", n)
	}
	waitFor(t, func() bool { return f.sink.Open() == 1 }, "the two full connections to be closed")
}

// max_message_rate spaces the messages of an egress path: no window of a
// second sees more than the rate's count, however many are sent at once.
func TestMessageRate(t *testing.T) {
	t.Parallel()
	f := shaped(t, smtptest.Config{}, "[\"default\"]\nmax_message_rate = \"20/s\"\nconnection_limit = 4\n")
	f.mx([]string{"mx.example.test"}, "example.test", "other.example")
	start := time.Now()
	f.sendAll(t, rcpts(30, "example.test", "other.example")) // one site: one rate
	elapsed := time.Since(start)
	msgs := f.sink.Messages()
	if len(msgs) != 30 {
		t.Fatalf("sink got %d messages, want 30", len(msgs))
	}
	if most := smtptest.MostWithin(msgs, 900*time.Millisecond); most > 20 {
		t.Errorf("%d messages arrived within 900ms, want at most 20 (20/s)", most)
	}
	if elapsed < 29*50*time.Millisecond*9/10 {
		t.Errorf("30 messages at 20/s took %v, want about 1.45s", elapsed)
	}
}

// Admit never waits: past what a path's limits allow now (one
// connection, one delivery waiting for it) it says how long to wait, and
// deliveries turned away one after another are given later and later
// times. Admitted deliveries are then sent in turn; a released ticket
// gives its place back.
func TestAdmitTurnsAway(t *testing.T) {
	t.Parallel()
	f := shaped(t, smtptest.Config{}, "[\"default\"]\nconnection_limit = 1\n")
	f.mx([]string{"mx.example.test"}, "example.test")
	ctx := context.Background()
	var tickets []*delivery.Ticket
	var waits []time.Duration
	for i := range 5 {
		start := time.Now()
		tk, wait, err := f.tr.Admit(ctx, direct, fmt.Sprintf("r%d@example.test", i))
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("Admit took %v", d)
		}
		if tk != nil {
			tickets = append(tickets, tk)
		} else {
			waits = append(waits, wait)
		}
	}
	if len(tickets) != 2 || len(waits) != 3 {
		t.Fatalf("5 Admits gave %d tickets and %d waits, want 2 (a connection, a place in line) and 3", len(tickets), len(waits))
	}
	if waits[0] < 100*time.Millisecond || waits[1] <= waits[0] || waits[2] <= waits[1] {
		t.Errorf("waits %v: want at least 100ms each, later and later", waits)
	}
	var wg sync.WaitGroup
	for i, tk := range tickets {
		wg.Go(func() {
			if _, err := f.tr.SendTicket(ctx, tk, delivery.Envelope{To: fmt.Sprintf("r%d@example.test", i)}, []byte(testMsg)); err != nil {
				t.Errorf("SendTicket %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if n, s := len(f.sink.Messages()), f.sessions(); n != 2 || s != 1 {
		t.Errorf("%d messages over %d sessions, want 2 over 1", n, s)
	}
	tk, _, err := f.tr.Admit(ctx, direct, "again@example.test")
	if err != nil || tk == nil {
		t.Fatalf("Admit with the connection idle = %v, %v; want a ticket", tk, err)
	}
	tk.Release()
	if tk, _, err := f.tr.Admit(ctx, direct, "after@example.test"); err != nil || tk == nil {
		t.Fatalf("Admit after a Release = %v, %v; want a ticket (the connection given back)", tk, err)
	} else if _, err := f.tr.SendTicket(ctx, tk, delivery.Envelope{To: "after@example.test"}, []byte(testMsg)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.tr.SendTicket(ctx, tk, delivery.Envelope{To: "again@example.test"}, []byte(testMsg)); err == nil {
		t.Error("a released ticket was sent")
	}
}

// Deliveries turned away by max_message_rate come back spread out at the
// rate's pace, not together.
func TestAdmitSpreadsRateWaits(t *testing.T) {
	t.Parallel()
	f := shaped(t, smtptest.Config{}, "[\"default\"]\nmax_message_rate = \"1/s\"\n")
	f.mx([]string{"mx.example.test"}, "example.test")
	var waits []time.Duration
	for i := range 6 {
		tk, wait, err := f.tr.Admit(context.Background(), direct, fmt.Sprintf("r%d@example.test", i))
		if err != nil {
			t.Fatal(err)
		}
		if tk != nil {
			defer tk.Release()
			continue
		}
		waits = append(waits, wait)
	}
	if len(waits) < 4 {
		t.Fatalf("%d of 6 Admits turned away at 1/s, want at least 4", len(waits))
	}
	for i := 1; i < len(waits); i++ {
		if step := waits[i] - waits[i-1]; step < 900*time.Millisecond || step > 1100*time.Millisecond {
			t.Errorf("waits %v: want them a second apart", waits)
			break
		}
	}
}

// A ticket says whether its message has to wait for its turn (the start
// max_message_rate booked for it, a place in line for a connection), so
// that the worker can let another delivery work meanwhile; the first
// delivery to a path with room does not wait, nor does a released ticket.
func TestTicketWaits(t *testing.T) {
	t.Parallel()
	f := shaped(t, smtptest.Config{}, "[\"default\"]\nconnection_limit = 2\nmax_message_rate = \"5/s\"\n")
	f.mx([]string{"mx.example.test"}, "example.test")
	var waits []bool
	for i := range 3 {
		tk, _, err := f.tr.Admit(context.Background(), direct, fmt.Sprintf("r%d@example.test", i))
		if err != nil || tk == nil {
			t.Fatalf("Admit %d = %v, %v; want a ticket (a connection or a place in line, a start within a second)", i, tk, err)
		}
		defer tk.Release()
		waits = append(waits, tk.Waits())
		if i == 2 {
			tk.Release()
			if tk.Waits() {
				t.Error("a released ticket waits")
			}
		}
	}
	// The first starts now on a connection of its own; the second has one
	// too but its start is 200ms ahead; the third waits in line as well.
	if !slices.Equal(waits, []bool{false, true, true}) {
		t.Errorf("Waits of three tickets at 5/s over two connections = %v, want [false true true]", waits)
	}
}

// WithTurn's function runs when a waiting ticket's turn has come (its
// booked start has passed) and before its message is sent; an error from
// it ends the delivery unsent.
func TestWithTurn(t *testing.T) {
	t.Parallel()
	f := shaped(t, smtptest.Config{}, "[\"default\"]\nmax_message_rate = \"5/s\"\n")
	f.mx([]string{"mx.example.test"}, "example.test")
	ctx := context.Background()
	admitted := time.Now()
	var tickets []*delivery.Ticket
	for i := range 3 {
		tk, _, err := f.tr.Admit(ctx, direct, fmt.Sprintf("r%d@example.test", i))
		if err != nil || tk == nil {
			t.Fatalf("Admit %d = %v, %v; want a ticket", i, tk, err)
		}
		tickets = append(tickets, tk)
	}
	if _, err := f.tr.SendTicket(ctx, tickets[0], delivery.Envelope{To: "r0@example.test"}, []byte(testMsg)); err != nil {
		t.Fatal(err)
	}
	var turnAt time.Time
	var sinkThen int
	turn := delivery.WithTurn(ctx, func(context.Context) error {
		turnAt, sinkThen = time.Now(), len(f.sink.Messages())
		return nil
	})
	if _, err := f.tr.SendTicket(turn, tickets[1], delivery.Envelope{To: "r1@example.test"}, []byte(testMsg)); err != nil {
		t.Fatal(err)
	}
	if waited := turnAt.Sub(admitted); waited < 150*time.Millisecond || sinkThen != 1 {
		t.Errorf("turn ran %v after admission with %d messages at the sink; want after the start booked 200ms ahead, before the message", waited, sinkThen)
	}
	refused := delivery.WithTurn(ctx, func(context.Context) error { return context.Canceled })
	if _, err := f.tr.SendTicket(refused, tickets[2], delivery.Envelope{To: "r2@example.test"}, []byte(testMsg)); err == nil {
		t.Error("SendTicket succeeded though its turn function failed")
	}
	if n := len(f.sink.Messages()); n != 2 {
		t.Errorf("%d messages at the sink, want 2 (the third was not sent)", n)
	}
}

// idle_timeout applies per egress path: a short one closes the idle
// connection of its site, not another site's.
func TestIdleTimeoutPerPath(t *testing.T) {
	t.Parallel()
	f := shaped(t, smtptest.Config{}, `["default"]
idle_timeout = "50ms"

["patient.test"]
mx_rollup = false
idle_timeout = "1m"
`)
	f.mx([]string{"mx.example.test"}, "example.test", "patient.test")
	for _, rcpt := range []string{"a@example.test", "a@patient.test"} {
		if _, err := f.send(t, direct, rcpt); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, func() bool { return f.sink.Open() == 1 }, "the 50ms idle connection to be closed")
	time.Sleep(100 * time.Millisecond)
	for _, c := range []struct {
		rcpt   string
		reused bool
	}{{"b@example.test", false}, {"b@patient.test", true}} {
		res, err := f.send(t, direct, c.rcpt)
		if err != nil {
			t.Fatal(err)
		}
		if res.Reused != c.reused {
			t.Errorf("to %s after 150ms: Reused = %v, want %v", c.rcpt, res.Reused, c.reused)
		}
	}
}

// After consecutive_connection_failures_before_delay failed connections
// to a site, its deliveries fail at once for FailureDelay ("no answer from
// any host", temporary, as KumoMTA defers its ready queue) without a
// dial; then dialling resumes. Other sites are not affected.
func TestFailureDelay(t *testing.T) {
	t.Parallel()
	f := shaped(t, smtptest.Config{}, "[\"default\"]\nconsecutive_connection_failures_before_delay = 2\n",
		func(c *delivery.Config) { c.FailureDelay = 300 * time.Millisecond })
	// The dead site listens on another loopback address with the MX port
	// and hangs up on every connection before the greeting.
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.2", fmt.Sprint(f.sink.Port())))
	if err != nil {
		t.Skipf("127.0.0.2 unavailable: %v", err)
	}
	t.Cleanup(func() { ln.Close() })
	var dials atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			dials.Add(1)
			c.Close()
		}
	}()
	f.dns.AddMX("dead.test", 10, "mx.dead.test")
	f.dns.AddA("mx.dead.test", "127.0.0.2")
	f.mx([]string{"mx.example.test"}, "example.test")
	for i := range 2 {
		_, err := f.send(t, direct, fmt.Sprintf("r%d@dead.test", i))
		if e := asError(t, err); !e.Temporary || e.Stage != delivery.StageConnect {
			t.Fatalf("send %d to a dead site: %v, want a temporary connect failure", i, err)
		}
	}
	_, err = f.send(t, direct, "r2@dead.test")
	if e := asError(t, err); e.Enhanced != "4.4.1" || !e.Temporary || e.Wait != 0 {
		t.Errorf("third send: %+v, want a temporary 4.4.1 (an attempt, not a wait)", e)
	}
	if n := dials.Load(); n != 2 {
		t.Errorf("%d dials, want 2: the third delivery must not dial", n)
	}
	if _, err := f.send(t, direct, "ok@example.test"); err != nil {
		t.Errorf("another site during the delay: %v", err)
	}
	time.Sleep(350 * time.Millisecond)
	if _, err := f.send(t, direct, "r3@dead.test"); err == nil || dials.Load() != 3 {
		t.Errorf("after the delay: %v with %d dials, want a new dial (3) that fails", err, dials.Load())
	}
}

// Domains whose MX hosts are the same set share one egress path, its
// connections and its limits (mx_rollup, the default); a domain section
// with mx_rollup = false makes a domain a path of its own.
func TestRollupSharesPath(t *testing.T) {
	t.Parallel()
	hosts := []string{"mx1.shared.test", "mx2.shared.test"}
	for _, tt := range []struct {
		name       string
		rules      string
		wantReused bool
		wantPeak   int
	}{
		{"mx_rollup", "[\"default\"]\nconnection_limit = 1\n", true, 1},
		{"mx_rollup = false", "[\"default\"]\nconnection_limit = 1\n\n[\"b.test\"]\nmx_rollup = false\n", false, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := shaped(t, smtptest.Config{DataDelay: 20 * time.Millisecond}, tt.rules)
			f.mx(hosts, "a.test", "b.test")
			if _, err := f.send(t, direct, "first@a.test"); err != nil {
				t.Fatal(err)
			}
			res, err := f.send(t, direct, "first@b.test")
			if err != nil {
				t.Fatal(err)
			}
			if res.Reused != tt.wantReused {
				t.Errorf("b.test after a.test: Reused = %v, want %v", res.Reused, tt.wantReused)
			}
			f.sendAll(t, rcpts(20, "a.test", "b.test"))
			if peak := f.sink.MaxOpen(); peak != tt.wantPeak {
				t.Errorf("%d connections open at once, want %d", peak, tt.wantPeak)
			}
		})
	}
}

// provider_connection_limit bounds the connections to every site of a
// provider together.
func TestProviderConnectionLimit(t *testing.T) {
	t.Parallel()
	f := shaped(t, smtptest.Config{DataDelay: 20 * time.Millisecond}, `["default"]
connection_limit = 5

[provider."big"]
match = [{MXSuffix = ".big.test"}]
provider_connection_limit = 2
`)
	f.mx([]string{"mx1.big.test"}, "x.test")
	f.mx([]string{"mx2.big.test"}, "y.test")
	f.sendAll(t, rcpts(30, "x.test", "y.test"))
	if n := len(f.sink.Messages()); n != 30 {
		t.Fatalf("sink got %d messages, want 30", n)
	}
	if peak := f.sink.MaxOpen(); peak != 2 {
		t.Errorf("%d connections open at once to the provider's two sites, want provider_connection_limit = 2", peak)
	}
}

// A relay takes the shaping keyed by its host: connection_limit applies
// to it.
func TestRelayShaping(t *testing.T) {
	t.Parallel()
	f := shaped(t, smtptest.Config{DataDelay: 20 * time.Millisecond}, "[\"default\"]\nconnection_limit = 1\n")
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Go(func() {
			if _, err := f.send(t, f.relay(), fmt.Sprintf("r%d@example.test", i)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if peak := f.sink.MaxOpen(); peak != 1 {
		t.Errorf("%d connections to the relay at once, want 1", peak)
	}
}

// enable_tls maps onto direct delivery's TLS mode per destination: a
// domain whose section requires TLS is refused by an MX without STARTTLS,
// others are delivered as before.
func TestShapedTLSMode(t *testing.T) {
	t.Parallel()
	f := shaped(t, smtptest.Config{}, "[\"strict.test\"]\nmx_rollup = false\nenable_tls = \"Required\"\n")
	f.mx([]string{"mx.example.test"}, "example.test", "strict.test")
	if _, err := f.send(t, direct, "a@example.test"); err != nil {
		t.Fatalf("default TLS mode: %v", err)
	}
	_, err := f.send(t, direct, "a@strict.test")
	var e *delivery.Error
	if !errors.As(err, &e) || e.Enhanced != "4.7.10" || !e.Temporary {
		t.Errorf("enable_tls = Required, no STARTTLS: %v, want a temporary 4.7.10", err)
	}
}

func waitFor(t testing.TB, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// max_connection_rate spaces new connections: with every message on a
// connection of its own, no window of a second sees more than the rate.
func TestConnectionRate(t *testing.T) {
	t.Parallel()
	f := shaped(t, smtptest.Config{}, `["default"]
max_connection_rate = "10/s"
max_deliveries_per_connection = 1
connection_limit = 5
`)
	f.mx([]string{"mx.example.test"}, "example.test")
	f.sendAll(t, rcpts(15, "example.test"))
	if n := f.sessions(); n != 15 {
		t.Fatalf("%d sessions for 15 messages at one a connection", n)
	}
	if most := smtptest.MostWithin(f.sink.Messages(), 900*time.Millisecond); most > 10 {
		t.Errorf("%d connections (one message each) within 900ms, want at most 10 (10/s)", most)
	}
}

// An egress path outlives its connections: its message rate does not
// start over when its last connection closes.
func TestRateOutlivesConnections(t *testing.T) {
	t.Parallel()
	f := shaped(t, smtptest.Config{}, "[\"default\"]\nmax_message_rate = \"1/min\"\nidle_timeout = \"20ms\"\n")
	f.mx([]string{"mx.example.test"}, "example.test")
	if _, err := f.send(t, direct, "first@example.test"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return f.sink.Open() == 0 }, "the idle connection to close")
	tk, wait, err := f.tr.Admit(context.Background(), direct, "second@example.test")
	if err != nil || tk != nil || wait < 50*time.Second {
		t.Errorf("Admit after the pool emptied = %v, %v, %v; want a wait of about a minute (1/min)", tk, wait, err)
	}
}

// SiteOf names the site as admission does: domains sharing an MX set share
// a site, one with mx_rollup = false is a site of its own, and a domain
// with a null MX has none; what an operator suspends by site is then the
// path delivery shapes by.
func TestSiteOf(t *testing.T) {
	t.Parallel()
	f := shaped(t, smtptest.Config{}, "[\"b.test\"]\nmx_rollup = false\n")
	f.mx([]string{"mx1.shared.test", "mx2.shared.test"}, "a.test", "b.test", "c.test")
	f.dns.AddMX("null.test", 0, ".")
	ctx := context.Background()
	site := func(d string) string {
		t.Helper()
		s, err := f.tr.SiteOf(ctx, d)
		if err != nil {
			t.Fatalf("SiteOf(%s): %v", d, err)
		}
		return s
	}
	if a, c := site("a.test"), site("C.test"); a == "" || a != c {
		t.Errorf("a.test and c.test share their MX hosts: sites %q and %q, want one", a, c)
	}
	if b := site("b.test"); b == site("a.test") || b == "" {
		t.Errorf("b.test (mx_rollup = false): site %q, want its own", b)
	}
	if n := site("null.test"); n != "" {
		t.Errorf("a null MX: site %q, want none", n)
	}
}

// A delivery waiting in line for a connection holds no start under the
// message rate: its start is booked when its connection comes. Booked at
// admission, the starts of deliveries in line passed unused while they
// waited, and the rate turned others away (the simnet benchmark's outlook,
// 100 sites in line for 5 connections: half its rate). While its provider
// is full, a site keeps a connection's worth of deliveries in line
// (max_deliveries_per_connection), not just connection_limit; the rate
// still holds for what is sent.
func TestWaitingInLineHoldsNoRate(t *testing.T) {
	t.Parallel()
	f := shaped(t, smtptest.Config{}, `["default"]
connection_limit = 1
max_deliveries_per_connection = 10

[provider."big"]
match = [{MXSuffix = ".big.test"}]
provider_connection_limit = 1
provider_max_message_rate = "5/s"
`)
	f.mx([]string{"mx1.big.test"}, "x.test")
	ctx := context.Background()
	var tickets []*delivery.Ticket
	for i := range 11 {
		tk, wait, err := f.tr.Admit(ctx, direct, fmt.Sprintf("r%d@x.test", i))
		if err != nil {
			t.Fatal(err)
		}
		if tk == nil {
			t.Fatalf("Admit %d turned away (wait %v) after %d admitted: want 11 (a connection and 10 in line, none holding a start under 5/s)", i, wait, len(tickets))
		}
		tickets = append(tickets, tk)
	}
	if tk, wait, err := f.tr.Admit(ctx, direct, "r11@x.test"); err != nil || tk != nil {
		tk.Release()
		t.Fatalf("Admit past a connection's worth in line = %v, %v; want turned away", tk, err)
	} else if wait < 100*time.Millisecond {
		t.Errorf("turned away for %v, want at least 100ms", wait)
	}
	var wg sync.WaitGroup
	for i, tk := range tickets {
		wg.Go(func() {
			if _, err := f.tr.SendTicket(ctx, tk, delivery.Envelope{To: fmt.Sprintf("r%d@x.test", i)}, []byte(testMsg)); err != nil {
				t.Errorf("SendTicket %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	msgs := f.sink.Messages()
	if len(msgs) != 11 || f.sessions() != 2 {
		t.Errorf("%d messages over %d sessions, want 11 over 2 (10 a connection)", len(msgs), f.sessions())
	}
	if most := smtptest.MostWithin(msgs, 900*time.Millisecond); most > 5 {
		t.Errorf("%d messages arrived within 900ms, want at most 5 (5/s)", most)
	}
}
