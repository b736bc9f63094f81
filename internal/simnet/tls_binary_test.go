package simnet_test

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/simnet"
)

// tlsCase is one provider of a TLS policy test and what the binary's
// delivery to its first domain must come to.
type tlsCase struct {
	provider simnet.ProviderConfig
	// deliver: a delivered entry with details.tls.policy == policy;
	// otherwise temporary_fail entries whose reason holds reason, and
	// nothing at the provider.
	deliver bool
	policy  string
	reason  []string // substrings of the temporary_fail's smtp_message
	// noConnection: the provider must see no connection at all (the
	// policy excludes its hosts before dialling).
	noConnection bool
	report       string // with deliver: a substring of details.tls.report
}

// runTLSCases starts a Net of the cases' providers and serve with vars,
// sends one message to the first domain of each, and checks each
// outcome through the delivery log and what the providers saw.
func runTLSCases(t *testing.T, cases []tlsCase, vars map[string]string) {
	cfg := simnet.Config{}
	for _, c := range cases {
		cfg.Providers = append(cfg.Providers, c.provider)
	}
	n := simnet.New(t, cfg)
	s := startServeWith(t, n, vars)
	var good, bad []string
	rcpt := map[string]string{}
	for _, c := range cases {
		r := "user@" + n.Provider(c.provider.Name).Domains()[0]
		rcpt[c.provider.Name] = r
		if c.deliver {
			good = append(good, r)
		} else {
			bad = append(bad, r)
		}
	}
	all := append(append([]string{}, good...), bad...)
	s.send(t, all)
	s.waitSettled(t, all)
	time.Sleep(time.Second) // a late delivery would show now
	delivered, failed := byRecipient(s.entries(t, "delivered")), byRecipient(s.entries(t, "temporary_fail"))
	local := netip.MustParseAddr("127.0.0.1")
	for _, c := range cases {
		name, r := c.provider.Name, rcpt[c.provider.Name]
		p := n.Provider(name)
		msgs := p.Messages()
		if !c.deliver {
			if len(msgs) != 0 {
				t.Errorf("%s: %d messages arrived, want none", name, len(msgs))
			}
			if conns := p.Stats(local).Connections; c.noConnection && conns != 0 {
				t.Errorf("%s: %d connections, want none: the policy excludes its MX hosts", name, conns)
			}
			for _, e := range failed[r] {
				msg := e.str("smtp_message")
				for _, want := range c.reason {
					if !strings.Contains(msg, want) {
						t.Errorf("%s: temporary_fail reason %q, want it to say %q", name, msg, want)
					}
				}
				if tl := e.tls(); tl == nil || tl["policy"] != c.policy {
					t.Errorf("%s: temporary_fail details.tls = %v, want policy %q", name, e.Details["tls"], c.policy)
				}
			}
			if d := delivered[r]; len(d) != 0 {
				t.Errorf("%s: delivered entries %v, want none", name, d)
			}
			if len(failed[r]) == 0 {
				t.Errorf("%s: no temporary_fail entry", name)
			}
			continue
		}
		if len(msgs) != 1 || msgs[0].TLS == nil {
			t.Errorf("%s: messages %+v, want one over TLS", name, msgs)
		}
		es := delivered[r]
		if len(es) != 1 {
			t.Errorf("%s: %d delivered entries, want 1; temporary_fail entries %v", name, len(es), failed[r])
			continue
		}
		tl := es[0].tls()
		if tl == nil || tl["policy"] != c.policy || tl["verified"] != true || !strings.HasPrefix(strVal(tl["version"]), "TLS1.") {
			t.Errorf("%s: details.tls = %v, want policy %q, verified true and a TLS version", name, es[0].Details["tls"], c.policy)
		}
		if c.report != "" && !strings.Contains(strVal(tl["report"]), c.report) {
			t.Errorf("%s: details.tls.report = %q, want it to say %q", name, tl["report"], c.report)
		}
		if c.report == "" && tl["report"] != nil {
			t.Errorf("%s: details.tls.report = %q, want none", name, tl["report"])
		}
	}
	if t.Failed() {
		report(t, n)
	}
}

func strVal(v any) string {
	s, _ := v.(string)
	return s
}

// MTA-STS in enforce mode through the binary, with the shaping file
// turning it on (it is on by default too): a provider whose policy lists
// other MX hosts is not even dialled and the delivery is deferred naming
// the policy; certificates that do not verify (self-signed, or for
// another name) are refused naming the policy, nothing sent; a valid one
// delivers with details.tls {"policy": "mta-sts", "verified": true}. A
// policy in testing mode delivers and reports what enforce would refuse.
// Serve trusts the test CA through SSL_CERT_FILE (Net.ServeEnv).
func TestBinaryMTASTSEnforce(t *testing.T) {
	t.Parallel()
	elsewhere := []string{"mx.elsewhere.simnet.test"}
	runTLSCases(t, []tlsCase{
		{provider: simnet.ProviderConfig{Name: "stsgood", Domains: 2, TLS: simnet.TLSValid, MTASTS: &simnet.MTASTSPolicy{}},
			deliver: true, policy: "mta-sts"},
		{provider: simnet.ProviderConfig{Name: "stsmx", Domains: 2, TLS: simnet.TLSValid, MTASTS: &simnet.MTASTSPolicy{MX: elsewhere}},
			policy: "mta-sts", noConnection: true,
			reason: []string{"MTA-STS policy of d001.stsmx.example (enforce)", "mx1.stsmx.simnet.test is not listed"}},
		{provider: simnet.ProviderConfig{Name: "stsuntrusted", Domains: 2, TLS: simnet.TLSUntrusted, MTASTS: &simnet.MTASTSPolicy{}},
			policy: "mta-sts", reason: []string{"MTA-STS policy of d001.stsuntrusted.example (enforce)"}},
		{provider: simnet.ProviderConfig{Name: "stswrongname", Domains: 2, TLS: simnet.TLSWrongName, MTASTS: &simnet.MTASTSPolicy{}},
			policy: "mta-sts", reason: []string{"MTA-STS policy of d001.stswrongname.example (enforce)"}},
		{provider: simnet.ProviderConfig{Name: "ststesting", Domains: 2, TLS: simnet.TLSValid, MTASTS: &simnet.MTASTSPolicy{Mode: "testing", MX: elsewhere}},
			deliver: true, policy: "mta-sts", report: "is not listed in the policy"},
	}, map[string]string{
		"POSTLINE_SHAPING_FILE":   writeTemp(t, "shaping.toml", "[\"default\"]\nenable_mta_sts = true\n"),
		"POSTLINE_RETRY_SCHEDULE": "500ms",
	})
}

// DANE through the binary with the built-in shaping rules (DANE is on by
// default): authenticated TLSA records matching the provider's
// certificate (DANE-EE) or the CA (DANE-TA) deliver with details.tls
// {"policy": "dane", "verified": true}, even where an MTA-STS policy
// lists other MX hosts (MTA-STS is then not consulted); records matching
// nothing defer naming DANE, and nothing arrives.
func TestBinaryDANE(t *testing.T) {
	t.Parallel()
	runTLSCases(t, []tlsCase{
		{provider: simnet.ProviderConfig{Name: "daneee", Domains: 2, TLS: simnet.TLSValid, DANE: &simnet.DANE{Usage: 3}},
			deliver: true, policy: "dane"},
		{provider: simnet.ProviderConfig{Name: "daneta", Domains: 2, TLS: simnet.TLSValid, DANE: &simnet.DANE{Usage: 2}},
			deliver: true, policy: "dane"},
		{provider: simnet.ProviderConfig{Name: "danests", Domains: 2, TLS: simnet.TLSValid, DANE: &simnet.DANE{Usage: 3},
			MTASTS: &simnet.MTASTSPolicy{MX: []string{"mx.elsewhere.simnet.test"}}},
			deliver: true, policy: "dane"},
		{provider: simnet.ProviderConfig{Name: "danebad", Domains: 2, TLS: simnet.TLSValid, DANE: &simnet.DANE{Usage: 3, Mismatch: true}},
			policy: "dane", reason: []string{"DANE: "}},
	}, map[string]string{"POSTLINE_RETRY_SCHEDULE": "500ms"})
}

// writeTemp writes text to a file named name in a temporary directory and
// returns its path.
func writeTemp(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
