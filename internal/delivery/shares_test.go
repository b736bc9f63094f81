package delivery_test

import (
	"context"
	"sync"
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
