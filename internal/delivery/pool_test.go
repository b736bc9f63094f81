package delivery_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/postline/postline/internal/delivery"
	"github.com/postline/postline/internal/smtptest"
)

func TestReuse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		idle         time.Duration
		between      func(f *fixture, p *proxy) // runs between the two Sends
		wantReused   bool
		wantSessions int
	}{
		{name: "second send reuses the connection", idle: time.Minute, wantReused: true, wantSessions: 1},
		{name: "reuse disabled", idle: -1, wantSessions: 2},
		{
			name: "idle connection expires", idle: 20 * time.Millisecond, wantSessions: 2,
			between: func(*fixture, *proxy) { time.Sleep(200 * time.Millisecond) }, // the timer under test
		},
		{
			name: "server dropped the idle connection: redial once", idle: time.Minute, wantSessions: 2,
			between: func(_ *fixture, p *proxy) { p.DropAll() },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, smtptest.Config{}, func(c *delivery.Config) { c.IdleTimeout = tt.idle })
			p := newProxy(t, f.sink.Addr(), nil)
			r := f.relay()
			r.Port = p.Port()
			first, err := f.send(t, r, "first@example.test")
			if err != nil || first.Reused {
				t.Fatalf("first Send = %+v, %v; want a new connection", first, err)
			}
			if tt.between != nil {
				tt.between(f, p)
			}
			second, err := f.send(t, r, "second@example.test")
			if err != nil {
				t.Fatalf("second Send: %v", err)
			}
			if second.Reused != tt.wantReused {
				t.Errorf("second Send: Reused = %v, want %v", second.Reused, tt.wantReused)
			}
			if n := f.sessions(); n != tt.wantSessions {
				t.Errorf("sink saw %d sessions, want %d", n, tt.wantSessions)
			}
			if msgs := f.sink.Messages(); len(msgs) != 2 {
				t.Errorf("sink got %d messages, want 2", len(msgs))
			}
		})
	}
}

// TestMaxConnsPerDest sends concurrently and checks the bound: connections
// stay open in the pool, so the sink's session count is the most that were
// ever open at once.
func TestMaxConnsPerDest(t *testing.T) {
	t.Parallel()
	for _, max := range []int{1, 3} {
		t.Run(fmt.Sprint(max), func(t *testing.T) {
			t.Parallel()
			f := setup(t, smtptest.Config{}, func(c *delivery.Config) { c.MaxConnsPerDest = max })
			const n = 24
			var wg sync.WaitGroup
			errs := make(chan error, n)
			for i := range n {
				wg.Go(func() {
					_, err := f.send(t, f.relay(), fmt.Sprintf("r%d@example.test", i))
					errs <- err
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Errorf("Send: %v", err)
				}
			}
			if got := len(f.sink.Messages()); got != n {
				t.Errorf("sink got %d messages, want %d", got, n)
			}
			if s := f.sessions(); s < 1 || s > max {
				t.Errorf("sink saw %d sessions, want 1 to %d", s, max)
			}
		})
	}
}

// TestMaxConnsPerRelay: a relay's path takes MaxConnsPerRelay connections
// where a site's takes MaxConnsPerDest. The sink holds each DATA reply, so
// concurrent sends need as many connections as the path allows: the sink
// sees exactly that many sessions, to the relay and to a site alike.
func TestMaxConnsPerRelay(t *testing.T) {
	t.Parallel()
	f := setup(t, smtptest.Config{DataDelay: 100 * time.Millisecond}, func(c *delivery.Config) {
		c.MaxConnsPerDest, c.MaxConnsPerRelay = 1, 3
	})
	f.mx([]string{"mx.example.test"}, "example.test")
	for _, tc := range []struct {
		name  string
		route delivery.Route
		want  int
	}{{"relay", f.relay(), 3}, {"site", direct, 1}} {
		before := f.sessions()
		const n = 9
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				if _, err := f.send(t, tc.route, fmt.Sprintf("%s%d@example.test", tc.name, i)); err != nil {
					t.Errorf("%s: Send: %v", tc.name, err)
				}
			})
		}
		wg.Wait()
		if got := f.sessions() - before; got != tc.want {
			t.Errorf("%s: the sink saw %d sessions for %d concurrent sends, want %d", tc.name, got, n, tc.want)
		}
	}
	if got := len(f.sink.Messages()); got != 18 {
		t.Errorf("sink got %d messages, want 18", got)
	}
	// The operator's listing by site shows the same defaults.
	ctx := context.Background()
	if n := f.tr.RelayShaping(ctx, "127.0.0.1").Limits.ConnectionLimit.N; n != 3 {
		t.Errorf("the relay's listed connection_limit is %d, want 3", n)
	}
	if s, err := f.tr.DirectShaping(ctx, "example.test"); err != nil || s.Limits.ConnectionLimit.N != 1 {
		t.Errorf("the site's listed connection_limit is %d (%v), want 1", s.Limits.ConnectionLimit.N, err)
	}
}

// TestBlockingAndCancel holds the only connection slot with a server that
// never greets: a second Send waits for the slot until its deadline, and
// cancelling the first aborts it promptly.
func TestBlockingAndCancel(t *testing.T) {
	t.Parallel()
	f := setup(t, smtptest.Config{}, func(c *delivery.Config) {
		c.MaxConnsPerDest = 1
		c.CommandTimeout = time.Minute // only ctx can end the wait
	})
	hole := newProxy(t, "", nil)
	r := f.relay()
	r.Port = hole.Port()
	env := delivery.Envelope{From: "a@sender.test", To: "rcpt@example.test"}

	ctx1, cancel1 := context.WithCancel(context.Background())
	defer cancel1()
	done := make(chan error, 1)
	go func() {
		_, err := f.tr.Send(ctx1, r, env, []byte(testMsg))
		done <- err
	}()
	hole.waitAccepted(t, 1)

	ctx2, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel2()
	_, err := f.tr.Send(ctx2, r, env, []byte(testMsg))
	if e := asError(t, err); !errors.Is(err, context.DeadlineExceeded) || !e.Temporary || e.Enhanced != "4.4.7" {
		t.Errorf("waiting Send: %v (%+v), want a temporary 4.4.7 wrapping context.DeadlineExceeded", err, *e)
	}
	if n := hole.accepted.Load(); n != 1 {
		t.Errorf("%d connections opened, want 1 (MaxConnsPerDest)", n)
	}

	start := time.Now()
	cancel1()
	select {
	case err := <-done:
		e := asError(t, err)
		if !errors.Is(err, context.Canceled) || !e.Temporary || e.Stage != delivery.StageConnect {
			t.Errorf("cancelled Send: %v (%+v), want temporary at connect wrapping context.Canceled", err, *e)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("cancelled Send returned after %v", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("cancelled Send did not return")
	}
}

// TestCancelDuringDNS cancels while the MX lookup is outstanding.
func TestCancelDuringDNS(t *testing.T) {
	t.Parallel()
	f := setup(t, smtptest.Config{})
	f.dns.SetDelay("example.test", 5*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := f.tr.Send(ctx, direct, delivery.Envelope{To: "rcpt@example.test"}, []byte(testMsg))
	e := asError(t, err)
	if !errors.Is(err, context.DeadlineExceeded) || !e.Temporary || e.Stage != delivery.StageDNS {
		t.Errorf("Send: %v (%+v), want temporary at dns wrapping context.DeadlineExceeded", err, *e)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Send returned after %v", d)
	}
}

func TestClose(t *testing.T) {
	t.Parallel()
	f := setup(t, smtptest.Config{})
	if _, err := f.send(t, f.relay(), "rcpt@example.test"); err != nil {
		t.Fatalf("Send: %v", err)
	}
	if err := f.tr.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	_, err := f.send(t, f.relay(), "rcpt@example.test")
	if e := asError(t, err); !errors.Is(err, delivery.ErrClosed) || !e.Temporary {
		t.Errorf("Send after Close: %v, want temporary ErrClosed", err)
	}
}

// A probe's MXSlot counts against its domain's site's connection bound
// like a delivery's connection: with the bound taken, another waits until
// one is released, and a domain at the same MX hosts shares the bound.
func TestMXSlotSharesTheBound(t *testing.T) {
	t.Parallel()
	f := setup(t, smtptest.Config{}, func(c *delivery.Config) { c.MaxConnsPerDest = 2 })
	for _, d := range []string{"example.net", "alias.example"} {
		f.dns.AddMX(d, 10, "mx.example.net")
	}
	f.dns.AddMX("other.example", 10, "mx.other.example")
	var releases []func()
	for _, d := range []string{"example.net", "alias.example"} {
		r, err := f.tr.MXSlot(context.Background(), d)
		if err != nil {
			t.Fatal(err)
		}
		releases = append(releases, r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := f.tr.MXSlot(ctx, "example.net"); err == nil {
		t.Fatal("a third slot past a bound of 2")
	}
	if r, err := f.tr.MXSlot(context.Background(), "other.example"); err != nil {
		t.Fatalf("another site is not bounded by this one: %v", err)
	} else {
		r()
	}
	got := make(chan error, 1)
	go func() {
		_, err := f.tr.MXSlot(context.Background(), "example.net")
		got <- err
	}()
	releases[0]()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a released slot was not handed to the waiting probe")
	}
}
