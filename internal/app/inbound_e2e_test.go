package app_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/smtptest"
	"github.com/postline/postline/internal/store"
)

func smtpTo(t *testing.T, addr string, rcpts []string, body string) error {
	t.Helper()
	return smtptest.Deliver(addr, rcpts, body)
}

func smtpCode(err error) int {
	var se *smtp.SMTPError
	if errors.As(err, &se) {
		return se.Code
	}
	return 0
}

func TestInboundBouncesAndComplaints(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		e := startSend(t, d, false, func(c *config.Config) { c.SMTPListen = "127.0.0.1:0" })
		inbound := e.App.Inbound.Addr()
		resp := e.Do(apitest.Request{Method: "PUT", Path: "/api/domains/shop.example.com/auth-domain", Auth: e.user.Auth(),
			Body: map[string]string{"host": "bounces.shop.example.com"}})
		if resp.StatusCode != 200 {
			t.Fatalf("set auth domain: %d %s", resp.StatusCode, resp.Body)
		}
		rcpts := []string{"ann@rcpt.example.net", "bob@rcpt.example.net", "cat@rcpt.example.net"}
		e.send(t, basicParts(rcpts...), nil)
		msgs, err := e.sink.WaitForMessages(ctxTimeout(t, 15*time.Second), 3)
		if err != nil {
			t.Fatal(err)
		}
		verp, msgID := map[string]string{}, map[string]string{}
		for _, m := range msgs {
			verp[m.To[0]] = m.From
			msgID[m.To[0]] = strings.Trim(readReceivedHeader(t, m, "Message-Id"), "<>")
		}
		for _, r := range rcpts {
			if !strings.HasPrefix(verp[r], "bounce+") || !strings.HasSuffix(verp[r], "@bounces.shop.example.com") {
				t.Fatalf("MAIL FROM for %s = %q, want a bounce address", r, verp[r])
			}
			e.chain(t, r, event.Delivered)
		}

		// Not an open relay, and no made-up bounce addresses.
		for _, rc := range []string{"someone@shop.example.com", "bounce+1-0123456789abcdef@bounces.shop.example.com",
			strings.Replace(verp["ann@rcpt.example.net"], "bounce+", "bounce+9", 1)} {
			if err := smtpTo(t, inbound, []string{rc}, smtptest.DSN("x@y.example", "failed", "5.1.1", "x@y")); smtpCode(err) != 550 {
				t.Errorf("RCPT %s: %v, want 550", rc, err)
			}
		}

		// ann: permanent failure → bounced + bounce suppression.
		if err := smtpTo(t, inbound, []string{verp["ann@rcpt.example.net"]}, smtptest.DSN("ann@rcpt.example.net", "failed", "5.1.1", msgID["ann@rcpt.example.net"])); err != nil {
			t.Fatalf("DSN for ann refused: %v", err)
		}
		b := e.entries(t, "ann@rcpt.example.net", event.Bounced)
		if len(b) != 1 || det(b[0])("status") != "5.1.1" || det(b[0])("source") != "dsn" || det(b[0])("remote_mta") != "mx.rcpt.example.net" ||
			b[0].MessageID != msgID["ann@rcpt.example.net"] {
			t.Fatalf("bounced entries for ann = %+v", b)
		}
		var state string
		if err := e.App.DB.Reader().QueryRowContext(context.Background(), `SELECT state FROM deliveries WHERE message_id = $1`,
			msgID["ann@rcpt.example.net"]).Scan(&state); err != nil || state != "bounced" {
			t.Errorf("ann's delivery after the DSN: %q, %v; want bounced", state, err)
		}
		// bob: delayed → temporary_fail, nothing suppressed.
		if err := smtpTo(t, inbound, []string{verp["bob@rcpt.example.net"]}, smtptest.DSN("bob@rcpt.example.net", "delayed", "4.4.7", msgID["bob@rcpt.example.net"])); err != nil {
			t.Fatal(err)
		}
		if tf := e.entries(t, "bob@rcpt.example.net", event.TemporaryFail); len(tf) != 1 || det(tf[0])("reason") != "delayed" {
			t.Fatalf("temporary_fail for bob = %+v", tf)
		}
		// cat: complaint → unsubscribed + unsubscribe suppression (source
		// complaint); the same complaint again is accepted but not logged twice.
		for range 2 {
			if err := smtpTo(t, inbound, []string{verp["cat@rcpt.example.net"]}, smtptest.Complaint("cat@rcpt.example.net", msgID["cat@rcpt.example.net"])); err != nil {
				t.Fatal(err)
			}
		}
		if un := e.entries(t, "cat@rcpt.example.net", event.Unsubscribed); len(un) != 1 || det(un[0])("source") != "complaint" ||
			det(un[0])("feedback_type") != "abuse" {
			t.Fatalf("unsubscribed for cat = %+v", un)
		}

		resp = e.Do(apitest.Request{Method: "GET", Path: "/api/domains/shop.example.com/suppressions?type=bounce", Auth: e.user.Auth()})
		if data, _ := resp.JSON["data"].([]any); len(data) != 1 || data[0].(map[string]any)["recipient"] != "ann@rcpt.example.net" ||
			data[0].(map[string]any)["description"] != "5.1.1 reported by the test" {
			t.Fatalf("bounce suppressions (with the DSN's diagnostic code as the description): %s", resp.Body)
		}
		resp = e.Do(apitest.Request{Method: "GET", Path: "/api/domains/shop.example.com/suppressions/unsubscribes", Auth: e.user.Auth()})
		if data, _ := resp.JSON["data"].([]any); len(data) != 1 || data[0].(map[string]any)["recipient"] != "cat@rcpt.example.net" {
			t.Fatalf("unsubscribe suppressions: %s", resp.Body)
		}

		// A later send to ann is suppressed; bob still gets mail.
		e.send(t, basicParts("ann@rcpt.example.net", "bob@rcpt.example.net"), nil)
		if c := e.chain(t, "ann@rcpt.example.net", event.Failed); c[len(c)-1] != "failed" {
			t.Fatalf("ann after the bounce: %v", c)
		}
		if _, err := e.sink.WaitForMessages(ctxTimeout(t, 15*time.Second), 4); err != nil {
			t.Fatal(err)
		}
		// Whitelisting ann lets the next send through.
		resp = e.Do(apitest.Request{Method: "POST", Path: "/api/domains/shop.example.com/suppressions/whitelist", Auth: e.user.Auth(),
			Body: map[string]string{"recipient": "ann@rcpt.example.net"}})
		if resp.StatusCode >= 300 {
			t.Fatalf("whitelist: %d %s", resp.StatusCode, resp.Body)
		}
		e.send(t, basicParts("ann@rcpt.example.net"), nil)
		got, err := e.sink.WaitForMessages(ctxTimeout(t, 15*time.Second), 5)
		if err != nil || got[4].To[0] != "ann@rcpt.example.net" {
			t.Fatalf("after whitelisting, ann got nothing: %v", err)
		}
		metrics := string(e.Do(apitest.Request{Method: "GET", Path: "/metrics"}).Body)
		for _, want := range []string{`postline_inbound_messages_total{outcome="rcpt_refused"} 3`,
			`postline_inbound_messages_total{outcome="permanent"} 1`, `postline_inbound_messages_total{outcome="temporary"} 1`,
			`postline_inbound_messages_total{outcome="complaint"} 2`} {
			if !strings.Contains(metrics, want) {
				t.Errorf("metrics lack %s", want)
			}
		}
	})
}

// A mailto: unsubscribe (List-Unsubscribe with an authentication domain)
// reaches the inbound listener and unsubscribes.
func TestInboundMailtoUnsubscribe(t *testing.T) {
	t.Parallel()
	e := startSend(t, store.SQLite, false, func(c *config.Config) { c.SMTPListen, c.SMTPMaxBytes = "127.0.0.1:0", 4096 })
	for path, body := range map[string]any{"auth-domain": map[string]string{"host": "bounces.shop.example.com"},
		"tracking": map[string]bool{"unsubscribe": true}} {
		if r := e.Do(apitest.Request{Method: "PUT", Path: "/api/domains/shop.example.com/" + path, Auth: e.user.Auth(), Body: body}); r.StatusCode != 200 {
			t.Fatalf("PUT %s: %d %s", path, r.StatusCode, r.Body)
		}
	}
	e.send(t, basicParts("dan@rcpt.example.net"), nil)
	msgs, err := e.sink.WaitForMessages(ctxTimeout(t, 15*time.Second), 1)
	if err != nil {
		t.Fatal(err)
	}
	lu := readReceivedHeader(t, msgs[0], "List-Unsubscribe")
	_, mailto, ok := strings.Cut(lu, "<mailto:")
	mailto = strings.TrimSuffix(mailto, ">")
	if !ok || !strings.HasSuffix(mailto, "@bounces.shop.example.com") {
		t.Fatalf("List-Unsubscribe = %q, want a mailto under the authentication domain", lu)
	}
	if err := smtpTo(t, e.App.Inbound.Addr(), []string{mailto}, "Subject: unsubscribe\r\n\r\nplease\r\n"); err != nil {
		t.Fatalf("mailto unsubscribe refused: %v", err)
	}
	if un := e.entries(t, "dan@rcpt.example.net", event.Unsubscribed); len(un) != 1 || det(un[0])("source") != "mailto" {
		t.Fatalf("unsubscribed = %+v", un)
	}
	// Over --smtp-max-bytes: refused, nothing recorded.
	big := "Subject: big\r\n\r\n" + strings.Repeat("0123456789abcdef\r\n", 400)
	if err := smtpTo(t, e.App.Inbound.Addr(), []string{mailto}, big); smtpCode(err) != 552 {
		t.Errorf("a 7 KiB message with a 4 KiB limit: %v, want 552", err)
	}
	if un := e.entries(t, "dan@rcpt.example.net", event.Unsubscribed); len(un) != 1 {
		t.Errorf("the refused message was recorded: %d entries", len(un))
	}
}

func readReceivedHeader(t *testing.T, m smtptest.Message, name string) string {
	t.Helper()
	head, _, _ := strings.Cut(string(m.Data), "\r\n\r\n")
	for _, line := range strings.Split(strings.ReplaceAll(head, "\r\n ", " "), "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(k, name) {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
