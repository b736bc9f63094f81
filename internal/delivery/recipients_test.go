package delivery_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/postline/postline/internal/delivery"
	"github.com/postline/postline/internal/smtptest"
)

// TestSendTicketAllOneTransaction: three recipients go in one transaction;
// the one refused 550 bounces alone, the one refused 451 is deferred
// alone, and the message is accepted for the third; the next transaction
// on the same connection works (RSET was not needed: DATA ended it).
func TestSendTicketAllOneTransaction(t *testing.T) {
	t.Parallel()
	f := setup(t, smtptest.Config{})
	f.mx([]string{"mx.example.test"}, "example.test")
	f.sink.Script("gone@example.test", smtptest.Reply{Code: 550, Enhanced: [3]int{5, 1, 1}, Message: "no such user"})
	f.sink.Script("full@example.test", smtptest.Reply{Code: 451, Enhanced: [3]int{4, 2, 2}, Message: "mailbox full"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rcpts := []string{"ann@example.test", "gone@example.test", "full@example.test", "bob@example.test"}
	tk, _, err := f.tr.Admit(ctx, direct, rcpts[0])
	if err != nil || tk == nil {
		t.Fatalf("Admit: %v, %v", tk, err)
	}
	if tk.MaxRecipients() != delivery.DefaultRecipientsPerTransaction {
		t.Errorf("MaxRecipients() = %d without shaping, want %d", tk.MaxRecipients(), delivery.DefaultRecipientsPerTransaction)
	}
	out := f.tr.SendTicketAll(ctx, tk, "a@sender.test", rcpts, []byte(testMsg))
	if len(out) != len(rcpts) {
		t.Fatalf("%d outcomes for %d recipients", len(out), len(rcpts))
	}
	for _, i := range []int{0, 3} {
		if out[i].Err != nil || out[i].Result.Code != 250 || out[i].Result.Host != "mx.example.test" {
			t.Errorf("%s: %+v, want delivered by mx.example.test", rcpts[i], out[i])
		}
	}
	if e := delivery.Classify(out[1].Err); e.Code != 550 || e.Temporary || !e.RecipientRejected() || e.Stage != delivery.StageRcpt {
		t.Errorf("gone@: %+v, want its own permanent 550 at RCPT", e)
	}
	if e := delivery.Classify(out[2].Err); e.Code != 451 || !e.Temporary || e.Stage != delivery.StageRcpt {
		t.Errorf("full@: %+v, want its own temporary 451 at RCPT", e)
	}
	msgs := f.sink.Messages()
	if len(msgs) != 1 || !slices.Equal(msgs[0].To, []string{"ann@example.test", "bob@example.test"}) {
		t.Fatalf("the sink got %d messages (%v), want one to ann and bob", len(msgs), msgs)
	}

	// Every recipient refused: each keeps its own reply, nothing is sent,
	// and the connection serves the next transaction.
	f.sink.Script("gone@example.test", smtptest.Reply{Code: 550, Enhanced: [3]int{5, 1, 1}})
	f.sink.Script("full@example.test", smtptest.Reply{Code: 452, Enhanced: [3]int{4, 2, 2}})
	tk, _, err = f.tr.Admit(ctx, direct, "gone@example.test")
	if err != nil || tk == nil {
		t.Fatalf("Admit: %v, %v", tk, err)
	}
	out = f.tr.SendTicketAll(ctx, tk, "a@sender.test", []string{"gone@example.test", "full@example.test"}, []byte(testMsg))
	if a, b := delivery.Classify(out[0].Err), delivery.Classify(out[1].Err); a.Code != 550 || b.Code != 452 || !b.Temporary {
		t.Errorf("both refused: %+v and %+v, want 550 and 452 each", a, b)
	}
	if _, err := f.tr.Send(ctx, direct, delivery.Envelope{From: "a@sender.test", To: "cy@example.test"}, []byte(testMsg)); err != nil {
		t.Fatalf("the next message: %v", err)
	}
	if got := f.sink.Sessions() - f.base; got != 1 {
		t.Errorf("%d sessions, want the one connection reused", got)
	}
}

// TestSendTicketAllBoundsAndDomain: max_recipients_per_transaction from
// the shaping bounds a ticket's recipients, and a recipient at another
// domain than the ticket's is refused alone without being sent.
func TestSendTicketAllBoundsAndDomain(t *testing.T) {
	t.Parallel()
	f := shaped(t, smtptest.Config{}, "[\"example.test\"]\nmax_recipients_per_transaction = 2\n")
	f.mx([]string{"mx.example.test"}, "example.test", "other.test")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tk, _, err := f.tr.Admit(ctx, direct, "ann@example.test")
	if err != nil || tk == nil {
		t.Fatalf("Admit: %v, %v", tk, err)
	}
	if tk.MaxRecipients() != 2 {
		t.Fatalf("MaxRecipients() = %d, want the shaping's 2", tk.MaxRecipients())
	}
	out := f.tr.SendTicketAll(ctx, tk, "a@sender.test", []string{"ann@example.test", "x@other.test"}, []byte(testMsg))
	if out[0].Err != nil || out[1].Err == nil {
		t.Errorf("outcomes %+v, want ann delivered and x@other.test refused", out)
	}
	tk, _, _ = f.tr.Admit(ctx, direct, "ann@example.test")
	out = f.tr.SendTicketAll(ctx, tk, "a@sender.test", []string{"a@example.test", "b@example.test", "c@example.test"}, []byte(testMsg))
	for i, o := range out {
		if o.Err == nil {
			t.Errorf("recipient %d of 3 over a limit of 2 was sent", i)
		}
	}
	if msgs := f.sink.Messages(); len(msgs) != 1 || !slices.Equal(msgs[0].To, []string{"ann@example.test"}) {
		t.Errorf("the sink got %v, want only ann's message", msgs)
	}
}

// TestSendTicketAllNonASCIIWithoutSMTPUTF8: to a server without SMTPUTF8
// a non-ASCII recipient is refused alone (permanent, 5.6.7) and the
// others get the message; when every one is refused so, the transaction
// is reset and the connection serves the next message.
func TestSendTicketAllNonASCIIWithoutSMTPUTF8(t *testing.T) {
	t.Parallel()
	f := setup(t, smtptest.Config{NoSMTPUTF8: true})
	f.mx([]string{"mx.example.test"}, "example.test")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	send := func(rcpts ...string) []delivery.Outcome {
		tk, _, err := f.tr.Admit(ctx, direct, rcpts[0])
		if err != nil || tk == nil {
			t.Fatalf("Admit: %v, %v", tk, err)
		}
		return f.tr.SendTicketAll(ctx, tk, "a@sender.test", rcpts, []byte(testMsg))
	}
	out := send("ann@example.test", "用户@example.test")
	if e := delivery.Classify(out[1].Err); out[0].Err != nil || e.Enhanced != "5.6.7" || e.Temporary {
		t.Errorf("outcomes %+v / %+v, want ann delivered and the non-ASCII address refused 5.6.7", out[0], e)
	}
	out = send("用户@example.test", "ü@example.test")
	for i, o := range out {
		if e := delivery.Classify(o.Err); e.Enhanced != "5.6.7" {
			t.Errorf("recipient %d: %+v, want 5.6.7", i, e)
		}
	}
	if _, err := f.tr.Send(ctx, direct, delivery.Envelope{From: "a@sender.test", To: "bob@example.test"}, []byte(testMsg)); err != nil {
		t.Fatalf("the next message on the connection: %v", err)
	}
	msgs := f.sink.Messages()
	if len(msgs) != 2 || !slices.Equal(msgs[0].To, []string{"ann@example.test"}) || !slices.Equal(msgs[1].To, []string{"bob@example.test"}) {
		t.Errorf("the sink got %v, want ann's then bob's message", msgs)
	}
	if got := f.sink.Sessions() - f.base; got != 1 {
		t.Errorf("%d sessions, want the one connection reused after the reset", got)
	}
}

// TestSendTicketAllDataReplyNamesNoOne: a 550 5.1.1 at the end of DATA of a
// transaction with two accepted recipients fails both, permanently, but
// rejects neither as a recipient (no bounce-list entry for the address the
// reply did not name); with one recipient it is that recipient's rejection.
func TestSendTicketAllDataReplyNamesNoOne(t *testing.T) {
	t.Parallel()
	f := setup(t, smtptest.Config{})
	f.mx([]string{"mx.example.test"}, "example.test")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f.sink.ScriptData("ann@example.test", smtptest.Reply{Code: 550, Enhanced: [3]int{5, 1, 1}, Message: "<ann@example.test>: user unknown"})
	rcpts := []string{"ann@example.test", "bob@example.test"}
	tk, _, err := f.tr.Admit(ctx, direct, rcpts[0])
	if err != nil || tk == nil {
		t.Fatalf("Admit: %v, %v", tk, err)
	}
	out := f.tr.SendTicketAll(ctx, tk, "a@sender.test", rcpts, []byte(testMsg))
	for i, o := range out {
		if e := delivery.Classify(o.Err); e.Code != 550 || e.Temporary || e.Stage != delivery.StageData || e.RecipientRejected() || e.Shared != 2 {
			t.Errorf("%s: %+v, want the permanent 550 at DATA, shared by 2, no recipient rejected", rcpts[i], e)
		}
	}
	f.sink.ScriptData("ann@example.test", smtptest.Reply{Code: 550, Enhanced: [3]int{5, 1, 1}, Message: "<ann@example.test>: user unknown"})
	tk, _, err = f.tr.Admit(ctx, direct, rcpts[0])
	if err != nil || tk == nil {
		t.Fatalf("Admit: %v, %v", tk, err)
	}
	out = f.tr.SendTicketAll(ctx, tk, "a@sender.test", rcpts[:1], []byte(testMsg))
	if e := delivery.Classify(out[0].Err); e.Code != 550 || !e.RecipientRejected() {
		t.Errorf("ann alone: %+v, want her rejection", e)
	}
}

// TestWarmupSendsOneRecipientATransaction: a ticket through a source under
// a warm-up cap carries one recipient, so the cap counts recipients; a
// source without a cap takes the default.
func TestWarmupSendsOneRecipientATransaction(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 3, 1, 18, 0, 0, 0, time.UTC) // day 0: ip-3 may send 3
	f := egressSetup(t, &now, "\n[pool.\"warm\"]\nentries = [{name = \"ip-3\"}]\n[pool.\"cold\"]\nentries = [{name = \"ip-2\"}]\n")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for pool, want := range map[string]int{"warm": 1, "cold": delivery.DefaultRecipientsPerTransaction} {
		tk, _, err := f.tr.Admit(ctx, delivery.Route{Mode: delivery.ModeDirect, Pool: pool}, "b@example.test")
		if err != nil || tk == nil {
			t.Fatalf("Admit through %s: %v, %v", pool, tk, err)
		}
		if got := tk.MaxRecipients(); got != want {
			t.Errorf("pool %s: MaxRecipients() = %d, want %d", pool, got, want)
		}
		tk.Release()
	}
}

// TestSendTicketAllTooManyRecipients: a server that takes no more RCPTs
// (452 4.5.3, RFC 5321 §4.5.3.1.10) gets the message for those it took;
// the one it refused and those not yet asked go back without an attempt
// (Wait), not deferred or failed one by one.
func TestSendTicketAllTooManyRecipients(t *testing.T) {
	t.Parallel()
	f := setup(t, smtptest.Config{})
	f.mx([]string{"mx.example.test"}, "example.test")
	f.sink.Script("cy@example.test", smtptest.Reply{Code: 452, Enhanced: [3]int{4, 5, 3}, Message: "Too many recipients"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rcpts := []string{"ann@example.test", "bob@example.test", "cy@example.test", "dee@example.test"}
	tk, _, err := f.tr.Admit(ctx, direct, rcpts[0])
	if err != nil || tk == nil {
		t.Fatalf("Admit: %v, %v", tk, err)
	}
	out := f.tr.SendTicketAll(ctx, tk, "a@sender.test", rcpts, []byte(testMsg))
	for _, i := range []int{0, 1} {
		if out[i].Err != nil || out[i].Result.Code != 250 {
			t.Errorf("%s: %+v, want delivered", rcpts[i], out[i])
		}
	}
	for _, i := range []int{2, 3} {
		if e := delivery.Classify(out[i].Err); e == nil || e.Wait <= 0 || !e.Temporary {
			t.Errorf("%s: %+v, want back to the queue without an attempt (Wait)", rcpts[i], e)
		}
	}
	if msgs := f.sink.Messages(); len(msgs) != 1 || !slices.Equal(msgs[0].To, rcpts[:2]) {
		t.Errorf("the sink got %v, want one message to ann and bob", msgs)
	}
	// A 452 about a full mailbox is that recipient's own: the others go on.
	f.sink.Script("cy@example.test", smtptest.Reply{Code: 452, Enhanced: [3]int{4, 2, 2}, Message: "mailbox full"})
	tk, _, err = f.tr.Admit(ctx, direct, rcpts[0])
	if err != nil || tk == nil {
		t.Fatalf("Admit: %v, %v", tk, err)
	}
	out = f.tr.SendTicketAll(ctx, tk, "a@sender.test", rcpts, []byte(testMsg))
	if e := delivery.Classify(out[2].Err); e == nil || e.Wait != 0 || !e.Temporary || out[3].Err != nil {
		t.Errorf("cy: %+v, dee: %+v; want cy deferred alone, dee delivered", e, out[3].Err)
	}
}
