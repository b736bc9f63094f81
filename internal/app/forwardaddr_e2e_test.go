package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/mail"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-msgauth/dkim"

	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/smtptest"
	"github.com/postline/postline/internal/store"
)

// forwardRig is an inbound rig whose forwards' destinations, dest.test
// and shop.example.com itself, have the sink as their MX.
func forwardRig(t *testing.T, d store.Dialect, edit func(*config.Config)) *inboundRig {
	t.Helper()
	r := startInbound(t, d, edit)
	for _, name := range []string{"dest.test", "shop.example.com"} {
		r.DNS.AddMX(name, 10, "mx."+name)
		r.DNS.AddA("mx."+name, "127.0.0.1")
	}
	r.DNS.AddTXT("relaxed.example", "v=spf1 ip4:127.0.0.0/8 -all")
	r.DNS.AddTXT("_dmarc.relaxed.example", "v=DMARC1; p=none")
	return r
}

// actionsOf is the actions of recipient's received entries, oldest first.
func (r *inboundRig) actionsOf(t *testing.T, recipient string) [][]map[string]any {
	t.Helper()
	var out [][]map[string]any
	es := r.entries(t, recipient, event.Received)
	for i := len(es) - 1; i >= 0; i-- {
		var det struct {
			Actions []map[string]any `json:"actions"`
		}
		json.Unmarshal(es[i].Details, &det)
		out = append(out, det.Actions)
	}
	return out
}

// sinkFor waits for the n-th message the sink got (from 1) and checks it
// is for rcpt.
func sinkFor(t *testing.T, sink *smtptest.Sink, n int, rcpt string) smtptest.Message {
	t.Helper()
	msgs, err := sink.WaitForMessages(ctxTimeout(t, 15*time.Second), n)
	if err != nil {
		t.Fatalf("waiting for message %d (to %s): %v", n, rcpt, err)
	}
	m := msgs[n-1]
	if len(m.To) != 1 || m.To[0] != rcpt {
		t.Fatalf("message %d went to %v, want %s", n, m.To, rcpt)
	}
	return m
}

var forwardVERP = regexp.MustCompile(`^bounce\+[0-9]+-[0-9a-f]{16}@shop\.example\.com$`)

// TestForwardToAddress: forward("someone@dest.test") delivers the message
// to the destination's MX with its fields and body kept, our mark on top,
// an envelope sender at the receiving domain (a bounce address of
// ours), and a DKIM signature by the receiving domain that verifies. A
// sender whose domain publishes DMARC p=reject gets From "NAME via
// DOMAIN" <forwarded@DOMAIN> and a Reply-To of theirs (a hostile encoded
// name adds no field); p=none keeps From. The received entry says queued
// with the forward's message id; the forward has its own entries. The
// same message delivered again is not forwarded again. A bounce of the
// forward comes back to the bounce address, puts the destination on the
// bounce list, and the next forward to it is refused as suppressed.
func TestForwardToAddress(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		r := forwardRig(t, d, nil)
		route := r.route(t, r.user, 0, `match_recipient("^fwd@shop\.example\.com$")`, `forward("someone@dest.test")`)

		// p=reject, signed by sender.example, a display name that decodes
		// to CR LF and a Bcc field.
		strict := r.sign(t, crlfText("From: =?utf-8?q?Ann=0D=0ABcc=3A_x=40evil.example?= <ann@sender.example>\n"+
			"To: fwd@shop.example.com\nSubject: Strict sender\nMessage-ID: <strict-1@sender.example>\nX-Custom: kept\n\nHello from Ann.\n"))
		if res := deliver(t, r.addr, "bounce@sender.example", []string{"fwd@shop.example.com"}, strict); res.data != nil {
			t.Fatalf("strict: %v %v", res.rcpt, res.data)
		}
		got := sinkFor(t, r.sink, 1, "someone@dest.test")
		if !forwardVERP.MatchString(got.From) {
			t.Errorf("envelope sender %q, want a bounce address at shop.example.com", got.From)
		}
		m, err := mail.ReadMessage(bytes.NewReader(got.Data))
		if err != nil {
			t.Fatal(err)
		}
		from, _ := mail.ParseAddress(m.Header.Get("From"))
		replyTo, _ := mail.ParseAddress(m.Header.Get("Reply-To"))
		if from == nil || from.Name != "Ann Bcc: x@evil.example via shop.example.com" || from.Address != "forwarded@shop.example.com" ||
			replyTo == nil || replyTo.Address != "ann@sender.example" || len(m.Header["Bcc"]) != 0 || len(m.Header["From"]) != 1 {
			t.Errorf("rewritten From %q, Reply-To %q, Bcc %q", m.Header.Get("From"), m.Header.Get("Reply-To"), m.Header["Bcc"])
		}
		if m.Header.Get("Subject") != "Strict sender" || m.Header.Get("Message-Id") != "<strict-1@sender.example>" ||
			m.Header.Get("X-Custom") != "kept" || m.Header.Get("X-Postline-Forwarded-By") != route+"@shop.example.com" ||
			!strings.HasPrefix(m.Header.Get("Authentication-Results"), mxHost+"; spf=pass") || len(m.Header["Received"]) == 0 ||
			!bytes.HasSuffix(got.Data, []byte("\r\n\r\nHello from Ann.\r\n")) {
			t.Errorf("the forwarded message:\n%s", got.Data)
		}
		verifyForwardDKIM(t, r, got.Data)

		// p=none: From kept, no Reply-To added.
		relaxed := crlfText("From: Rex <rex@relaxed.example>\nTo: fwd@shop.example.com\nSubject: Relaxed sender\nMessage-ID: <relaxed-1@relaxed.example>\n\nHi.\n")
		if res := deliver(t, r.addr, "rex@relaxed.example", []string{"fwd@shop.example.com"}, relaxed); res.data != nil {
			t.Fatalf("relaxed: %v %v", res.rcpt, res.data)
		}
		got2 := sinkFor(t, r.sink, 2, "someone@dest.test")
		m2, _ := mail.ReadMessage(bytes.NewReader(got2.Data))
		if m2.Header.Get("From") != "Rex <rex@relaxed.example>" || m2.Header.Get("Reply-To") != "" || !forwardVERP.MatchString(got2.From) {
			t.Errorf("p=none: From %q, Reply-To %q, MAIL FROM %s", m2.Header.Get("From"), m2.Header.Get("Reply-To"), got2.From)
		}
		verifyForwardDKIM(t, r, got2.Data)

		acts := r.actionsOf(t, "fwd@shop.example.com")
		if len(acts) != 2 || acts[0][0]["outcome"] != "queued" || acts[0][0]["message_id"] != "strict-1@sender.example" ||
			acts[0][0]["destination"] != "someone@dest.test" || acts[0][0]["reason"] != "From rewritten: sender.example publishes DMARC p=reject" ||
			acts[1][0]["outcome"] != "queued" || acts[1][0]["message_id"] != "relaxed-1@relaxed.example" || acts[1][0]["reason"] != nil {
			t.Fatalf("received entries' actions: %v", acts)
		}
		waitFor(t, "the forwards' delivered entries", func() bool { return len(r.entries(t, "someone@dest.test", event.Delivered)) == 2 })
		queued := r.entries(t, "someone@dest.test", event.Queued)
		if len(queued) != 2 || det(queued[0])("via") != "forward" {
			t.Errorf("the forwards' queued entries: %+v", queued)
		}

		// The same message again (the sender did not hear our 250): not
		// forwarded again, and its entry says why.
		if res := deliver(t, r.addr, "rex@relaxed.example", []string{"fwd@shop.example.com"}, relaxed); res.data != nil {
			t.Fatalf("relaxed again: %v %v", res.rcpt, res.data)
		}
		acts = r.actionsOf(t, "fwd@shop.example.com")
		if len(acts) != 3 || acts[2][0]["outcome"] != "queued" || acts[2][0]["message_id"] != "relaxed-1@relaxed.example" ||
			acts[2][0]["reason"] != "queued for an earlier delivery of the same message" {
			t.Fatalf("the same message again: %v", acts)
		}

		// The forward bounces: the report comes to the bounce address.
		dsn := smtptest.DSN("someone@dest.test", "failed", "5.1.1", "relaxed-1@relaxed.example")
		if res := deliver(t, r.addr, "", []string{got2.From}, dsn); res.rcpt[0] != nil || res.data != nil {
			t.Fatalf("the forward's bounce: %v %v", res.rcpt, res.data)
		}
		waitFor(t, "the forward's bounce", func() bool { return len(r.entries(t, "someone@dest.test", event.Bounced)) == 1 })
		third := crlfText("From: Rex <rex@relaxed.example>\nTo: fwd@shop.example.com\nSubject: After the bounce\n\nAgain.\n")
		if res := deliver(t, r.addr, "rex@relaxed.example", []string{"fwd@shop.example.com"}, third); res.data != nil {
			t.Fatalf("after the bounce: %v %v", res.rcpt, res.data)
		}
		acts = r.actionsOf(t, "fwd@shop.example.com")
		if len(acts) != 4 || acts[3][0]["outcome"] != "refused" || !strings.HasPrefix(acts[3][0]["reason"].(string), "suppressed") {
			t.Fatalf("a forward to a bounced destination: %v", acts)
		}
		time.Sleep(300 * time.Millisecond)
		if n := len(r.sink.Messages()); n != 2 {
			t.Errorf("the sink got %d messages, want the first two forwards only", n)
		}
	})
}

// verifyForwardDKIM checks that data carries a signature by
// shop.example.com that verifies against the key the test's DNS serves.
func verifyForwardDKIM(t *testing.T, r *inboundRig, data []byte) {
	t.Helper()
	verifs, err := dkim.VerifyWithOptions(bytes.NewReader(data), &dkim.VerifyOptions{LookupTXT: func(name string) ([]string, error) {
		return r.App.Resolver.LookupTXT(context.Background(), name)
	}})
	if err != nil || len(verifs) == 0 || verifs[0].Domain != "shop.example.com" || verifs[0].Err != nil {
		t.Errorf("DKIM %+v, %v; want a passing signature by shop.example.com first", verifs, err)
	}
}

// TestForwardLoops: a@ forwards to b@ of the same inbound domain and b@
// forwards back: the message makes the round once (the sink plays the
// MX, handing each forward back to the inbound listener) and then the
// route that already passed it refuses it, its entry says loop, and
// nothing more is sent. A message that comes with as many marks as
// --inbound-max-forwards is refused and the reason names the flag.
// Another account's route that names this domain forwards nothing of it.
func TestForwardLoops(t *testing.T) {
	t.Parallel()
	r := forwardRig(t, store.SQLite, func(c *config.Config) { c.InboundMaxForwards = 3 })
	toB := r.route(t, r.user, 0, `match_recipient("^a@shop\.example\.com$")`, `forward("b@shop.example.com")`)
	toA := r.route(t, r.user, 1, `match_recipient("^b@shop\.example\.com$")`, `forward("a@shop.example.com")`)
	msg := crlfText("From: Rex <rex@relaxed.example>\nTo: a@shop.example.com\nSubject: Round and round\nMessage-ID: <loop-1@relaxed.example>\n\nHi.\n")
	if res := deliver(t, r.addr, "rex@relaxed.example", []string{"a@shop.example.com"}, msg); res.data != nil {
		t.Fatalf("to a@: %v %v", res.rcpt, res.data)
	}
	hop := sinkFor(t, r.sink, 1, "b@shop.example.com")
	if res := deliver(t, r.addr, hop.From, hop.To, string(hop.Data)); res.data != nil {
		t.Fatalf("the forward to b@ arriving: %v %v", res.rcpt, res.data)
	}
	back := sinkFor(t, r.sink, 2, "a@shop.example.com")
	m, _ := mail.ReadMessage(bytes.NewReader(back.Data))
	if marks := m.Header["X-Postline-Forwarded-By"]; len(marks) != 2 || marks[0] != toA+"@shop.example.com" || marks[1] != toB+"@shop.example.com" {
		t.Fatalf("marks after the round: %v", marks)
	}
	if res := deliver(t, r.addr, back.From, back.To, string(back.Data)); res.data != nil {
		t.Fatalf("the forward back to a@ arriving: %v %v", res.rcpt, res.data)
	}
	acts := r.actionsOf(t, "a@shop.example.com")
	if len(acts) != 2 || acts[0][0]["outcome"] != "queued" || acts[1][0]["outcome"] != "refused" ||
		!strings.HasPrefix(acts[1][0]["reason"].(string), "loop:") || acts[1][0]["route"] != toB {
		t.Fatalf("a@'s entries: %v", acts)
	}
	if b := r.actionsOf(t, "b@shop.example.com"); len(b) != 1 || b[0][0]["outcome"] != "queued" {
		t.Errorf("b@'s entries: %v", b)
	}

	// Marks of other routes, as many as the bound.
	marked := crlfText(strings.Repeat("X-Postline-Forwarded-By: 0123456789abcdef01234567@elsewhere.example\n", 3) +
		"From: rex@relaxed.example\nSubject: Many hops\n\nHi.\n")
	if res := deliver(t, r.addr, "rex@relaxed.example", []string{"a@shop.example.com"}, marked); res.data != nil {
		t.Fatalf("many marks: %v %v", res.rcpt, res.data)
	}
	acts = r.actionsOf(t, "a@shop.example.com")
	if len(acts) != 3 || acts[2][0]["outcome"] != "refused" || !strings.Contains(acts[2][0]["reason"].(string), "--inbound-max-forwards (3)") {
		t.Fatalf("a message with 3 marks: %v", acts)
	}

	// bob's route names alice's domain: it takes nothing of it.
	bob := r.NewUser("bob")
	r.NewDomain(bob, "bob.example")
	r.enable(t, bob, "bob.example", true)
	r.route(t, bob, 0, `match_recipient(".*@shop\.example\.com")`, `forward("bob@dest.test")`)
	r.route(t, r.user, 2, `match_recipient("^keep@")`, "store()")
	if res := deliver(t, r.addr, "rex@relaxed.example", []string{"keep@shop.example.com"}, msg); res.data != nil {
		t.Fatalf("to keep@: %v %v", res.rcpt, res.data)
	}
	if res := deliver(t, r.addr, "rex@relaxed.example", []string{"other@shop.example.com"}, msg); smtpCode(res.rcpt[0]) != 550 {
		t.Errorf("an address only bob's route names: %v, want 550", res.rcpt)
	}
	if acts := r.actionsOf(t, "keep@shop.example.com"); len(acts) != 1 || len(acts[0]) != 1 || acts[0][0]["action"] != "store" {
		t.Errorf("keep@'s actions: %v", acts)
	}
	time.Sleep(300 * time.Millisecond)
	for _, sent := range r.sink.Messages() {
		if sent.To[0] == "bob@dest.test" {
			t.Errorf("bob's route forwarded alice's mail: %s", sent.Data)
		}
	}
	if n := len(r.sink.Messages()); n != 2 {
		t.Errorf("the sink got %d messages, want the round's two", n)
	}
}
