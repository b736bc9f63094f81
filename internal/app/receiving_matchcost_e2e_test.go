package app_test

import (
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/store"
)

// TestReceivingMatchCostBounded runs the regular-expression attack
// through the inbound listener: a route whose match_header pattern is at
// the per-pattern bounds (99 captures, ~1,200 RE2 instructions) and a
// message with 50 Subject fields of 16 KiB (folded; within the header
// bound). Matching it took about a
// second per value (minutes for the message, hours with 1,000 such
// routes) while the session waited; now the evaluation stops at
// inboundroute.MaxMatchCost and the message is refused 550 5.3.4 at once,
// with nothing recorded, and ordinary mail to the domain still arrives.
func TestReceivingMatchCostBounded(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		r := startInbound(t, d, nil)
		pat := `(?s)` + strings.Repeat("(.*)", 99) + strings.Repeat("(?:.*)", 200) + `Q`
		r.route(t, r.user, 0, `match_recipient("^heavy@") and match_header("Subject", "`+pat+`")`, "store()")
		r.route(t, r.user, 1, `match_recipient("^ok@")`, "store()")
		var b strings.Builder
		b.WriteString("From: ann@sender.example\r\n")
		// Folded in lines of 900 bytes: one value of 16 KiB unfolded.
		value := strings.TrimSuffix(strings.Repeat(strings.Repeat("abcdefghij", 90)+"\r\n ", 18), "\r\n ")
		for range 50 {
			b.WriteString("Subject: " + value + "\r\n")
		}
		b.WriteString("\r\nbody\r\n")
		start := time.Now()
		res := deliver(t, r.addr, "ann@sender.example", []string{"heavy@shop.example.com"}, b.String())
		took := time.Since(start)
		var se *smtp.SMTPError
		if errorsAs(res.data, &se); se == nil || se.Code != 550 || se.EnhancedCode != (smtp.EnhancedCode{5, 3, 4}) {
			t.Fatalf("50 Subjects of 16 KiB against a costly pattern: %v %v (after %v); want 550 5.3.4", res.rcpt, res.data, took)
		}
		if took > 20*time.Second {
			t.Errorf("the refusal took %v", took)
		}
		if n := len(r.entries(t, "heavy@shop.example.com", event.Received)); n != 0 {
			t.Errorf("%d received entries for the refused message; want none", n)
		}
		if res := deliver(t, r.addr, "ann@sender.example", []string{"ok@shop.example.com"},
			crlfText("From: ann@sender.example\nSubject: fine\n\nhello\n")); res.data != nil {
			t.Fatalf("an ordinary message: %v %v", res.rcpt, res.data)
		}
	})
}
