package app_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/emersion/go-smtp"

	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/store"
)

// TestReceivingPostsBound runs the outbox amplification: every post of a
// route's forward(URL) keeps its own copy of the message until it ends,
// so one message to several recipients of a route with 10 URLs that fail
// (here: a host no DNS answers for, retried for hours) is 10 copies per
// recipient. The account's pending posts hold at most
// --inbound-post-bytes-per-account: a message past it is 452 4.2.2 with
// nothing recorded, and the outbox stays within the bound.
func TestReceivingPostsBound(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		const bound = 64 << 10
		r := startInbound(t, d, func(c *config.Config) { c.InboundPostBytesPerAccount = bound })
		var urls []string
		for i := range 10 {
			urls = append(urls, fmt.Sprintf(`forward("http://down%d.unanswered.example/in")`, i))
		}
		r.route(t, r.user, 0, `match_recipient("^amp")`, urls...)
		msg := crlfText("From: ann@sender.example\nSubject: amplified\n\n") + strings.Repeat(strings.Repeat("x", 1022)+"\r\n", 3)
		pending := func() (n, bytes int64) {
			t.Helper()
			if err := r.App.DB.Reader().QueryRowContext(context.Background(), `SELECT COUNT(*), COALESCE(SUM(LENGTH(raw)), 0)
				FROM inbound_posts WHERE state = 'pending'`).Scan(&n, &bytes); err != nil {
				t.Fatal(err)
			}
			return n, bytes
		}
		// One recipient: 10 copies of ~3.5 KiB fit.
		if res := deliver(t, r.addr, "ann@sender.example", []string{"amp0@shop.example.com"}, msg); res.data != nil {
			t.Fatalf("one recipient, 10 posts: %v %v", res.rcpt, res.data)
		}
		if n, _ := pending(); n != 10 {
			t.Fatalf("%d pending posts after one message to one recipient; want 10", n)
		}
		// Eight recipients: 80 more copies would pass the bound.
		var rcpts []string
		for i := range 8 {
			rcpts = append(rcpts, fmt.Sprintf("amp%d@shop.example.com", i+1))
		}
		res := deliver(t, r.addr, "ann@sender.example", rcpts, msg)
		var se *smtp.SMTPError
		if errorsAs(res.data, &se); se == nil || se.Code != 452 || se.EnhancedCode != (smtp.EnhancedCode{4, 2, 2}) ||
			!strings.Contains(se.Message, "posted") {
			t.Fatalf("8 recipients x 10 URLs past %d bytes of pending posts: %v %v; want 452 4.2.2 naming the posts", bound, res.rcpt, res.data)
		}
		if n, b := pending(); b > bound {
			t.Errorf("the outbox holds %d posts of %d bytes; want at most %d bytes", n, b, bound)
		}
		for _, rc := range rcpts {
			if e := r.entries(t, rc, event.Received); len(e) != 0 {
				t.Errorf("%s: %d received entries for the refused message; want none", rc, len(e))
			}
		}
	})
}
