package simnet_test

import (
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/simnet"
	"github.com/postline/postline/internal/smtptest"
)

var (
	srcA = netip.MustParseAddr("127.0.0.21")
	srcB = netip.MustParseAddr("127.0.0.22")
)

// The connection past a client's limit is answered 421 at the greeting,
// closed and counted; once a connection ends there is room again at once.
func TestConnectionLimit(t *testing.T) {
	t.Parallel()
	n, p := one(t, simnet.ProviderConfig{MaxConnections: 2})
	c1 := client(t, srcA.String(), p)
	if _, g := dialFrom(t, srcA.String(), p); g[:3] != "220" {
		t.Fatalf("connection 2 of 2: greeting %q, want 220", g)
	}
	conn, g := dialFrom(t, srcA.String(), p)
	if want := "421 4.7.0 too many connections"; g != want {
		t.Errorf("connection 3 of limit 2: greeting %q, want %q", g, want)
	}
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if rest, err := io.ReadAll(conn); err != nil || len(rest) != 0 {
		t.Errorf("after the 421 greeting: read %q, %v; want the connection closed", rest, err)
	}
	v := n.Violations()
	if len(v) != 1 || v[0].Kind != simnet.ConnectionLimit || v[0].Client != srcA || v[0].Count != 3 || v[0].Limit != 2 {
		t.Fatalf("Violations() = %v, want one: %v's connection 3 of limit 2", v, srcA)
	}
	ft := &fakeT{TB: t}
	if n.CheckNoViolations(ft) || len(ft.errs) != 1 || !strings.Contains(ft.errs[0], "127.0.0.21 opened connection 3 at once (limit 2)") {
		t.Errorf("CheckNoViolations reported %q, want the violation", ft.errs)
	}
	// A client may connect again as soon as QUIT is answered.
	if err := c1.Quit(); err != nil {
		t.Fatal(err)
	}
	if _, g := dialFrom(t, srcA.String(), p); g[:3] != "220" {
		t.Errorf("connection after a QUIT: greeting %q, want 220", g)
	}
	st := p.Stats(srcA)
	want := simnet.ClientStats{Connections: 4, MaxConcurrent: 3, Violations: simnet.ViolationCounts{Connections: 1}}
	if st != want {
		t.Errorf("Stats(%v) = %+v, want %+v", srcA, st, want)
	}
	if r := p.Refusals(); len(r) != 1 || r[0].Stage != "connect" || r[0].Cause != simnet.CauseConnections || r[0].Reply.Code != 421 {
		t.Errorf("Refusals() = %+v, want the one 421 at connect", r)
	}
}

// Without a limit, the peak of connections at once is measured all the
// same, and connections one after another count as one at a time.
func TestMaxConcurrentWithoutLimit(t *testing.T) {
	t.Parallel()
	n, p := one(t, simnet.ProviderConfig{})
	for range 5 {
		c := client(t, srcA.String(), p)
		if err := send(c, "a@sender.test", "x@d001.prov.example"); err != nil {
			t.Fatal(err)
		}
		if err := c.Quit(); err != nil {
			t.Fatal(err)
		}
	}
	held := []any{client(t, srcA.String(), p), client(t, srcA.String(), p), client(t, srcA.String(), p)}
	if st := p.Stats(srcA); st.MaxConcurrent != len(held) || st.Connections != 8 || st.Messages != 5 || st.MaxPerConnection != 1 {
		t.Errorf("Stats = %+v, want MaxConcurrent 3, Connections 8, Messages 5, MaxPerConnection 1", st)
	}
	n.CheckNoViolations(t)
}

// Each source address has its own limits and its own stats.
func TestSourcesToldApart(t *testing.T) {
	t.Parallel()
	n, p := one(t, simnet.ProviderConfig{MaxConnections: 1})
	a := client(t, srcA.String(), p)
	b := client(t, srcB.String(), p)
	if err := send(a, "a@sender.test", "x@d001.prov.example"); err != nil {
		t.Fatalf("from %v: %v", srcA, err)
	}
	for range 2 {
		if err := send(b, "b@sender.test", "y@d002.prov.example"); err != nil {
			t.Fatalf("from %v: %v", srcB, err)
		}
	}
	if _, g := dialFrom(t, srcB.String(), p); g[:3] != "421" {
		t.Errorf("second connection from %v: greeting %q, want 421", srcB, g)
	}
	if st := p.Stats(srcA); st.Messages != 1 || st.MaxConcurrent != 1 || st.Violations.Total() != 0 {
		t.Errorf("Stats(%v) = %+v, want 1 message, 1 connection, no violation", srcA, st)
	}
	if st := p.Stats(srcB); st.Messages != 2 || st.MaxConcurrent != 2 || st.Violations.Connections != 1 {
		t.Errorf("Stats(%v) = %+v, want 2 messages, peak 2, 1 connection violation", srcB, st)
	}
	var from []netip.Addr
	for _, m := range n.Messages() {
		from = append(from, m.Client)
	}
	slices.SortFunc(from, netip.Addr.Compare)
	if want := []netip.Addr{srcA, srcB, srcB}; !slices.Equal(from, want) {
		t.Errorf("messages came from %v, want %v", from, want)
	}
	if got := len(p.Clients()); got != 2 {
		t.Errorf("Clients() has %d addresses, want 2", got)
	}
}

// The MAIL FROM past the rate gets the rate reply, the connection is
// closed, the excess is counted, and the client may send again once the
// period has passed.
func TestMessageRateSliding(t *testing.T) {
	t.Parallel()
	n, p := one(t, simnet.ProviderConfig{MessageRate: simnet.Rate{Count: 3, Per: time.Second}})
	c := client(t, srcA.String(), p)
	start := time.Now()
	for i := range 3 {
		if err := send(c, "a@sender.test", "x@d001.prov.example"); err != nil {
			t.Fatalf("message %d of 3/s: %v", i+1, err)
		}
	}
	err := send(c, "a@sender.test", "x@d001.prov.example")
	if time.Since(start) > 900*time.Millisecond {
		t.Skip("the machine is too slow to send 4 messages within the period")
	}
	if got := reply(err); got != "421 4.7.28" {
		t.Fatalf("message 4 of 3/s: %v, want 421 4.7.28", err)
	}
	if err := c.Noop(); err == nil {
		t.Error("the connection is still open after the 421")
	}
	v := n.Violations()
	if len(v) != 1 || v[0].Kind != simnet.MessageRate || v[0].Count != 4 || v[0].Limit != 3 || v[0].Per != time.Second {
		t.Errorf("Violations() = %v, want message 4 of 3 in 1s", v)
	}
	time.Sleep(time.Until(p.Messages()[0].MailAt.Add(time.Second)))
	if err := send(client(t, srcA.String(), p), "a@sender.test", "x@d001.prov.example"); err != nil {
		t.Errorf("a message once the period has passed: %v", err)
	}
	st := p.Stats(srcA)
	if st.Messages != 4 || st.MaxRate != 3 || st.Violations.MessageRate != 1 {
		t.Errorf("Stats = %+v, want 4 messages, at most 3 a period, 1 rate violation", st)
	}
	r := p.Refusals()
	if len(r) != 1 || r[0].Cause != simnet.CauseRate || r[0].Reply.Message != "prov: rate limited, try again later" {
		t.Errorf("Refusals() = %+v, want the rate refusal", r)
	}
}

// A fixed window lets a client send the rate again as soon as a new period
// starts.
func TestMessageRateFixed(t *testing.T) {
	t.Parallel()
	per := 500 * time.Millisecond
	n, p := one(t, simnet.ProviderConfig{MessageRate: simnet.Rate{Count: 2, Per: per}, RateWindow: simnet.Fixed})
	// Start early in a period, so that three messages fall within it.
	time.Sleep(time.Until(time.Now().Truncate(per).Add(per + 10*time.Millisecond)))
	start := time.Now()
	c := client(t, srcA.String(), p)
	for i := range 2 {
		if err := send(c, "a@sender.test", "x@d001.prov.example"); err != nil {
			t.Fatalf("message %d: %v", i+1, err)
		}
	}
	err := send(c, "a@sender.test", "x@d001.prov.example")
	if start.Truncate(per) != time.Now().Truncate(per) {
		t.Skip("the machine is too slow to send 3 messages within the period")
	}
	if reply(err) != "421 4.7.28" {
		t.Fatalf("message 3 in a period of 2: %v, want 421 4.7.28", err)
	}
	time.Sleep(time.Until(start.Truncate(per).Add(per)))
	c = client(t, srcA.String(), p)
	for i := range 2 {
		if err := send(c, "a@sender.test", "x@d001.prov.example"); err != nil {
			t.Fatalf("message %d of the next period: %v", i+1, err)
		}
	}
	if v := n.Violations(); len(v) != 1 {
		t.Errorf("Violations() = %v, want the one", v)
	}
}

// A transaction that ends without a message does not count against the
// rate.
func TestMessageRateCountsMessages(t *testing.T) {
	t.Parallel()
	n, p := one(t, simnet.ProviderConfig{MessageRate: simnet.PerMinute(1), Greylist: true})
	c := client(t, srcA.String(), p)
	if err := send(c, "a@sender.test", "x@d001.prov.example"); reply(err) != "450 4.2.0" {
		t.Fatalf("first attempt: %v, want 450 4.2.0 (greylisted)", err)
	}
	if err := c.Reset(); err != nil {
		t.Fatal(err)
	}
	if err := send(c, "a@sender.test", "x@d001.prov.example"); err != nil {
		t.Errorf("the retry, the first message of 1/min: %v", err)
	}
	if err := send(c, "a@sender.test", "x@d001.prov.example"); reply(err) != "421 4.7.28" {
		t.Errorf("the second message of 1/min: %v, want 421 4.7.28", err)
	}
	if v := n.Violations(); len(v) != 1 {
		t.Errorf("Violations() = %v, want 1", v)
	}
}

// After MaxMessagesPerConnection messages the next MAIL FROM gets 421 and
// the connection is closed; a new connection may carry as many.
func TestMessagesPerConnection(t *testing.T) {
	t.Parallel()
	n, p := one(t, simnet.ProviderConfig{MaxMessagesPerConnection: 2})
	c := client(t, srcA.String(), p)
	for i := range 2 {
		if err := send(c, "a@sender.test", "x@d001.prov.example"); err != nil {
			t.Fatalf("message %d of 2: %v", i+1, err)
		}
	}
	if err := send(c, "a@sender.test", "x@d001.prov.example"); reply(err) != "421 4.7.0" {
		t.Errorf("message 3 on a connection of 2: %v, want 421 4.7.0", err)
	}
	if err := send(client(t, srcA.String(), p), "a@sender.test", "x@d001.prov.example"); err != nil {
		t.Errorf("on a new connection: %v", err)
	}
	v := n.Violations()
	if len(v) != 1 || v[0].Kind != simnet.MessagesPerConnection || v[0].Count != 3 || v[0].Limit != 2 {
		t.Errorf("Violations() = %v, want message 3 on one connection of limit 2", v)
	}
	if st := p.Stats(srcA); st.MaxPerConnection != 2 || st.Messages != 3 {
		t.Errorf("Stats = %+v, want 2 at most per connection, 3 messages", st)
	}
}

// Greylisting defers each new (client, sender, recipient) until the delay
// has passed since its first attempt; it is not a violation.
func TestGreylisting(t *testing.T) {
	t.Parallel()
	delay := 300 * time.Millisecond
	n, p := one(t, simnet.ProviderConfig{Greylist: true, GreylistDelay: delay})
	c := client(t, srcA.String(), p)
	first := time.Now()
	attempt := func(from, to string) error {
		if err := send(c, from, to); err != nil {
			c.Reset()
			return err
		}
		return nil
	}
	if err := attempt("a@sender.test", "x@d001.prov.example"); reply(err) != "450 4.2.0" {
		t.Fatalf("first attempt: %v, want 450 4.2.0", err)
	}
	if err := attempt("a@sender.test", "x@d001.prov.example"); time.Since(first) < delay && reply(err) != "450 4.2.0" {
		t.Errorf("retry before the delay: %v, want 450 4.2.0", err)
	}
	time.Sleep(time.Until(p.Refusals()[0].Time.Add(delay)))
	if err := attempt("a@sender.test", "x@d001.prov.example"); err != nil {
		t.Errorf("retry after the delay: %v", err)
	}
	if err := attempt("a@sender.test", "other@d001.prov.example"); reply(err) != "450 4.2.0" {
		t.Errorf("another recipient: %v, want 450 4.2.0", err)
	}
	if err := send(client(t, srcB.String(), p), "a@sender.test", "x@d001.prov.example"); reply(err) != "450 4.2.0" {
		t.Errorf("the same message from another address: %v, want 450 4.2.0", err)
	}
	if len(n.Messages()) != 1 || len(n.Violations()) != 0 {
		t.Errorf("%d messages, violations %v; want 1 and none", len(n.Messages()), n.Violations())
	}
	for _, r := range p.Refusals() {
		if r.Cause != simnet.CauseGreylist || r.Stage != "rcpt" {
			t.Errorf("refusal %+v, want greylisting at RCPT", r)
		}
	}
}

// Injected replies answer the next MAIL FROM commands, then the provider
// accepts again.
func TestInject(t *testing.T) {
	t.Parallel()
	n, p := one(t, simnet.ProviderConfig{})
	p.Inject(smtptest.Reply{Code: 421, Enhanced: [3]int{4, 7, 0}, Message: "[TS01] Messages from 127.0.0.1 temporarily deferred"})
	if err := send(client(t, srcA.String(), p), "a@sender.test", "x@d001.prov.example"); reply(err) != "421 4.7.0" ||
		!containsTS01(err) {
		t.Errorf("after Inject: %v, want the injected 421 [TS01]", err)
	}
	if err := send(client(t, srcA.String(), p), "a@sender.test", "x@d001.prov.example"); err != nil {
		t.Errorf("the next message: %v", err)
	}
	if len(n.Messages()) != 1 || len(n.Violations()) != 0 || len(n.Refusals()) != 1 {
		t.Errorf("messages %d, violations %v, refusals %v; want 1, none, the injected one", len(n.Messages()), n.Violations(), n.Refusals())
	}
}

func containsTS01(err error) bool { return err != nil && strings.Contains(err.Error(), "[TS01]") }

// fakeT records what CheckNoViolations reports.
type fakeT struct {
	testing.TB
	errs []string
}

func (f *fakeT) Helper() {}

func (f *fakeT) Errorf(format string, args ...any) {
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}

// Messages keep their bodies unless DiscardData says not to.
func TestDiscardData(t *testing.T) {
	t.Parallel()
	for _, discard := range []bool{false, true} {
		n := simnet.New(t, simnet.Config{DiscardData: discard, Providers: []simnet.ProviderConfig{{Name: "prov", Domains: 1}}})
		p := n.Providers()[0]
		if err := send(client(t, srcA.String(), p), "a@sender.test", "x@d001.prov.example"); err != nil {
			t.Fatal(err)
		}
		m := n.Messages()
		want := body
		if discard {
			want = ""
		}
		if len(m) != 1 || string(m[0].Data) != want || m[0].From != "a@sender.test" || !slices.Equal(m[0].To, []string{"x@d001.prov.example"}) {
			t.Errorf("DiscardData %v: messages %+v, want one with body %q", discard, m, want)
		}
	}
}
