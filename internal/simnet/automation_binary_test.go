package simnet_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
	"github.com/postline/postline/internal/simnet"
	"github.com/postline/postline/internal/smtptest"
)

// startShaped runs serve against n with the shaping file text.
func startShaped(t *testing.T, n *simnet.Net, text string) *serve {
	t.Helper()
	path := filepath.Join(t.TempDir(), "shaping.toml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return startServeWith(t, n, map[string]string{"POSTLINE_SHAPING_FILE": path})
}

// firstRefusal waits for the provider's first refusal.
func firstRefusal(t *testing.T, p *simnet.Provider) simnet.Refusal {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if r := p.Refusals(); len(r) > 0 {
			return r[0]
		}
	}
	t.Fatal("the provider refused nothing in 30 s")
	return simnet.Refusal{}
}

// sleepUntil sleeps until at.
func sleepUntil(at time.Time) { time.Sleep(time.Until(at)) }

// sends counts the `send` entries of the sending domain's log: one per
// attempt.
func (s *serve) sends(t *testing.T) int {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+s.addr+"/api/domains/shop.sender.test/log?event_type=send&limit=1", nil)
	req.SetBasicAuth("alice", s.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Pagination struct{ Total int } `json:"pagination"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return body.Pagination.Total
}

// waitAll waits for count messages, then checks each of rcpts arrived
// exactly once.
func waitAll(t *testing.T, n *simnet.Net, rcpts []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := n.WaitForMessages(ctx, len(rcpts)); err != nil {
		report(t, n)
		t.Fatal(err)
	}
	time.Sleep(time.Second) // a duplicate would come from a retry
	got := map[string]int{}
	for _, m := range n.Messages() {
		for _, r := range m.To {
			got[r]++
		}
	}
	for _, r := range rcpts {
		if got[r] != 1 {
			t.Errorf("%s received %d times, want once", r, got[r])
		}
	}
}

// An automation rule (regex on "4.7.28", Suspend for 3 s) suspends the
// site after the provider's first such reply: no new connection reaches
// the provider during the suspension, the held deliveries are not
// attempts (one `send` entry per message, and one for the refused
// attempt), `shaping status` lists the action, then not after its end,
// which the log says; every message arrives once.
func TestBinaryAutomationSuspendsSite(t *testing.T) {
	t.Parallel()
	n := simnet.New(t, simnet.Config{Providers: []simnet.ProviderConfig{{Name: "slow", Domains: 3}}})
	p := n.Provider("slow")
	p.Inject(smtptest.Reply{Code: 421, Enhanced: smtp.EnhancedCode{4, 7, 28}, Message: "rate limited, try again later"})
	s := startShaped(t, n, `
[["default".automation]]
regex = "4\\.7\\.28"
action = "Suspend"
duration = "3s"
`)
	var rcpts []string
	for i := range 30 {
		rcpts = append(rcpts, fmt.Sprintf("user%d@%s", i, p.Domains()[i%3]))
	}
	s.send(t, rcpts)
	refused := firstRefusal(t, p)
	local := netip.MustParseAddr("127.0.0.1")

	// Deliveries under way when the reply came may still go; then none.
	sleepUntil(refused.Time.Add(500 * time.Millisecond))
	before := p.Stats(local)
	status := s.cli(t, "shaping", "status")
	if !strings.Contains(status, "Suspend") || !strings.Contains(status, "421 4.7.28 rate limited") ||
		!strings.Contains(status, "slow.simnet.test") {
		t.Errorf("shaping status during the suspension:\n%s\nwant the Suspend action, its reply and the site", status)
	}
	if show := s.cli(t, "shaping", "show", p.Domains()[1]); !strings.Contains(show, "in_force = Suspend until") {
		t.Errorf("shaping show during the suspension:\n%s\nwant an in_force = Suspend line", show)
	}
	sleepUntil(refused.Time.Add(2500 * time.Millisecond))
	if during := p.Stats(local); during.Connections != before.Connections || during.Messages != before.Messages {
		t.Errorf("during the suspension the provider saw %d new connections and %d messages; want none",
			during.Connections-before.Connections, during.Messages-before.Messages)
	}
	if before.Messages >= len(rcpts) {
		t.Fatalf("all %d messages went before the suspension: the test proves nothing", before.Messages)
	}

	waitAll(t, n, rcpts)
	if got := s.sends(t); got != len(rcpts)+1 {
		t.Errorf("%d send entries; want %d: one per message and the refused attempt (held deliveries are not attempts)",
			got, len(rcpts)+1)
	}
	if status := s.cli(t, "shaping", "status"); !strings.Contains(status, "no automation action in force") {
		t.Errorf("shaping status after the suspension ended:\n%s", status)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		s.mu.Lock()
		log := s.log.String()
		s.mu.Unlock()
		if strings.Contains(log, "automation action in force") && strings.Contains(log, "automation action ended") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve's log does not say the action started and ended:\n%s", log)
		}
	}
	report(t, n)
}

// A SetConfig rule lowering connection_limit to 1 for a while is
// observed by the provider: while it holds, never more than one
// connection at once from Postline, where the default limit allows 4.
func TestBinaryAutomationSetConfig(t *testing.T) {
	t.Parallel()
	n := simnet.New(t, simnet.Config{Providers: []simnet.ProviderConfig{{Name: "busy", Domains: 4}}})
	p := n.Provider("busy")
	p.Inject(smtptest.Reply{Code: 421, Enhanced: smtp.EnhancedCode{4, 7, 0}, Message: "[TS01] Messages from 127.0.0.1 temporarily deferred"})
	s := startShaped(t, n, `
[["default".automation]]
regex = "\\[TS01\\]"
action = {SetConfig={name="connection_limit", value=1}}
duration = "10s"
`)
	first := "first@" + p.Domains()[0]
	s.send(t, []string{first})
	refused := firstRefusal(t, p)
	var rcpts []string
	for i := range 60 {
		rcpts = append(rcpts, fmt.Sprintf("user%d@%s", i, p.Domains()[i%4]))
	}
	s.send(t, rcpts)
	waitAll(t, n, append(rcpts, first))
	local := netip.MustParseAddr("127.0.0.1")
	for _, m := range p.Messages() {
		if m.MailAt.After(refused.Time.Add(10 * time.Second)) {
			t.Fatalf("message to %v went after the override ended: the test proves nothing", m.To)
		}
	}
	if st := p.Stats(local); st.MaxConcurrent != 1 {
		t.Errorf("the provider saw %d connections at once under connection_limit = 1", st.MaxConcurrent)
	}
	if status := s.cli(t, "shaping", "status"); !strings.Contains(status, "SetConfig connection_limit=1") {
		t.Errorf("shaping status while the override holds:\n%s", status)
	}
	report(t, n)
}
