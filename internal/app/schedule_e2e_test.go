package app_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/app"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/store"
)

// testClock is a clock the test moves.
type testClock struct{ offset atomic.Int64 }

func (c *testClock) now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *testClock) advance(d time.Duration) { c.offset.Add(int64(d)) }

// TestScheduledDelivery: deliver_at holds a message in the queue (shown as
// scheduled) while an unscheduled one goes out; it is sent once when the
// clock reaches its time, also by a process that was not running when it
// was accepted; a cancelled one is never sent and is logged as failed with
// reason cancelled; bad times are 422.
func TestScheduledDelivery(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		clock := &testClock{}
		e := startSendWith(t, d, false, nil, app.Options{Now: clock.now})
		bob := e.NewUser("bob")
		e.NewDomain(bob, "bob.example.org")
		do := func(u apitest.User, method, path string) *apitest.Response {
			return e.Do(apitest.Request{Method: method, Path: path, Auth: u.Auth()})
		}
		at := clock.now().Add(time.Hour).UTC().Truncate(time.Second)
		scheduled := func(to string) string {
			t.Helper()
			resp := e.send(t, append(basicParts(to), part{name: "deliver_at", value: at.Format(time.RFC3339)}), nil)
			data, _ := resp.JSON["data"].(map[string]any)
			if resp.StatusCode != 202 || data["deliver_at"] == nil || !strings.Contains(resp.JSON["message"].(string), "Scheduled for") {
				t.Fatalf("scheduled send: %d %s", resp.StatusCode, resp.Body)
			}
			return data["message_ids"].([]any)[0].(string)
		}
		later := scheduled("later@rcpt.example.net")
		cancelled := scheduled("never@rcpt.example.net")
		msg := do(e.user, "GET", "/api/domains/shop.example.com/messages/"+later)
		if rc := msg.JSON["data"].(map[string]any)["recipients"].([]any); msg.StatusCode != 200 || rc[0].(map[string]any)["state"] != "scheduled" {
			t.Fatalf("GET a scheduled message: %d %s", msg.StatusCode, msg.Body)
		}
		// A message sent after them without deliver_at goes out first and
		// alone: the worker has looked at the queue since.
		e.send(t, basicParts("now@rcpt.example.net"), nil)
		e.chain(t, "now@rcpt.example.net", event.Delivered)
		if n := len(e.sink.Messages()); n != 1 {
			t.Fatalf("%d messages at the sink before the scheduled time, want 1", n)
		}

		// Cancel one; a second cancel, an unknown id and bob's view are refused.
		if r := do(e.user, "DELETE", "/api/domains/shop.example.com/messages/<"+cancelled+">"); r.StatusCode != 200 || r.JSON["data"].(map[string]any)["cancelled"] != 1.0 {
			t.Fatalf("cancel: %d %s", r.StatusCode, r.Body)
		}
		if r := do(e.user, "DELETE", "/api/domains/shop.example.com/messages/"+cancelled); r.StatusCode != 409 {
			t.Errorf("cancel twice: %d %s", r.StatusCode, r.Body)
		}
		for _, r := range []*apitest.Response{do(e.user, "GET", "/api/domains/shop.example.com/messages/nope@shop.example.com"),
			do(bob, "GET", "/api/domains/shop.example.com/messages/"+later), do(bob, "DELETE", "/api/domains/shop.example.com/messages/"+later),
			do(bob, "GET", "/api/domains/bob.example.org/messages/"+later)} {
			if r.StatusCode != 404 {
				t.Errorf("unknown or another account's message: %d %s", r.StatusCode, r.Body)
			}
		}

		// Bad times.
		for _, v := range []string{"tomorrow", clock.now().Add(8 * 24 * time.Hour).Format(time.RFC3339)} {
			resp := e.send(t, append(basicParts("x@rcpt.example.net"), part{name: "deliver_at", value: v}), nil)
			if errs, _ := resp.JSON["errors"].(map[string]any); resp.StatusCode != 422 || errs["deliver_at"] == nil {
				t.Errorf("deliver_at %q: %d %s", v, resp.StatusCode, resp.Body)
			}
		}
		// A time already past sends at once.
		resp := e.send(t, append(basicParts("past@rcpt.example.net"), part{name: "deliver_at", value: "2020-01-01T00:00:00Z"}), nil)
		if resp.StatusCode != 202 || resp.JSON["data"].(map[string]any)["deliver_at"] != nil {
			t.Fatalf("a past deliver_at: %d %s", resp.StatusCode, resp.Body)
		}
		e.chain(t, "past@rcpt.example.net", event.Delivered)

		// The process stops before the time; another, started later on the
		// same database, sends it once when its clock gets there.
		e.App.Worker.Stop()
		clock.advance(61 * time.Minute)
		other, err := app.Open(context.Background(), e.Config, nil, app.Options{DKIMKeyBits: 1024, Now: clock.now})
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if err := other.StartWorkers(ctx); err != nil {
			t.Fatal(err)
		}
		if types := e.chain(t, "later@rcpt.example.net", event.Delivered); strings.Join(types, ",") != "queued,send,delivered" {
			t.Errorf("the scheduled message's chain: %v", types)
		}
		// Once: the sentinel, the past one and the scheduled one; never the
		// cancelled one.
		e.send(t, basicParts("last@rcpt.example.net"), nil)
		e.chain(t, "last@rcpt.example.net", event.Delivered)
		var to []string
		for _, m := range e.sink.Messages() {
			to = append(to, m.To...)
		}
		if strings.Join(to, " ") != "now@rcpt.example.net past@rcpt.example.net later@rcpt.example.net last@rcpt.example.net" {
			t.Errorf("delivered, in order: %v", to)
		}
		entries := e.entries(t, "never@rcpt.example.net", event.Failed)
		if len(entries) != 1 || !strings.Contains(string(entries[0].Details), `"reason":"cancelled"`) {
			t.Errorf("the cancelled message's failed entry: %+v", entries)
		}
		got := do(e.user, "GET", "/api/domains/shop.example.com/messages/"+cancelled).JSON["data"].(map[string]any)
		if got["recipients"].([]any)[0].(map[string]any)["state"] != "cancelled" {
			t.Errorf("GET the cancelled message: %v", got)
		}
	})
}
