package app_test

import (
	"strings"
	"testing"

	"github.com/emersion/go-smtp"

	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/store"
)

// TestReceivingActionsBound runs the avalanche an outside sender could
// make of one message: many recipients, each taken by routes that forward
// to several destinations, each a post or a re-send. The forwards and
// notifications one message's routes hand on, over all its recipients,
// are at most --inbound-actions-per-message: past it 550 5.7.0 naming the
// flag, nothing recorded; within it the message is taken.
func TestReceivingActionsBound(t *testing.T) {
	t.Parallel()
	r := startInbound(t, store.SQLite, func(c *config.Config) { c.InboundActionsPerMessage = 3 })
	r.route(t, r.user, 0, "catch_all()", `forward("http://127.0.0.1:9/a, http://127.0.0.1:9/b")`)
	msg := "From: ann@sender.example\r\nSubject: many\r\n\r\nbody\r\n"
	res := deliver(t, r.addr, "ann@sender.example", []string{"a@shop.example.com", "b@shop.example.com"}, msg)
	var se *smtp.SMTPError
	if errorsAs(res.data, &se); se == nil || se.Code != 550 || se.EnhancedCode != (smtp.EnhancedCode{5, 7, 0}) ||
		!strings.Contains(se.Message, "--inbound-actions-per-message") {
		t.Fatalf("4 forwards for one message, bound 3: %v %v; want 550 5.7.0 naming the flag", res.rcpt, res.data)
	}
	if n := len(r.entries(t, "a@shop.example.com", event.Received)); n != 0 {
		t.Errorf("%d received entries for the refused message", n)
	}
	if res := deliver(t, r.addr, "ann@sender.example", []string{"c@shop.example.com"}, msg); res.data != nil {
		t.Fatalf("2 forwards for one message, bound 3: %v %v", res.rcpt, res.data)
	}
	if n := len(r.entries(t, "c@shop.example.com", event.Received)); n != 1 {
		t.Errorf("%d received entries for the message within the bound, want 1", n)
	}
}
