package app_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/smtptest"
	"github.com/postline/postline/internal/testutil"
)

// TestClaimAheadReleasedAtStop: while attempts are quick the worker claims
// as many deliveries ahead as it has slots, so a freed slot starts the next
// one without waiting for a claim. Those must not be stranded: stopping the
// worker puts them back in the queue, due at once and with their attempt
// not counted, instead of leaving them leased until the lease runs out.
func TestClaimAheadReleasedAtStop(t *testing.T) {
	t.Parallel()
	for _, d := range testutil.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			// An MX that accepts connections and never greets: attempts hang.
			mx, dialled := smtptest.SilentCounting(t, "127.0.0.1:0")
			e := startSend(t, d, false, func(c *config.Config) {
				c.MXPort = mx.Port
				c.DeliveryWorkers = 2
				c.DeliveryLease = time.Hour // a stranded claim would stay leased for the whole test
				c.ShutdownTimeout = 200 * time.Millisecond
			})
			// Due together, so that one claim finds more than the free slots.
			at := time.Now().Add(time.Second).UTC().Format(time.RFC3339)
			for i := range 6 {
				ps := append(basicParts(fmt.Sprintf("r%d@rcpt.example.net", i)), part{name: "deliver_at", value: at})
				if r := e.send(t, ps, nil); r.StatusCode != 202 {
					t.Fatalf("send %d: %d %s", i, r.StatusCode, r.Body)
				}
			}
			states := func() map[string]int {
				rows, err := e.App.DB.Reader().QueryContext(context.Background(),
					`SELECT state || '/' || attempts, count(*) FROM deliveries GROUP BY 1`)
				if err != nil {
					t.Fatal(err)
				}
				defer rows.Close()
				m := map[string]int{}
				for rows.Next() {
					var k string
					var n int
					rows.Scan(&k, &n)
					m[k] = n
				}
				return m
			}
			// Two attempts hang at the MX (both have connected: claimed is
			// not yet started); one or two more are claimed ahead (two
			// while attempts look quick; a loaded machine's slower claims
			// make the worker take fewer ahead).
			deadline := time.Now().Add(10 * time.Second)
			for states()["sending/1"] < 3 || dialled() < 2 {
				if time.Now().After(deadline) {
					t.Fatalf("deliveries by state/attempts: %v, %d connections at the MX; want 3 or 4 claimed (2 running, 1 or 2 ahead)",
						states(), dialled())
				}
				time.Sleep(20 * time.Millisecond)
			}
			if got := states(); got["pending/0"] != 6-got["sending/1"] || got["sending/1"] > 4 {
				t.Fatalf("deliveries by state/attempts: %v; want at most 4 claimed, the rest still pending", got)
			}
			e.App.Worker.Stop()
			got := states()
			// The two claimed ahead are back, uncounted and pending again
			// (never tried); the two that were running were interrupted
			// (their outcome depends on where the cancellation found them);
			// the two pending were never touched.
			if got["pending/0"] != 4 || got["sending/1"]+got["deferred/1"] != 2 {
				t.Fatalf("after Stop, deliveries by state/attempts: %v; want 2 released and 2 untouched (pending/0), 2 interrupted", got)
			}
			var due int
			e.App.DB.Reader().QueryRowContext(context.Background(),
				`SELECT count(*) FROM deliveries WHERE state = 'pending' AND attempts = 0 AND lease_owner IS NULL AND next_attempt_at <= $1`,
				time.Now().UnixMilli()).Scan(&due)
			if due != 4 {
				t.Fatalf("%d released or untouched deliveries are due now without a lease, want 4", due)
			}
		})
	}
}
