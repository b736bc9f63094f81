package sending_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/postline/postline/internal/delivery"
	"github.com/postline/postline/internal/sending"
	"github.com/postline/postline/internal/shaping"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/suspend"
	"github.com/postline/postline/internal/testutil"
	"github.com/prometheus/client_golang/prometheus"
)

// automationRules loads a shaping file and returns the automation rules
// in force for a domain at mx.slow.example.
func automationRules(t *testing.T, toml string) []shaping.Rule {
	t.Helper()
	path := filepath.Join(t.TempDir(), "shaping.toml")
	if err := os.WriteFile(path, []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
	rules, err := shaping.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return rules.For("slow.example", []string{"mx.slow.example"}, "").Automation
}

type automationBundle struct {
	auto  *sending.Automation
	susp  *suspend.Service
	clock *time.Time
}

func newAutomation(t *testing.T) automationBundle {
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	clock := &now
	nowFn := func() time.Time { return *clock }
	susp := suspend.New(store.NewSuspensions(testutil.OpenDB(t, store.SQLite)), suspend.Config{Now: nowFn})
	return automationBundle{auto: sending.NewAutomation(sending.AutomationConfig{Suspensions: susp, Now: nowFn}), susp: susp, clock: clock}
}

// A reply is matched as "CODE ENHANCED TEXT"; Postline's own verdicts
// carry no code and count as internal.
func TestReplyOf(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		res      delivery.Result
		err      error
		want     string
		internal bool
	}{
		{err: &delivery.Error{Code: 421, Enhanced: "4.7.28", Message: "Our system has detected\n an unusual rate"},
			want: "421 4.7.28 Our system has detected an unusual rate"},
		{err: &delivery.Error{Code: 550, Message: "no such user"}, want: "550 no such user"},
		{err: &delivery.Error{Enhanced: "4.4.1", Message: "connection refused"}, want: "4.4.1 connection refused", internal: true},
		{res: delivery.Result{Code: 250, Enhanced: "2.0.0", Message: "OK queued"}, want: "250 2.0.0 OK queued"},
	} {
		line, internal := sending.ReplyOf(c.res, c.err)
		if line != c.want || internal != c.internal {
			t.Errorf("ReplyOf(%+v, %v) = %q, %v; want %q, %v", c.res, c.err, line, internal, c.want, c.internal)
		}
	}
}

// A matching reply suspends the site at once for the rule's duration; one
// that does not match, or an internal one for a rule without
// match_internal, does nothing.
func TestAutomationSuspendsOnMatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rules := automationRules(t, `[["slow.example".automation]]
regex = "4\\.7\\.28"
action = "Suspend"
duration = "3s"
`)
	b := newAutomation(t)
	site := "mx.slow.example"
	b.auto.Observe(ctx, sending.Reply{Site: site, Rules: rules, Line: "421 4.7.0 try later"})
	b.auto.Observe(ctx, sending.Reply{Site: site, Rules: rules, Line: "4.7.28 made up", Internal: true})
	if _, _, ok := b.susp.Suspended(ctx, site); ok {
		t.Fatal("suspended by a reply that does not match, or an internal one")
	}
	b.auto.Observe(ctx, sending.Reply{Site: site, Rules: rules, Line: "421 4.7.28 rate limited"})
	until, reason, ok := b.susp.Suspended(ctx, site)
	if !ok || !until.Equal(b.clock.Add(3*time.Second)) || !strings.Contains(reason, "421 4.7.28 rate limited") {
		t.Fatalf("Suspended = %v, %q, %v; want until now+3s, naming the reply", until, reason, ok)
	}
	list, err := b.auto.InForce(ctx)
	if err != nil || len(list) != 1 || list[0].Action != "Suspend" || list[0].Rule != rules[0].ID || list[0].Reply != "421 4.7.28 rate limited" {
		t.Fatalf("InForce = %+v, %v", list, err)
	}
	*b.clock = b.clock.Add(3 * time.Second)
	if list, _ := b.auto.InForce(ctx); len(list) != 0 {
		t.Errorf("InForce after the duration = %+v; want none", list)
	}
}

// A matching reply of any length puts the rule's action in force: the
// reply is matched whole, the suspension keeps its start (the reason is
// bounded), and escape sequences a server puts in it never reach the
// operator's terminal.
func TestAutomationLongReply(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rules := automationRules(t, `[["slow.example".automation]]
regex = "TS01.*end of the long reply"
action = "Suspend"
duration = "1h"
`)
	b := newAutomation(t)
	site := "mx.slow.example"
	long := "421 4.7.0 [TS01] \x1b[31mMessages temporarily deferred " + strings.Repeat("due to unexpected volume ", 4000) +
		"end of the long reply"
	line, _ := sending.ReplyOf(delivery.Result{}, &delivery.Error{Code: 421, Enhanced: "4.7.0",
		Message: strings.TrimPrefix(long, "421 4.7.0 ")})
	b.auto.Observe(ctx, sending.Reply{Site: site, Rules: rules, Line: line})
	until, reason, ok := b.susp.Suspended(ctx, site)
	if !ok || !until.Equal(b.clock.Add(time.Hour)) {
		t.Fatalf("Suspended = %v, %q, %v; want suspended for 1h by a %d-byte reply", until, reason, ok, len(long))
	}
	list, err := b.auto.InForce(ctx)
	if err != nil || len(list) != 1 {
		t.Fatalf("InForce = %+v, %v", list, err)
	}
	sp := list[0]
	if len(sp.Reason) > 500 || len(sp.Reply) > 300 || !strings.HasPrefix(sp.Reply, "421 4.7.0 [TS01]") ||
		strings.ContainsAny(sp.Reason+sp.Reply, "\x1b\r\n") {
		t.Errorf("suspension keeps reason %q (%d bytes) and reply %q (%d bytes); want at most 500 and 300 printable bytes, "+
			"the reply's start", sp.Reason, len(sp.Reason), sp.Reply, len(sp.Reply))
	}
}

// trigger = {Threshold="3/min"}: the action fires on the third match
// within a minute, not before; matches older than the period do not count.
func TestAutomationThreshold(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rules := automationRules(t, `[["slow.example".automation]]
regex = "^421 "
action = [{SetConfig={name="connection_limit", value=1}}, "SuspendTenant"]
duration = "1 hour"
trigger = {Threshold="3/min"}
`)
	b := newAutomation(t)
	site := "mx.slow.example"
	see := func() {
		b.auto.Observe(ctx, sending.Reply{Site: site, AccountID: 7, Rules: rules, Line: "421 4.7.0 slow down"})
	}
	see()
	*b.clock = b.clock.Add(50 * time.Second)
	see()
	*b.clock = b.clock.Add(20 * time.Second) // the first is out of the period
	see()
	if list, _ := b.auto.InForce(ctx); len(list) != 0 {
		t.Fatalf("in force after 2 matches within a minute: %+v", list)
	}
	see()
	list, _ := b.auto.InForce(ctx)
	if len(list) != 2 {
		t.Fatalf("InForce after the third match within a minute = %+v; want the override and the tenant suspension", list)
	}
	if got := b.auto.Overrides(ctx, site); got.ConnectionLimit.N != 1 {
		t.Errorf("Overrides(%s) = %+v; want connection_limit 1", site, got)
	}
	if got := b.auto.Overrides(ctx, "mx.other.example"); got.ConnectionLimit.IsSet() {
		t.Errorf("Overrides of another site = %+v; want none", got)
	}
	if _, ok := b.susp.Holding(ctx, suspend.Tenant, "7@"+site); !ok {
		t.Error("account 7 is not suspended at the site")
	}
}

// Replies that match together (deliveries under way on several
// connections) put the action in force once: one activation counted.
func TestAutomationConcurrentMatchesActOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rules := automationRules(t, "[[\"slow.example\".automation]]\nregex = \"4\\\\.7\\\\.28\"\naction = \"Suspend\"\nduration = \"1 hour\"\n")
	reg := prometheus.NewRegistry()
	susp := suspend.New(store.NewSuspensions(testutil.OpenDB(t, store.SQLite)), suspend.Config{})
	auto := sending.NewAutomation(sending.AutomationConfig{Suspensions: susp, Registry: reg})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			auto.Observe(ctx, sending.Reply{Site: "mx.slow.example", Rules: rules, Line: "421 4.7.28 slow down"})
		})
	}
	wg.Wait()
	if got := suspendCount(t, reg); got != 1 {
		t.Errorf("postline_shaping_actions_total{action=\"Suspend\"} = %v after 8 replies together; want 1", got)
	}
}

// suspendCount reads postline_shaping_actions_total{action="Suspend"}.
func suspendCount(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if mf.GetName() == "postline_shaping_actions_total" && m.GetLabel()[0].GetValue() == "Suspend" {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatal("postline_shaping_actions_total{action=\"Suspend\"} not exported")
	return 0
}
