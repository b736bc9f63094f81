package main

import (
	"strings"
	"testing"

	"github.com/postline/postline/internal/dnstest"
)

// `postline domain verify` on a verified domain whose records are not
// published (issue 32, defect 1): it reports each record, says the domain
// stays verified and exits 1; the domain is still verified afterwards,
// and `domain show` gives the check. A new claim that fails stays pending
// with its expiry. When the look-ups themselves fail, the advice is about
// them, not about publishing records.
func TestCLIDomainVerifyKeepsVerification(t *testing.T) {
	t.Parallel()
	dns := dnstest.New(t)
	vars := map[string]string{"POSTLINE_DATA_DIR": t.TempDir(), "POSTLINE_DNS_SERVER": dns.Addr()}
	for _, args := range [][]string{{"user", "create", "alice"}, {"domain", "add", "alice", "example.org", "--direct"},
		{"domain", "verify", "example.org", "--force"}, {"domain", "add", "alice", "new.example", "--direct"}} {
		if code, _, errs := cliEnv(t, vars, args...); code != 0 {
			t.Fatalf("postline %s: %s", strings.Join(args, " "), errs)
		}
	}
	dns.AddTXT("example.org", "v=spf1 a mx ~all")
	code, out, errs := cliEnv(t, vars, "domain", "verify", "example.org")
	if code != 1 || !strings.Contains(errs, "example.org stays verified and keeps sending, but its DNS records changed since verification") ||
		!strings.Contains(out, "missing") || !strings.Contains(out, "ok") {
		t.Fatalf("domain verify with DKIM missing: exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	code, out, _ = cliEnv(t, vars, "domain", "show", "example.org")
	if code != 0 || !strings.Contains(out, "claim:     verified") || strings.Contains(out, "verified:  no") ||
		!strings.Contains(out, "records changed since verification; the domain stays verified") {
		t.Fatalf("domain show after the failed check: exit %d\n%s", code, out)
	}
	code, out, errs = cliEnv(t, vars, "domain", "verify", "new.example")
	if code != 1 || !strings.Contains(errs, "new.example is not verified") {
		t.Fatalf("domain verify of a new claim: exit %d\n%s\n%s", code, out, errs)
	}
	if _, out, _ = cliEnv(t, vars, "domain", "show", "new.example"); !strings.Contains(out, "claim:     pending, deleted unless verified by") {
		t.Fatalf("domain show of the new claim after a failed check:\n%s", out)
	}
	if !strings.Contains(errs, "publish the records marked missing or mismatch") {
		t.Errorf("a check that found records missing says %q; want it to say to publish them", errs)
	}

	// Look-ups that fail find nothing wrong with the records: the advice
	// is about the look-ups (a resolver where nothing listens).
	vars["POSTLINE_DNS_SERVER"] = "127.0.0.1:1"
	code, out, errs = cliEnv(t, vars, "domain", "verify", "new.example")
	if code != 1 || !strings.Contains(out, "dns_error") || strings.Contains(errs, "publish the records") ||
		!strings.Contains(errs, "new.example is not verified: the DNS look-ups failed (records marked dns_error)") {
		t.Fatalf("domain verify with the resolver down: exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
}
