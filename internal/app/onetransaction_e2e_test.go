package app_test

import (
	"fmt"
	"net/smtp"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/app"
	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/smtptest"
	"github.com/postline/postline/internal/store"
)

// submitTo submits one message over SMTP submission (STARTTLS + AUTH
// PLAIN) to every recipient of rcpts.
func submitTo(t *testing.T, e *sendEnv, rcpts []string) {
	t.Helper()
	c, err := dialSubmission(t, e, false, smtp.PlainAuth("", "alice", e.user.Key, "127.0.0.1"))
	if err != nil {
		t.Fatalf("STARTTLS + AUTH PLAIN: %v", err)
	}
	msg := submittedMessage("orders@shop.example.com", "Customers <orders@shop.example.com>", "")
	if err := submit(c, "orders@shop.example.com", rcpts, msg); err != nil {
		t.Fatalf("submit to %d recipients: %v", len(rcpts), err)
	}
}

func recipients(n int, domain string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("r%03d@%s", i, domain)
	}
	return out
}

// TestOneTransactionForManyRecipients: one message submitted over SMTP to
// 120 recipients at one domain reaches the receiving server in three
// transactions of 50, 50 and 20 RCPTs (max_recipients_per_transaction's
// default), each one signed message whose DKIM signature verifies, and
// every recipient's log says send then delivered.
func TestOneTransactionForManyRecipients(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		e := startSubmission(t, d, nil)
		rcpts := recipients(120, "rcpt.example.net")
		submitTo(t, e, rcpts)
		for _, r := range rcpts {
			if got := e.chain(t, r, event.Delivered, event.Bounced, event.Failed); !slices.Equal(got, []string{"queued", "send", "delivered"}) {
				t.Fatalf("%s: log %v, want queued, send, delivered", r, got)
			}
		}
		msgs := e.sink.Messages()
		var sizes []int
		var got []string
		for _, m := range msgs {
			sizes = append(sizes, len(m.To))
			got = append(got, m.To...)
			if v := dkimVerify(t, e, m.Data); v.Domain != "shop.example.com" {
				t.Errorf("a transaction's message is signed by %q, want shop.example.com", v.Domain)
			}
			head, _, _ := strings.Cut("\r\n"+strings.ToLower(string(m.Data)), "\r\n\r\n")
			if n := strings.Count(head, "\r\ndkim-signature:"); n != 1 {
				t.Errorf("a transaction's message has %d DKIM-Signature fields, want 1", n)
			}
		}
		slices.Sort(sizes)
		slices.Sort(got)
		if !slices.Equal(sizes, []int{20, 50, 50}) || !slices.Equal(got, rcpts) {
			t.Errorf("the server saw %d transactions of %v RCPTs, want 3 of 50, 50 and 20 covering every recipient once", len(msgs), sizes)
		}
	})
}

// TestOneTransactionRefusesSome: in one transaction the server refuses
// one RCPT with 550 and defers another with 451; the other recipients get
// the message in that transaction, the refused one bounces (and is
// suppressed), the deferred one is deferred and delivered on its retry.
func TestOneTransactionRefusesSome(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		e := startSubmission(t, d, nil)
		rcpts := recipients(6, "rcpt.example.net")
		gone, full := rcpts[2], rcpts[4]
		e.sink.Script(gone, smtptest.Reply{Code: 550, Enhanced: [3]int{5, 1, 1}, Message: "no such user"})
		e.sink.Script(full, smtptest.Reply{Code: 451, Enhanced: [3]int{4, 2, 2}, Message: "mailbox busy"})
		submitTo(t, e, rcpts)
		if got := e.chain(t, gone, event.Bounced, event.Delivered); !slices.Equal(got, []string{"queued", "send", "permanent_fail", "bounced"}) {
			t.Errorf("%s (550): log %v, want queued, send, permanent_fail, bounced", gone, got)
		}
		if got := e.chain(t, full, event.Delivered, event.Failed); !slices.Equal(got,
			[]string{"queued", "send", "temporary_fail", "deferred", "send", "delivered"}) {
			t.Errorf("%s (451): log %v, want deferred then delivered on its retry", full, got)
		}
		others := slices.DeleteFunc(slices.Clone(rcpts), func(r string) bool { return r == gone || r == full })
		for _, r := range others {
			if got := e.chain(t, r, event.Delivered, event.Bounced, event.Failed); !slices.Equal(got, []string{"queued", "send", "delivered"}) {
				t.Errorf("%s: log %v, want queued, send, delivered", r, got)
			}
		}
		msgs := e.sink.Messages()
		if len(msgs) != 2 || !slices.Equal(msgs[0].To, others) || !slices.Equal(msgs[1].To, []string{full}) {
			var tos [][]string
			for _, m := range msgs {
				tos = append(tos, m.To)
			}
			t.Errorf("the server accepted %v, want %v in one transaction, then %s alone on its retry", tos, others, full)
		}
		p := e.entries(t, gone, event.PermanentFail)
		if len(p) != 1 || det(p[0])("smtp_code") != float64(550) {
			t.Errorf("%s: permanent_fail entries %+v, want its own 550", gone, p)
		}
		if v, err := e.App.Suppressions.Check(ctxTimeout(t, 5*time.Second), e.dom.ID, gone); err != nil || !v.Suppressed {
			t.Errorf("%s is not on the bounce list (%v)", gone, err)
		}
	})
}

// TestPerRecipientCopiesGoAlone: copies that name their recipient (open
// tracking; a VERP bounce address under an authentication domain) still
// go one recipient per transaction.
func TestPerRecipientCopiesGoAlone(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, path string
		body       any
	}{
		{"tracked", "/api/domains/shop.example.com/tracking", map[string]bool{"opens": true}},
		{"verp", "/api/domains/shop.example.com/auth-domain", map[string]string{"host": "bounces.shop.example.com"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			forEachDialect(t, func(t *testing.T, d store.Dialect) {
				e := startSubmission(t, d, nil)
				if resp := e.Do(apitest.Request{Method: "PUT", Path: c.path, Auth: e.user.Auth(), Body: c.body}); resp.StatusCode != 200 {
					t.Fatalf("PUT %s: %d %s", c.path, resp.StatusCode, resp.Body)
				}
				rcpts := recipients(4, "rcpt.example.net")
				submitTo(t, e, rcpts)
				for _, r := range rcpts {
					e.chain(t, r, event.Delivered, event.Bounced, event.Failed)
				}
				froms := map[string]bool{}
				for _, m := range e.sink.Messages() {
					if len(m.To) != 1 {
						t.Errorf("a transaction to %v, want one recipient each", m.To)
					}
					froms[m.From] = true
				}
				if c.name == "verp" && len(froms) != len(rcpts) {
					t.Errorf("MAIL FROM %v, want a bounce address per recipient", froms)
				}
			})
		})
	}
}

// TestBuiltCopiesShareWithCc: a /v3/ send with cc shows every copy the
// same To and Cc and one Message-ID, so its recipients share one
// transaction; without cc each copy's To is its own recipient and each
// goes alone.
func TestBuiltCopiesShareWithCc(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		e := startSend(t, d, false, nil)
		mgSend(t, e, "ann@rcpt.example.net", url.Values{"cc": {"bob@rcpt.example.net"}})
		for _, r := range []string{"ann@rcpt.example.net", "bob@rcpt.example.net"} {
			e.chain(t, r, event.Delivered, event.Bounced, event.Failed)
		}
		msgs := e.sink.Messages()
		if len(msgs) != 1 || !slices.Equal(msgs[0].To, []string{"ann@rcpt.example.net", "bob@rcpt.example.net"}) {
			t.Fatalf("with cc the sink got %d messages, want one to ann and bob", len(msgs))
		}
		head, _, _ := strings.Cut(string(msgs[0].Data), "\r\n\r\n")
		if !hasField(head, "Cc") || !strings.Contains(head, "bob@rcpt.example.net") {
			t.Errorf("the shared copy does not show its Cc:\n%s", head)
		}
		dkimVerify(t, e, msgs[0].Data)

		mgSend(t, e, "cy@rcpt.example.net, dee@rcpt.example.net", nil)
		for _, r := range []string{"cy@rcpt.example.net", "dee@rcpt.example.net"} {
			e.chain(t, r, event.Delivered, event.Bounced, event.Failed)
		}
		all := e.sink.Messages()
		if len(all) != 3 {
			t.Errorf("without cc: %d transactions in all, want 1 + one per recipient", len(all))
		}
		for _, m := range all[1:] {
			if len(m.To) != 1 {
				t.Errorf("without cc a transaction to %v, want one recipient each", m.To)
			}
		}
	})
}

// TestRecipientsPerTransactionFromShaping: a shaping file's
// max_recipients_per_transaction bounds the RCPTs of each transaction (the
// first claim groups under the default 50 and gives the excess back, not
// as an attempt); 1 sends every recipient alone.
func TestRecipientsPerTransactionFromShaping(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		limit int
		want  []int // transaction sizes, sorted
	}{{2, []int{1, 2, 2}}, {1, []int{1, 1, 1, 1, 1}}} {
		t.Run(fmt.Sprint(c.limit), func(t *testing.T) {
			t.Parallel()
			forEachDialect(t, func(t *testing.T, d store.Dialect) {
				// ["default"]: a domain section would have the rules look up
				// the domain's MX hosts at start, before the test's zone has them.
				file := filepath.Join(t.TempDir(), "shaping.toml")
				if err := os.WriteFile(file, fmt.Appendf(nil, "[\"default\"]\nmax_recipients_per_transaction = %d\n", c.limit), 0o600); err != nil {
					t.Fatal(err)
				}
				e := startSubmission(t, d, func(cfg *config.Config) { cfg.ShapingFiles = []string{file} })
				rcpts := recipients(5, "rcpt.example.net")
				submitTo(t, e, rcpts)
				for _, r := range rcpts {
					if got := e.chain(t, r, event.Delivered, event.Bounced, event.Failed); !slices.Equal(got, []string{"queued", "send", "delivered"}) {
						t.Errorf("%s: log %v, want queued, send, delivered (a turn given back is no attempt)", r, got)
					}
				}
				var sizes []int
				for _, m := range e.sink.Messages() {
					sizes = append(sizes, len(m.To))
				}
				slices.Sort(sizes)
				if !slices.Equal(sizes, c.want) {
					t.Errorf("max_recipients_per_transaction = %d: transactions of %v RCPTs, want %v", c.limit, sizes, c.want)
				}
			})
		})
	}
}

// TestSharedTransactionKeepsEveryLease: a server slower to answer DATA
// than the delivery lease (1s) does not get the message twice: every
// delivery of the transaction has its lease renewed until its outcome is
// recorded, so none is rescued and sent again meanwhile.
func TestSharedTransactionKeepsEveryLease(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		e := startSendSink(t, d, false, func(c *config.Config) {
			c.SubmissionListen, c.SubmissionsListen = "127.0.0.1:0", "127.0.0.1:0"
			c.DeliveryLease = time.Second
		}, app.Options{}, smtptest.Config{DataDelay: 2500 * time.Millisecond})
		waitFor(t, "submission listening", func() bool { return e.App.Submission != nil && e.App.Submission.Addr(false) != "" })
		rcpts := recipients(3, "rcpt.example.net")
		submitTo(t, e, rcpts)
		for _, r := range rcpts {
			if got := e.chain(t, r, event.Delivered, event.Bounced, event.Failed); !slices.Equal(got, []string{"queued", "send", "delivered"}) {
				t.Errorf("%s: log %v, want queued, send, delivered", r, got)
			}
		}
		time.Sleep(1500 * time.Millisecond) // a rescued copy would be on its way by now
		if msgs := e.sink.Messages(); len(msgs) != 1 || len(msgs[0].To) != 3 {
			t.Errorf("the sink got %d transactions, want the one to all three", len(msgs))
		}
	})
}
