package app_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/smtptest"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/suppression"
)

func TestSendOutcomesDirectToMX(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		e := startSend(t, d, false, nil)
		e.sink.Script("slow@rcpt.example.net", smtptest.Reply{Code: 451, Enhanced: [3]int{4, 7, 1}, Message: "greylisted, try again"})
		e.sink.Script("gone@rcpt.example.net", smtptest.Reply{Code: 550, Enhanced: [3]int{5, 1, 1}, Message: "no such user"})
		e.sink.Script("policy@rcpt.example.net", smtptest.Reply{Code: 554, Enhanced: [3]int{5, 7, 1}, Message: "rejected by policy"})
		resp := e.send(t, basicParts("ok@rcpt.example.net", "slow@rcpt.example.net", "gone@rcpt.example.net", "policy@rcpt.example.net"), nil)
		if resp.StatusCode != 202 {
			t.Fatalf("send: %d %s", resp.StatusCode, resp.Body)
		}
		cases := map[string]string{
			"ok@rcpt.example.net":     "queued send delivered",
			"slow@rcpt.example.net":   "queued send temporary_fail deferred send delivered",
			"gone@rcpt.example.net":   "queued send permanent_fail bounced",
			"policy@rcpt.example.net": "queued send permanent_fail failed",
		}
		for r, want := range cases {
			if got := strings.Join(e.chain(t, r, event.Delivered, event.Bounced, event.Failed), " "); got != want {
				t.Errorf("%s: log %q, want %q", r, got, want)
			}
		}
		v, _ := e.App.Suppressions.Check(context.Background(), e.dom.ID, "gone@rcpt.example.net")
		if !v.Suppressed || v.By.Type != suppression.Bounce || v.By.Source == nil || *v.By.Source != "bounce:5.1.1" {
			t.Fatalf("bounce suppression after 550 5.1.1: %+v", v)
		}
		if v, _ := e.App.Suppressions.Check(context.Background(), e.dom.ID, "policy@rcpt.example.net"); v.Suppressed {
			t.Errorf("a policy rejection must not suppress the recipient")
		}

		// The bounced recipient is suppressed on the next send, until whitelisted.
		resp = e.send(t, basicParts("gone@rcpt.example.net", "ok@rcpt.example.net"), nil)
		data := resp.JSON["data"].(map[string]any)
		if resp.StatusCode != 202 || data["queued"] != 1.0 || data["suppressed"] != 1.0 ||
			resp.JSON["message"] != "Email queued for 1 recipient(s) as 1 job(s) with 0 attachment(s). 1 other recipient(s) suppressed and not sent." {
			t.Fatalf("send to a bounced and a good recipient: %d %s; want one queued, one suppressed, and a message that counts them so", resp.StatusCode, resp.Body)
		}
		if got := e.chain(t, "gone@rcpt.example.net", event.Failed); got[len(got)-1] != "failed" {
			t.Fatalf("suppressed send log %v", got)
		}
		if _, _, err := e.App.Suppressions.Add(context.Background(), suppression.AddParams{DomainID: e.dom.ID,
			Type: suppression.Whitelist, Recipient: "gone@rcpt.example.net"}); err != nil {
			t.Fatal(err)
		}
		before := len(e.sink.Messages())
		resp = e.send(t, basicParts("gone@rcpt.example.net"), nil)
		if resp.JSON["data"].(map[string]any)["queued"] != 1.0 {
			t.Fatalf("send after whitelisting: %s", resp.Body)
		}
		if _, err := e.sink.WaitForMessages(ctxTimeout(t, 15*time.Second), before+1); err != nil {
			t.Fatalf("whitelisted recipient not delivered: %v", err)
		}
	})
}

func TestSendGivesUpAfterMaxAge(t *testing.T) {
	t.Parallel()
	e := startSend(t, store.SQLite, false, func(c *config.Config) { c.MaxMessageAge = 700 * time.Millisecond })
	e.sink.Script("never@rcpt.example.net", smtptest.Reply{Code: 450, Message: "mailbox busy"}, smtptest.Reply{Code: 450, Message: "mailbox busy"},
		smtptest.Reply{Code: 450, Message: "mailbox busy"}, smtptest.Reply{Code: 450, Message: "mailbox busy"})
	if resp := e.send(t, basicParts("never@rcpt.example.net"), nil); resp.StatusCode != 202 {
		t.Fatalf("send: %d %s", resp.StatusCode, resp.Body)
	}
	got := e.chain(t, "never@rcpt.example.net", event.Failed)
	if got[len(got)-2] != "temporary_fail" || !strings.HasPrefix(strings.Join(got, " "), "queued send temporary_fail deferred send") {
		t.Fatalf("log %v: want retries then temporary_fail, failed", got)
	}
	pg, _ := e.App.Events.List(context.Background(), event.Filter{DomainID: e.dom.ID, Type: event.Failed, Limit: 1})
	if len(pg.Entries) != 1 || !strings.Contains(string(pg.Entries[0].Details), "max_age_exceeded") {
		t.Fatalf("failed entry %+v, want reason max_age_exceeded", pg.Entries)
	}
}

func TestSendIdempotencyKey(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) { testIdempotencyKey(t, startSend(t, d, false, nil)) })
}

func testIdempotencyKey(t *testing.T, e *sendEnv) {
	h := http.Header{"Idempotency-Key": {"order-42"}}
	first := e.send(t, basicParts("ok@rcpt.example.net"), h)
	second := e.send(t, basicParts("ok@rcpt.example.net"), http.Header{"Idempotency-Key": {"order-42"}})
	if first.StatusCode != 202 || second.StatusCode != 202 || string(first.Body) != string(second.Body) || second.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("repeat: %d %s / %d %s", first.StatusCode, first.Body, second.StatusCode, second.Body)
	}
	e.chain(t, "ok@rcpt.example.net", event.Delivered)
	pg, _ := e.App.Events.List(context.Background(), event.Filter{DomainID: e.dom.ID, Type: event.Queued, Limit: 10})
	if len(pg.Entries) != 1 {
		t.Fatalf("%d queued entries, want 1 (the repeat queues nothing)", len(pg.Entries))
	}

	// Concurrent requests with one key: one is sent, the others replay its
	// answer or are told to retry (409); never a second message.
	var wg sync.WaitGroup
	codes := make(chan int, 6)
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes <- e.send(t, basicParts("burst@rcpt.example.net"), http.Header{"Idempotency-Key": {"burst"}}).StatusCode
		}()
	}
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != 202 && c != 409 {
			t.Errorf("concurrent request with one key: %d", c)
		}
	}
	if pg, _ := e.App.Events.List(context.Background(), event.Filter{DomainID: e.dom.ID, Type: event.Queued,
		Recipient: "burst@rcpt.example.net", Limit: 10}); len(pg.Entries) != 1 {
		t.Errorf("%d messages queued by 6 concurrent requests with one key, want 1", len(pg.Entries))
	}

	// A request refused with 422 frees its key for the corrected request.
	bad := []part{{name: "from", value: "orders@shop.example.com"}, {name: "to", value: "fix@rcpt.example.net"}, {name: "text", value: "t"}}
	if r := e.send(t, bad, http.Header{"Idempotency-Key": {"fix-me"}}); r.StatusCode != 422 {
		t.Fatalf("request without subject: %d", r.StatusCode)
	}
	if r := e.send(t, basicParts("fix@rcpt.example.net"), http.Header{"Idempotency-Key": {"fix-me"}}); r.StatusCode != 202 ||
		r.Header.Get("Idempotent-Replayed") != "" {
		t.Errorf("corrected request with the key of a refused one: %d %s", r.StatusCode, r.Body)
	}
}

func TestSendRejectsBadRequests(t *testing.T) {
	t.Parallel()
	e := startSend(t, store.SQLite, false, nil)
	with := func(extra ...part) []part { return append(basicParts("ok@rcpt.example.net"), extra...) }
	cases := []struct {
		name  string
		parts []part
		field string
	}{
		{"no from", []part{{name: "to", value: "a@rcpt.example.net"}, {name: "subject", value: "s"}, {name: "text", value: "t"}}, "from"},
		{"foreign from", []part{{name: "from", value: "x@evil.example.org"}, {name: "to", value: "a@rcpt.example.net"}, {name: "subject", value: "s"}, {name: "text", value: "t"}}, "from"},
		{"no to", []part{{name: "from", value: "a@shop.example.com"}, {name: "subject", value: "s"}, {name: "text", value: "t"}}, "to"},
		{"bad recipient", with(part{name: "to", value: "not an address"}), "to.1"},
		{"no subject", []part{{name: "from", value: "a@shop.example.com"}, {name: "to", value: "a@rcpt.example.net"}, {name: "text", value: "t"}}, "subject"},
		{"no text", []part{{name: "from", value: "a@shop.example.com"}, {name: "to", value: "a@rcpt.example.net"}, {name: "subject", value: "s"}}, "text"},
		{"header injection in subject", []part{{name: "from", value: "a@shop.example.com"}, {name: "to", value: "a@rcpt.example.net"}, {name: "subject", value: "hi\r\nBcc: x@evil.example"}, {name: "text", value: "t"}}, "subject"},
		{"headers not JSON", with(part{name: "headers", value: "nope"}), "headers"},
		{"protected header", with(part{name: "headers", value: `{"From":"x@evil.example"}`}), "headers.From"},
		{"CRLF in header value", with(part{name: "headers", value: `{"X-A":"a\r\nBcc: x@evil.example"}`}), "headers.X-A"},
		{"reply_to other domain", with(part{name: "reply_to", value: "help@other.example.org"}), "reply_to"},
		{"bad options", with(part{name: "attachment_options", value: `{"watermark":{"enabled":true,"position":"middle","text":"x"}}`}), "attachment_options.watermark.position"},
	}
	for _, c := range cases {
		resp := e.send(t, c.parts, nil)
		errs, _ := resp.JSON["errors"].(map[string]any)
		if resp.StatusCode != 422 || errs[c.field] == nil || resp.JSON["error"] == nil {
			t.Errorf("%s: %d %s, want 422 {error, errors.%s}", c.name, resp.StatusCode, resp.Body, c.field)
		}
	}
	big := strings.Repeat("x", 11<<20)
	resp := e.send(t, with(part{name: "attachments", filename: "big.bin", contentType: "application/octet-stream", value: big}), nil)
	if errs, _ := resp.JSON["errors"].(map[string]any); resp.StatusCode != 422 || errs["attachments.0"] == nil {
		t.Errorf("11 MiB attachment: %d %.300s", resp.StatusCode, resp.Body)
	}
	var parts []part
	for i := 0; i < 4; i++ {
		parts = append(parts, part{name: "attachments", filename: "f.bin", contentType: "application/octet-stream", value: strings.Repeat("y", 9<<20)})
	}
	if resp := e.send(t, with(parts...), nil); resp.StatusCode != 413 || resp.JSON["error"] == nil ||
		!strings.Contains(fmt.Sprint(resp.JSON["errors"].(map[string]any)["body"]), "limit of") {
		t.Errorf("36 MiB request: %d %.300s, want 413 with errors.body naming the limit", resp.StatusCode, resp.Body)
	}
	// Unverified domain: a business rule, not a field.
	if _, err := e.App.Domains.Add(context.Background(), domain.AddParams{AccountID: e.user.ID, Name: "pending.example.com",
		Delivery: domain.Delivery{Mode: domain.ModeDirect}, Trusted: true}); err != nil {
		t.Fatal(err)
	}
	pending := []part{{name: "from", value: "orders@pending.example.com"}, {name: "to", value: "ok@rcpt.example.net"},
		{name: "subject", value: "s"}, {name: "text", value: "t"}}
	if resp := e.sendAs(t, e.user, "pending.example.com", pending); resp.StatusCode != 422 || !strings.Contains(resp.JSON["error"].(string), "not verified") {
		t.Errorf("unverified domain: %d %s", resp.StatusCode, resp.Body)
	}
}

// Bytes PostgreSQL cannot store in text (NUL, invalid UTF-8) and controls
// the message build refuses are 422s naming the field on both dialects,
// never a 500 or an accepted message that fails later.
func TestSendRejectsUnstorableText(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		e := startSend(t, d, false, nil)
		for field, value := range map[string]string{"subject": "a\x00b", "from_name": "Shop\x01", "text": "nul\x00",
			"html": "<p>\xff</p>", "tags": "t\xc3"} {
			parts := append(basicParts("ok@rcpt.example.net"), part{name: field, value: value})
			if field == "subject" || field == "text" {
				parts = []part{{name: "from", value: "orders@shop.example.com"}, {name: "to", value: "ok@rcpt.example.net"},
					{name: "subject", value: "s"}, {name: "text", value: "t"}}
				for i := range parts {
					if parts[i].name == field {
						parts[i].value = value
					}
				}
			}
			resp := e.send(t, parts, nil)
			errs, _ := resp.JSON["errors"].(map[string]any)
			if resp.StatusCode != 422 || errs[field] == nil {
				t.Errorf("%s %q: %d %s, want 422 naming it", field, value, resp.StatusCode, resp.Body)
			}
		}
	})
}

// A recipient suppressed by another process (the CLI, another serve) an
// instant before a send is never sent to: the intake's in-memory key index
// may not know it yet, but the worker checks the lists before the attempt
// and logs it failed, suppressed. The index catches up within its poll.
func TestSuppressionByAnotherProcessIsNeverSent(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		e := startSend(t, d, false, nil)
		ctx := context.Background()
		other, err := store.Open(ctx, e.App.Config.DatabaseURL) // another process's handle
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		if _, _, err := store.NewSuppressions(other).Add(ctx, suppression.Entry{DomainID: e.dom.ID, Type: suppression.Unsubscribe,
			RecipientType: suppression.Email, Recipient: "late@rcpt.example.net", CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		resp := e.send(t, basicParts("late@rcpt.example.net", "ok@rcpt.example.net"), nil)
		if resp.StatusCode != 202 {
			t.Fatalf("send: %d %s", resp.StatusCode, resp.Body)
		}
		e.chain(t, "late@rcpt.example.net", event.Failed, event.Delivered)
		pg, err := e.App.Events.List(ctx, event.Filter{DomainID: e.dom.ID, Recipient: "late@rcpt.example.net", Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if last := pg.Entries[0]; last.Type != event.Failed || !strings.Contains(string(last.Details), `"reason":"suppressed"`) {
			t.Fatalf("suppressed by another process: last entry %s %s, want failed, reason suppressed", last.Type, last.Details)
		}
		e.chain(t, "ok@rcpt.example.net", event.Delivered)
		for _, m := range e.sink.Messages() {
			if slices.Contains(m.To, "late@rcpt.example.net") {
				t.Fatal("the sink received mail for a suppressed recipient")
			}
		}
		// Once the index has followed the lists, the intake itself refuses it.
		deadline := time.Now().Add(10 * time.Second)
		for {
			resp := e.send(t, basicParts("late@rcpt.example.net"), nil)
			if resp.JSON["data"].(map[string]any)["suppressed"] == 1.0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the intake still queues a recipient another process suppressed 10 s ago: %s", resp.Body)
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
}
