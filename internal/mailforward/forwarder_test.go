package mailforward

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"sync"
	"testing"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/dnsclient"
	"github.com/postline/postline/internal/dnstest"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/inboundroute"
	"github.com/postline/postline/internal/receiving"
	"github.com/postline/postline/internal/sending"
)

// fakeIntake queues into a slice and keeps idempotency keys as the
// sending store does (reserved, remembered, forgotten).
type fakeIntake struct {
	mu         sync.Mutex
	queued     []sending.RawMessage
	keys       map[string]*fakeKey
	suppressed map[string]bool
	fail       error // AcceptRaw's answer when set
}

type fakeKey struct {
	claim  string
	status int
	body   []byte
}

func (f *fakeIntake) PrepareRaw(_ context.Context, in sending.RawInput) (sending.RawPrepared, error) {
	m, err := mail.ReadMessage(strings.NewReader(string(in.Data)))
	if err != nil {
		return sending.RawPrepared{}, apperr.Field("message", err.Error())
	}
	return sending.RawPrepared{Data: in.Data, MessageID: strings.Trim(m.Header.Get("Message-Id"), "<>"), Subject: m.Header.Get("Subject"), Domain: *in.Domain}, nil
}

func (f *fakeIntake) AcceptRaw(_ context.Context, _ domain.Domain, _ int64, m sending.RawMessage) (sending.Accepted, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return sending.Accepted{}, f.fail
	}
	if f.suppressed[m.Recipients[0]] {
		return sending.Accepted{Suppressed: 1}, nil
	}
	f.queued = append(f.queued, m)
	return sending.Accepted{Queued: 1, MessageIDs: []string{m.MessageID}}, nil
}

func (f *fakeIntake) Reserve(_ context.Context, accountID int64, scope, key string) (string, int, []byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := fmt.Sprint(accountID, scope, key)
	if got, ok := f.keys[k]; ok {
		return "", got.status, got.body, nil
	}
	f.keys[k] = &fakeKey{claim: k}
	return k, 0, nil, nil
}

func (f *fakeIntake) Remember(_ context.Context, accountID int64, scope, key, claim string, status int, body []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.keys[fmt.Sprint(accountID, scope, key)] = &fakeKey{status: status, body: body}
	return nil
}

func (f *fakeIntake) Forget(_ context.Context, accountID int64, scope, key, claim string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.keys, fmt.Sprint(accountID, scope, key))
	return nil
}

type fakeDomains map[int64]domain.Domain

func (d fakeDomains) ByID(_ context.Context, id int64) (domain.Domain, error) {
	if dom, ok := d[id]; ok {
		return dom, nil
	}
	return domain.Domain{}, apperr.Errorf(apperr.NotFound, "no domain")
}

type rig struct {
	fw     *Forwarder
	intake *fakeIntake
}

func setup(t *testing.T) rig {
	t.Helper()
	srv := dnstest.New(t)
	srv.AddTXT("_dmarc.bank.example", "v=DMARC1; p=reject")
	srv.AddTXT("_dmarc.lax.example", "v=DMARC1; p=none")
	srv.SetRcode("_dmarc.down.example", 2) // SERVFAIL
	res, err := dnsclient.New(dnsclient.Config{Server: srv.Addr(), CacheSize: -1})
	if err != nil {
		t.Fatal(err)
	}
	in := &fakeIntake{keys: map[string]*fakeKey{}, suppressed: map[string]bool{"gone@dest.example": true}}
	doms := fakeDomains{1: {ID: 1, AccountID: 7, Name: "shop.example"}, 2: {ID: 2, AccountID: 8, Name: "bob.example"}}
	return rig{fw: New(Config{MaxForwards: 3}, Deps{Domains: doms, Intake: in, Resolver: res}), intake: in}
}

const trace = "Authentication-Results: mx; spf=pass\r\nReceived: from a by mx; Fri, 27 Nov 2026 10:00:00 +0000\r\n"

func handoff(domainID int64, raw string, to ...string) receiving.Handoff {
	h := receiving.Handoff{AccountID: 7, DomainID: domainID, Recipient: "help@shop.example", Raw: []byte(trace + raw)}
	for _, a := range to {
		h.Actions = append(h.Actions, inboundroute.Action{Kind: inboundroute.KindForward, Address: a, RouteID: "aaaa"})
	}
	return h
}

// TestForwardOutcomes: each action gets its outcome, in order: queued
// with its message id (From kept for p=none, rewritten for p=reject or a
// policy that cannot be read), refused as suppressed, refused for the
// route's own mark (loop) and past the marks' bound, refused for a
// domain that is not the account's.
func TestForwardOutcomes(t *testing.T) {
	t.Parallel()
	r := setup(t)
	ctx := context.Background()
	msg := func(from, extra string) string {
		return extra + "From: Ann <ann@" + from + ">\r\nSubject: hi\r\nMessage-ID: <m-" + from + "@x>\r\n\r\nbody\r\n"
	}
	for _, c := range []struct {
		name, raw string
		domainID  int64
		want      string // outcome, reason's start
		from      string // the From sent, "" for none sent
	}{
		{"p=none: From kept", msg("lax.example", ""), 1, "queued", "Ann <ann@lax.example>"},
		{"p=reject: rewritten", msg("bank.example", ""), 1, "queued From rewritten: bank.example publishes DMARC p=reject", `"Ann via shop.example" <forwarded@shop.example>`},
		{"policy unreadable: rewritten", msg("down.example", ""), 1, "queued From rewritten: the DMARC policy of down.example could not be read", `"Ann via shop.example" <forwarded@shop.example>`},
		{"own mark: loop", msg("lax.example", "X-Postline-Forwarded-By: AAAA@other.example\r\n"), 1, "refused loop:", ""},
		{"marks past the bound", msg("lax.example", strings.Repeat("X-Postline-Forwarded-By: bbbb@x.example\r\n", 3)), 1,
			"refused the message was forwarded 3 times already (X-Postline-Forwarded-By fields), the most --inbound-max-forwards (3) allows", ""},
		{"another account's domain", msg("lax.example", ""), 2, "refused the receiving domain is no longer the account's", ""},
		{"a domain since removed", msg("lax.example", ""), 3, "refused the receiving domain is no longer the account's", ""},
	} {
		before := len(r.intake.queued)
		out, err := r.fw.Forward(ctx, handoff(c.domainID, c.raw, "someone@dest.example"))
		if err != nil || len(out) != 1 {
			t.Fatalf("%s: %v, %v", c.name, out, err)
		}
		if got := out[0].Outcome + " " + out[0].Reason; !strings.HasPrefix(strings.TrimSpace(got), c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
		if c.from == "" {
			if len(r.intake.queued) != before {
				t.Errorf("%s: queued", c.name)
			}
			continue
		}
		q := r.intake.queued[len(r.intake.queued)-1]
		m, _ := mail.ReadMessage(strings.NewReader(string(q.Data)))
		if !q.Forward || q.From != "forwarded@shop.example" || q.Recipients[0] != "someone@dest.example" ||
			m.Header.Get("From") != c.from || out[0].MessageID != q.MessageID || !strings.HasPrefix(string(q.Data), "X-Postline-Forwarded-By: aaaa@shop.example\r\n"+trace) {
			t.Errorf("%s: queued %+v (%v)\n%s", c.name, q, out[0], q.Data)
		}
	}
	out, err := r.fw.Forward(ctx, handoff(1, msg("lax.example", ""), "gone@dest.example"))
	if err != nil || out[0].Outcome != "refused" || !strings.HasPrefix(out[0].Reason, "suppressed") {
		t.Errorf("a suppressed destination: %v, %v", out, err)
	}
	out, err = r.fw.Forward(ctx, handoff(1, "From: a@lax.example\r\nno colon\r\n\r\nbody\r\n", "a@dest.example", "b@dest.example"))
	if err != nil || len(out) != 2 || out[1].Outcome != "refused" || !strings.HasPrefix(out[1].Reason, "the message header cannot be read") {
		t.Errorf("a header that cannot be read: %v, %v", out, err)
	}
}

// TestForwardOnce: a second delivery of the same message (our trace on
// top differs) queues nothing and says so; another destination, route
// or message is another forward; a forward in flight elsewhere is a
// temporary error; an intake fault frees the key, so that the retry
// queues it.
func TestForwardOnce(t *testing.T) {
	t.Parallel()
	r := setup(t)
	ctx := context.Background()
	raw := "From: ann@lax.example\r\nSubject: once\r\n\r\nno Message-ID\r\n"
	first, err := r.fw.Forward(ctx, handoff(1, raw, "a@dest.example", "b@dest.example"))
	if err != nil || first[0].Outcome != "queued" || first[1].Outcome != "queued" || len(r.intake.queued) != 2 {
		t.Fatalf("first delivery: %v %v, %d queued", first, err, len(r.intake.queued))
	}
	if !strings.HasSuffix(first[0].MessageID, ".fwd@shop.example") || first[0].MessageID != first[1].MessageID {
		t.Errorf("made-up Message-IDs %q %q", first[0].MessageID, first[1].MessageID)
	}
	h := handoff(1, raw, "a@dest.example", "b@dest.example")
	h.Raw = []byte(strings.Replace(string(h.Raw), "10:00:00", "10:09:00", 1))
	again, err := r.fw.Forward(ctx, h)
	if err != nil || len(r.intake.queued) != 2 || again[0].Outcome != "queued" || again[0].MessageID != first[0].MessageID ||
		again[0].Reason != "queued for an earlier delivery of the same message" {
		t.Fatalf("the same message again: %v %v, %d queued", again, err, len(r.intake.queued))
	}
	other := handoff(1, strings.Replace(raw, "once", "twice", 1), "a@dest.example")
	if out, err := r.fw.Forward(ctx, other); err != nil || out[0].Reason != "" || len(r.intake.queued) != 3 {
		t.Fatalf("another message: %v %v", out, err)
	}
	// Reserved but not remembered: another delivery's forward in flight.
	inflight := handoff(1, strings.Replace(raw, "once", "in flight", 1), "a@dest.example")
	m, _ := parseMessage(inflight.Raw)
	r.intake.Reserve(ctx, 7, "forward:shop.example", forwardKey(m.digest(), "aaaa", "help@shop.example", "a@dest.example"))
	if out, err := r.fw.Forward(ctx, inflight); !errors.Is(err, errInFlight) {
		t.Errorf("a forward in flight: %v, %v; want errInFlight", out, err)
	}
	// A fault of the intake: an error, and the retry queues it.
	r.intake.fail = errors.New("database down")
	fault := handoff(1, strings.Replace(raw, "once", "fault", 1), "a@dest.example")
	if _, err := r.fw.Forward(ctx, fault); err == nil {
		t.Fatal("an intake fault: no error")
	}
	r.intake.fail = nil
	if out, err := r.fw.Forward(ctx, fault); err != nil || out[0].Outcome != "queued" || len(r.intake.queued) != 4 {
		t.Errorf("after the fault: %v %v", out, err)
	}
	// The intake's refusal (a limit) is an outcome, remembered.
	r.intake.fail = apperr.Errorf(apperr.RateLimited, "The account's sends have stored 10 bytes of messages today")
	limited := handoff(1, strings.Replace(raw, "once", "limited", 1), "a@dest.example")
	if out, err := r.fw.Forward(ctx, limited); err != nil || out[0].Outcome != "refused" || !strings.Contains(out[0].Reason, "stored 10 bytes") {
		t.Errorf("past a limit: %v %v", out, err)
	}
}

// TestTwoFromsNotForwarded: a message with two From fields (one at a
// domain with DMARC p=reject, one at the receiving domain, which signs
// the forward) is refused, not sent on unrewritten: a receiver that shows
// the first and checks DMARC against the second would see the bank's
// address vouched for by the receiving domain's signature.
func TestTwoFromsNotForwarded(t *testing.T) {
	t.Parallel()
	r := setup(t)
	raw := "From: CEO <ceo@bank.example>\r\nFrom: billing@shop.example\r\nSubject: pay now\r\n\r\nwire it\r\n"
	out, err := r.fw.Forward(context.Background(), handoff(1, raw, "dest@dest.example"))
	if err != nil || len(out) != 1 || out[0].Outcome != OutcomeRefused || !strings.Contains(out[0].Reason, "2 From fields") {
		t.Fatalf("a message with two From fields: %+v, %v; want refused, saying why", out, err)
	}
	if len(r.intake.queued) != 0 {
		t.Errorf("queued: %s", r.intake.queued[0].Data)
	}
	// One From is forwarded as before.
	if out, err := r.fw.Forward(context.Background(), handoff(1, "From: ann@lax.example\r\nSubject: hi\r\n\r\nx\r\n", "dest@dest.example")); err != nil ||
		out[0].Outcome != OutcomeQueued {
		t.Errorf("one From: %+v %v", out, err)
	}
}
