package shaping

import (
	"testing"
	"time"
)

func TestAutomationRules(t *testing.T) {
	t.Parallel()
	r, err := loadText(t, `
[["default".automation]]
regex = '''Server busy\. Please try again later'''
action = {SetConfig = {name = "max_message_rate", value = "1/minute"}}
duration = "90m"

[provider."yahoo"]
match = [{MXSuffix = ".yahoodns.net"}]

[[provider."yahoo".automation]]
regex = ["\\[TS?S04\\]", "\\[TS03\\]"]
action = ["Suspend", {SetConfig = {name = "connection_limit", value = 1}}]
trigger = {Threshold = "2/hr"}
duration = "2 hours"

["comcast.net"]
mx_rollup = false

[["comcast.net".automation]]
regex = "^(?!.*KumoMTA internal).*RL000010"
trigger = "Immediate"
action = "SuspendTenant"
duration = "5 minutes"
`)
	if err != nil {
		t.Fatal(err)
	}
	y := r.For("yahoo.com", yahooMX, "")
	if len(y.Automation) != 2 || y.Automation[0].Origin != "default" || y.Automation[1].Origin != `provider "yahoo"` {
		t.Fatalf("yahoo.com rules: %v; want default's then the provider's", y.Automation)
	}
	rule := y.Automation[1]
	if !rule.Matches("421 4.7.0 [TSS04] Messages from 192.0.2.1 temporarily deferred") || !rule.Matches("421 [TS04] deferred") ||
		!rule.Matches("554 [TS03] permanently deferred") || rule.Matches("421 4.7.0 [TS01] slow down") {
		t.Errorf("yahoo rule matches the wrong replies")
	}
	if rule.Duration != 2*time.Hour || rule.Threshold != (Rate{Count: 2, Per: time.Hour}) {
		t.Errorf("duration %v threshold %+v", rule.Duration, rule.Threshold)
	}
	if len(rule.Actions) != 2 || rule.Actions[0].Kind != ActionSuspend || rule.Actions[1].Kind != ActionSetConfig ||
		rule.Actions[1].Name != "connection_limit" || rule.Actions[1].Value != "1" {
		t.Errorf("actions = %+v", rule.Actions)
	}
	// A SetConfig action overrides the effective limit.
	set := y.Automation[0].Actions[0]
	if got := y.Limits.With(set.Override).MaxMessageRate; got != (Rate{Count: 1, Per: time.Minute}) || set.String() != "SetConfig max_message_rate=1/min" {
		t.Errorf("applying %s gives max_message_rate %v", set, got)
	}

	c := r.For("comcast.net", []string{"mx1a1.comcast.net"}, "")
	tenant := c.Automation[len(c.Automation)-1]
	if tenant.Actions[0].Kind != ActionSuspendTenant || tenant.Threshold.IsSet() || tenant.Duration != 5*time.Minute {
		t.Errorf("comcast rule: %+v", tenant)
	}
	// The leading negative lookahead, which Go's regexp lacks, is kept.
	if !tenant.Matches("421 RL000010 domain throttled") || tenant.Matches("KumoMTA internal: RL000010 seen") {
		t.Errorf("^(?!...) pattern: matches a remote RL000010 %v, an internal one %v",
			tenant.Matches("421 RL000010 domain throttled"), tenant.Matches("KumoMTA internal: RL000010 seen"))
	}
	if tenant.ID == "" || tenant.ID == rule.ID {
		t.Errorf("rule IDs %q and %q should be set and distinct", tenant.ID, rule.ID)
	}
	again, err := loadText(t, "[[\"comcast.net\".automation]]\nregex = \"^(?!.*KumoMTA internal).*RL000010\"\naction = \"SuspendTenant\"\nduration = \"5m\"\n")
	if err != nil {
		t.Fatal(err)
	}
	if id := again.For("comcast.net", nil, "").Automation[0].ID; id != tenant.ID {
		t.Errorf("the same rule in another file has ID %q, want %q (IDs follow content, not position)", id, tenant.ID)
	}
	if s := tenant.String(); s != "SuspendTenant for 5m when a reply matches /^(?!.*KumoMTA internal).*RL000010/" {
		t.Errorf("String() = %q", s)
	}
}

func TestClosingParen(t *testing.T) {
	t.Parallel()
	cases := map[string]int{
		"^(?!abc)x":       7,
		`^(?!a\)b)x`:      8,
		"^(?!a[)]b)x":     9,
		"^(?!a(b)c)x":     9,
		"^(?!unclosed":    -1,
		`^(?!a[\]]b(c))x`: 13,
	}
	for p, want := range cases {
		if got := closingParen(p, 1); got != want {
			t.Errorf("closingParen(%q) = %d, want %d", p, got, want)
		}
	}
}
