package delivery_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/postline/postline/internal/delivery"
	"github.com/postline/postline/internal/members"
	"github.com/postline/postline/internal/smtptest"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/testutil"
)

// Two processes delivering from one database split the provider_* limits
// between them (package members): sending at once to the provider's two
// sites, together they never hold more than provider_connection_limit
// connections nor go faster than provider_max_message_rate; a "local:"
// limit is each one's own.
func TestProviderLimitsSharedByProcesses(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		conns    string
		rate     string
		wantPeak int
		most     int // messages within 900 ms
	}{
		{"shared", "3", `"20/s"`, 3, 20},
		{"local", `"local:3"`, `"local:20/s"`, 6, 40},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			db := testutil.OpenDB(t, store.SQLite)
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			registry := func() *members.Registry {
				r := members.New(members.Config{Store: store.NewMembers(db), Beat: 50 * time.Millisecond})
				r.Start(ctx)
				return r
			}
			ra, rb := registry(), registry()
			var cfg delivery.Config
			f := shaped(t, smtptest.Config{DataDelay: 20 * time.Millisecond}, `["default"]
connection_limit = 10

[provider."big"]
match = [{MXSuffix = ".big.test"}]
provider_connection_limit = `+tt.conns+`
provider_max_message_rate = `+tt.rate+`
`, func(c *delivery.Config) { c.Shares = ra; cfg = *c })
			cfg.Shares = rb
			other, err := delivery.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { other.Close() })
			f.mx([]string{"mx1.big.test"}, "x.test")
			f.mx([]string{"mx2.big.test"}, "y.test")
			waitFor(t, func() bool { return ra.Divisor() == 2 && rb.Divisor() == 2 }, "both processes to count each other")

			start := time.Now()
			var wg sync.WaitGroup
			for i, tr := range []*delivery.Transport{f.tr, other} {
				for j, r := range rcpts(20, "x.test", "y.test") {
					wg.Go(func() {
						ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
						defer cancel()
						if _, err := tr.Send(ctx, direct, delivery.Envelope{From: "a@sender.test", To: r}, []byte(testMsg)); err != nil {
							t.Errorf("process %d, message %d: %v", i, j, err)
						}
					})
				}
			}
			wg.Wait()
			elapsed := time.Since(start)
			msgs := f.sink.Messages()
			if len(msgs) != 40 {
				t.Fatalf("sink got %d messages, want 40", len(msgs))
			}
			if peak := f.sink.MaxOpen(); peak > tt.wantPeak {
				t.Errorf("%d connections open at once from the two processes, want at most %d", peak, tt.wantPeak)
			}
			if most := smtptest.MostWithin(msgs, 900*time.Millisecond); most > tt.most {
				t.Errorf("%d messages within 900ms from the two processes, want at most %d", most, tt.most)
			}
			if tt.name == "shared" && elapsed < 1800*time.Millisecond {
				t.Errorf("40 messages at 20/s for both processes together took %v, want about 2s", elapsed)
			}
		})
	}
}

// fixedShares is a process's share of every limit, set by the test: what
// members.Registry answers when a process joins.
type fixedShares struct{ places atomic.Int64 }

func (s *fixedShares) Share(limit int) int { return min(limit, int(s.places.Load())) }
func (s *fixedShares) Divisor() int        { return 1 }

// A process whose deliveries all wait in line, admitting nothing new,
// still gives up its places when its share shrinks because another
// process joined. Tuned only at admission, it kept the whole
// provider_connection_limit, the newcomer took its share as well, and the
// provider saw 4 connections under a limit of 3 (two serve processes on
// PostgreSQL, TestBinaryProviderLimitsAcrossProcesses).
func TestShareShrinksWhileDeliveriesWaitInLine(t *testing.T) {
	t.Parallel()
	shares := &fixedShares{}
	shares.places.Store(3)
	f := shaped(t, smtptest.Config{DataDelay: 30 * time.Millisecond}, `["default"]
connection_limit = 1
max_deliveries_per_connection = 2

[provider."big"]
match = [{MXSuffix = ".big.test"}]
provider_connection_limit = 3
`, func(c *delivery.Config) { c.Shares = shares })
	sites := []string{"x.test", "y.test", "z.test"}
	for i, d := range sites {
		f.mx([]string{fmt.Sprintf("mx%d.big.test", i)}, d)
	}
	ctx := context.Background()
	type admitted struct {
		tk   *delivery.Ticket
		rcpt string
	}
	var all []admitted
	for i := range 30 {
		rcpt := fmt.Sprintf("r%d@%s", i, sites[i%3])
		tk, _, err := f.tr.Admit(ctx, direct, rcpt)
		if err != nil {
			t.Fatal(err)
		}
		if tk != nil {
			all = append(all, admitted{tk, rcpt})
		}
	}
	if len(all) < 6 {
		t.Fatalf("%d admitted, want a connection and a line for each of 3 sites", len(all))
	}
	shares.places.Store(1) // another process joined; nothing is admitted from now on
	var wg sync.WaitGroup
	for _, a := range all {
		wg.Go(func() {
			if _, err := f.tr.SendTicket(ctx, a.tk, delivery.Envelope{From: "a@sender.test", To: a.rcpt}, []byte(testMsg)); err != nil {
				t.Errorf("SendTicket %s: %v", a.rcpt, err)
			}
		})
	}
	wg.Wait()
	msgs := f.sink.Messages()
	if len(msgs) != len(all) {
		t.Fatalf("sink got %d messages, want %d", len(msgs), len(all))
	}
	// Each connection's span, from its greeting to its last message:
	// apart from the three granted before the change, the connections
	// follow one another.
	type span struct{ first, last time.Time }
	spans := map[string]*span{}
	var order []string
	for _, m := range msgs {
		sp := spans[m.RemoteAddr]
		if sp == nil {
			sp = &span{m.ConnectedAt, m.ReceivedAt}
			spans[m.RemoteAddr] = sp
			order = append(order, m.RemoteAddr)
		}
		sp.last = m.ReceivedAt
	}
	if len(order) <= 3 {
		t.Fatalf("%d connections, want more than the 3 opened before the share shrank", len(order))
	}
	later := order[3:]
	for i, a := range later {
		for _, b := range later[i+1:] {
			if sa, sb := spans[a], spans[b]; sa.first.Before(sb.last) && sb.first.Before(sa.last) {
				t.Errorf("connections %s and %s carried messages at the same time after the share fell to 1", a, b)
			}
		}
	}
}
