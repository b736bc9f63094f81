package app_test

import (
	"strings"
	"testing"

	"github.com/emersion/go-smtp"

	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/store"
)

// TestReceivingHeaderBound runs the many-fields attack: a message whose
// header is millions of short fields (16 MB of "X-A: y") was taken, and
// each read of its stored copy and each try of its posts listed every
// field (a GET took a gigabyte). The header of a message to an inbound
// domain is at most --inbound-max-header-bytes: past it 552 5.3.4,
// nothing recorded; within it the message is taken.
func TestReceivingHeaderBound(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		const bound = 64 << 10
		r := startInbound(t, d, func(c *config.Config) { c.InboundMaxHeaderBytes = bound })
		r.route(t, r.user, 0, "catch_all()", "store()")
		field := "X-Filler: " + strings.Repeat("y", 28) + "\r\n" // 40 bytes
		msg := func(fields int) string {
			return "From: ann@sender.example\r\nSubject: fields\r\n" + strings.Repeat(field, fields) + "\r\nbody\r\n"
		}
		res := deliver(t, r.addr, "ann@sender.example", []string{"big@shop.example.com"}, msg(2*bound/40))
		var se *smtp.SMTPError
		if errorsAs(res.data, &se); se == nil || se.Code != 552 || se.EnhancedCode != (smtp.EnhancedCode{5, 3, 4}) ||
			!strings.Contains(se.Message, "65536") {
			t.Fatalf("a header of %d bytes, bound %d: %v %v; want 552 5.3.4 naming the bound", 2*bound, bound, res.rcpt, res.data)
		}
		if n := len(r.entries(t, "big@shop.example.com", event.Received)); n != 0 {
			t.Errorf("%d received entries for the refused message", n)
		}
		if res := deliver(t, r.addr, "ann@sender.example", []string{"fine@shop.example.com"}, msg(bound/80)); res.data != nil {
			t.Fatalf("a header of %d bytes: %v %v", bound/2, res.rcpt, res.data)
		}
	})
}
