package shaping

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

// KumoMTA's default shaping file and its community file (testdata/kumomta,
// see ORIGIN.md) load together, as KumoMTA's documentation tells its users
// to load them, with warnings and no error, and give the limits they say.
func TestKumoMTAFilesLoadTogether(t *testing.T) {
	t.Parallel()
	r, err := Load("testdata/kumomta/shaping.toml", "testdata/kumomta/community-shaping.toml")
	if err != nil {
		t.Fatalf("KumoMTA's files do not load: %v", err)
	}
	var ignored []string
	for _, u := range r.Unimplemented() {
		ignored = append(ignored, u[strings.LastIndex(u, ".")+1:])
	}
	slices.Sort(ignored)
	if want := []string{"data_dot_timeout", "data_timeout", "max_ready", "remember_broken_tls", "system_shutdown_timeout"}; !slices.Equal(ignored, want) {
		t.Errorf("ignored keys = %v, want %v", ignored, want)
	}
	// The community file adds rules to a "gmail" provider the default file
	// never defines (it calls it "google"): KumoMTA never applies them either.
	if w := strings.Join(r.Warnings(), "\n"); !strings.Contains(w, `provider "gmail" has no match entries`) {
		t.Errorf("warnings = %q", w)
	}

	gmail := []string{"gmail-smtp-in.l.google.com", "alt1.gmail-smtp-in.l.google.com", "alt2.gmail-smtp-in.l.google.com"}
	cases := []struct {
		domain, source string
		mx             []string
		provider       string
		want           map[string]string // effective keys; others as default says
	}{
		{"yahoo.com", "", yahooMX, "yahoo", map[string]string{"max_deliveries_per_connection": "20", "connection_limit": "10",
			"max_message_rate": "100/s", "max_connection_rate": "100/min", "enable_tls": "Opportunistic", "idle_timeout": "1m"}},
		{"gmail.com", "", gmail, "google", map[string]string{"max_deliveries_per_connection": "50", "enable_tls": "Required",
			"consecutive_connection_failures_before_delay": "5"}},
		{"hotmail.com", "", []string{"hotmail-com.olc.protection.outlook.com"}, "outlook", map[string]string{"max_deliveries_per_connection": "50"}},
		{"icloud.com", "", []string{"mx01.mail.icloud.com", "mx02.mail.icloud.com"}, "apple", map[string]string{"max_deliveries_per_connection": "5"}},
		{"comcast.net", "", []string{"mx1a1.comcast.net", "mx2h1.comcast.net"}, "", map[string]string{"connection_limit": "25",
			"max_deliveries_per_connection": "1000", "enable_tls": "Required", "idle_timeout": "30s",
			"consecutive_connection_failures_before_delay": "24"}},
		{"yahoo.co.jp", "", []string{"mx.mail.yahoo.co.jp"}, "", map[string]string{"connection_limit": "2", "max_message_rate": "10/s",
			"max_deliveries_per_connection": "20"}},
		{"web.de", "", []string{"mx-ha02.web.de", "mx-ha03.web.de"}, "gmx.net_web.de", map[string]string{"connection_limit": "4",
			"max_deliveries_per_connection": "20", "enable_tls": "Required"}},
		{"customer.example", "", []string{"eu-smtp-inbound-1.mimecast.com", "eu-smtp-inbound-2.mimecast.com"}, "mimecast",
			map[string]string{"connection_limit": "10", "max_deliveries_per_connection": "100"}},
		{"example.com", "", nil, "", map[string]string{"connection_limit": "3", "max_deliveries_per_connection": "100"}},
		{"example.com", "my source name", nil, "", map[string]string{"connection_limit": "5"}},
		{"http://127.0.0.1:8008.tsa.kumomta", "", nil, "", map[string]string{"connection_limit": "local:5", "max_deliveries_per_connection": "8192"}},
	}
	for _, c := range cases {
		s := r.For(c.domain, c.mx, c.source)
		if s.Provider != c.provider {
			t.Errorf("%s: provider %q, want %q", c.domain, s.Provider, c.provider)
		}
		got := map[string]string{}
		for _, kv := range s.KeyValues() {
			got[kv.Key] = kv.Value
		}
		for k, want := range c.want {
			if got[k] != want {
				t.Errorf("%s (source %q): %s = %q, want %q", c.domain, c.source, k, got[k], want)
			}
		}
	}
	if pl := r.For("gmail.com", gmail, "").ProviderLimits; len(pl) != 1 || pl[0].ConnectionLimit.N != 5 {
		t.Errorf("google's provider_connection_limit: %+v", pl)
	}

	// Yahoo's rules: the default file's own, then the community file's,
	// after the default section's.
	y := r.For("yahoo.com", yahooMX, "")
	if len(y.Automation) != 10 || y.Automation[0].Origin != "default" || y.Automation[1].File != "testdata/kumomta/shaping.toml" ||
		y.Automation[9].File != "testdata/kumomta/community-shaping.toml" {
		t.Errorf("yahoo.com has %d rules; want 1 default, 1 from shaping.toml and 8 from the community file", len(y.Automation))
	}
	if !matchesAny(y.Automation, "421 4.7.0 [TSS04] Messages from 192.0.2.7 temporarily deferred due to user complaints", ActionSuspend) {
		t.Errorf("no yahoo rule suspends on [TSS04]")
	}
	deferred := "421 4.7.0 [TS01] Messages from 192.0.2.7 temporarily deferred due to user complaints"
	if !matchesAny(y.Automation, deferred, ActionSetConfig) {
		t.Errorf("the default section's rule does not slow down on %q", deferred)
	}
	comcast := r.For("comcast.net", []string{"mx1a1.comcast.net"}, "").Automation
	var rl Rule
	for _, a := range comcast {
		if a.Origin == `"comcast.net"` && a.Threshold.IsSet() {
			rl = a
		}
	}
	if !rl.Matches("421 RL000001 too many sessions") || rl.Threshold != (Rate{Count: 2, Per: time.Hour}) ||
		rl.Actions[0].Name != "max_connection_rate" || rl.Actions[0].Value != "10000/h" || rl.Duration != 2*time.Hour {
		t.Errorf("comcast's RL0000 rule: %+v", rl)
	}
	if !matchesAny(comcast, "421 RL000010 domain throttled", ActionSuspendTenant) || matchesAny(comcast, "KumoMTA internal: RL000010", ActionSuspendTenant) {
		t.Errorf("comcast's ^(?!.*KumoMTA internal).*RL000010 rule does not behave as in KumoMTA")
	}

	// With the sites resolved, comcast.net's section covers every domain at
	// comcast's MX hosts.
	comcastMX := []string{"mx1a1.comcast.net", "mx2h1.comcast.net"}
	lookup := fakeMX(map[string][]string{"comcast.net": comcastMX, "mail.com": {"mx00.mail.com", "mx01.mail.com"}})
	resolved := r.ResolveSites(context.Background(), lookup)
	if got := resolved.For("customer.example", comcastMX, "").ConnectionLimit.N; got != 25 {
		t.Errorf("a domain hosted at comcast: connection_limit %d, want 25", got)
	}
}

func matchesAny(rules []Rule, reply string, kind ActionKind) bool {
	for _, r := range rules {
		if r.Matches(reply) && slices.ContainsFunc(r.Actions, func(a Action) bool { return a.Kind == kind }) {
			return true
		}
	}
	return false
}
