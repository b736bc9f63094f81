package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/postline/postline/internal/dnstest"
	"github.com/postline/postline/internal/smtptest"
)

// cli runs the command in-process with POSTLINE_DATA_DIR=dir and returns
// the exit status, stdout and stderr.
func cli(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	return cliEnv(t, map[string]string{"POSTLINE_DATA_DIR": dir}, args...)
}

// cliEnv runs the command in-process with exactly the given environment.
func cliEnv(t *testing.T, vars map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	getenv := func(k string) string { return vars[k] }
	code := run(context.Background(), args, env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: getenv})
	return code, out.String(), errb.String()
}

var keyLine = regexp.MustCompile(`^pl_[A-Za-z0-9_-]{43}\n$`)

func TestCLIUsersKeysDomains(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	steps := []cliStep{
		{[]string{"user", "create", "alice"}, 0, "created account alice"},
		{[]string{"user", "create", "alice"}, 1, `account "alice" already exists`},
		{[]string{"user", "create", "Bad:Login"}, 2, "postline user create: LOGIN: login may contain only"},
		{[]string{"user", "list"}, 0, "alice"},
		{[]string{"key", "list", "alice"}, 0, "ID"},
		{[]string{"key", "revoke", "abc"}, 2, "KEY_ID must be a number"},
		{[]string{"key", "create", "nobody"}, 1, `account "nobody" not found`},
		{[]string{"key", "create", "alice", "--scopes", "send,everything"}, 2, `--scopes: unknown scope "everything"`},
		{[]string{"key", "create", "alice", "--expires", "tomorrow"}, 2, "--expires must be a duration"},
		{[]string{"key", "create", "alice", "--expires", "-1h"}, 2, "--expires"},
		{[]string{"key", "create", "alice", "--name", "limited", "--scopes", "send,log:read", "--domains", "Example.org", "--expires", "720h"}, 0, "pl_"},
		{[]string{"key", "list", "alice"}, 0, "send,log:read  example.org"},
		{[]string{"domain", "add", "alice", "example.org"}, 2, "give --direct or --smtp-host"},
		{[]string{"domain", "add", "alice", "example.org", "--direct"}, 0, "._domainkey.example.org"},
		{[]string{"domain", "add", "alice", "relay.example", "--smtp-host", "smtp.example.net", "--smtp-port", "2525", "--smtp-user", "u", "--smtp-password", "hunter2"}, 0, "v=spf1"},
		{[]string{"domain", "show", "relay.example"}, 0, "relay smtp.example.net:2525 (starttls) as u"},
		{[]string{"domain", "verify", "example.org", "--force"}, 0, "marked verified"},
		{[]string{"domain", "set-tracking", "example.org", "track.example.org"}, 0, "track.example.org"},
		{[]string{"domain", "list", "alice"}, 0, "track.example.org"},
		{[]string{"domain", "track", "example.org", "--clicks", "on", "--unsubscribe", "on"}, 0, "opens off, clicks on, unsubscribe on"},
		{[]string{"domain", "track", "example.org", "--clicks", "off"}, 0, "opens off, clicks off, unsubscribe on"},
		{[]string{"domain", "show", "example.org"}, 0, "track.example.org (opens off, clicks off, unsubscribe on)"},
		{[]string{"domain", "track", "example.org", "--opens", "maybe"}, 2, `postline domain track: --opens: want on or off, got "maybe"`},
		{[]string{"domain", "set-auth", "example.org", "bounces.example.org"}, 0, "bounces.example.org"},
		{[]string{"domain", "remove", "relay.example"}, 0, "removed relay.example"},
		{[]string{"domain", "show", "relay.example"}, 1, "not found"},
		{[]string{"domain", "frobnicate"}, 2, `postline domain: unknown command "frobnicate"; want add, list,`},
		{[]string{"nonsense"}, 2, "unknown command"},
		{[]string{"user", "list", "--rate-domain-per-minute", "0"}, 2, "rate-domain-per-minute: must be at least 1"},
	}
	runSteps(t, dir, steps)
	signingKey := regexp.MustCompile(`^[0-9a-f]{64}\n$`)
	code, first, _ := cli(t, dir, "webhook", "signing-key", "alice")
	if _, again, _ := cli(t, dir, "webhook", "signing-key", "alice"); code != 0 || !signingKey.MatchString(first) || again != first {
		t.Fatalf("webhook signing-key: exit %d, %q then %q; want the same key alone on one line", code, first, again)
	}
	code, rotated, _ := cli(t, dir, "webhook", "signing-key", "alice", "--rotate")
	if _, now, _ := cli(t, dir, "webhook", "signing-key", "alice"); code != 0 || !signingKey.MatchString(rotated) || rotated == first || now != rotated {
		t.Fatalf("webhook signing-key --rotate: exit %d, %q (was %q, then reads %q); want a new key that stays", code, rotated, first, now)
	}
	if code, _, errs := cli(t, dir, "webhook", "signing-key", "nobody"); code != 1 || !strings.Contains(errs, "not found") {
		t.Fatalf("webhook signing-key of a missing account: exit %d %q", code, errs)
	}
	code, out, _ := cli(t, dir, "key", "create", "alice", "--name", "ci")
	if code != 0 || !keyLine.MatchString(out) {
		t.Fatalf("key create: exit %d, stdout %q; want one line with the key alone", code, out)
	}
	code, out, _ = cli(t, dir, "key", "list", "alice")
	if code != 0 || !strings.Contains(out, "ci") || !strings.Contains(out, "active") {
		t.Fatalf("key list: %q", out)
	}
	if code, out, _ = cli(t, dir, "key", "revoke", "1"); code != 0 {
		t.Fatalf("key revoke 1: exit %d %q", code, out)
	}
	if _, out, _ = cli(t, dir, "key", "list", "alice"); !strings.Contains(out, "revoked") {
		t.Fatalf("key list after revoke: %q", out)
	}
}

func TestCLISuppressions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	csvFile := dir + "/list.csv"
	if err := os.WriteFile(csvFile, []byte("recipient,type\nold@x.example,bounce\nx.example,unsubscribe\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	steps := []cliStep{
		{[]string{"user", "create", "alice"}, 0, "created"},
		{[]string{"domain", "add", "alice", "alice.example", "--direct"}, 0, "added"},
		{[]string{"suppression", "add", "alice.example", "Gone@X.example", "--type", "bounce"}, 0, "added bounce gone@x.example (id 1)"},
		{[]string{"suppression", "add", "alice.example", "gone@x.example", "--type", "bounce"}, 0, "already present: bounce gone@x.example (id 1)"},
		{[]string{"suppression", "add", "alice.example", "gone@x.example"}, 2, "--type is required: want bounce, unsubscribe or whitelist"},
		{[]string{"suppression", "add", "alice.example", "gone@x.example", "--type", "bounced"}, 2, `--type: want bounce, unsubscribe or whitelist, got "bounced"`},
		{[]string{"suppression", "add", "alice.example", "not@@valid", "--type", "bounce"}, 2, "RECIPIENT: The recipient must be"},
		{[]string{"suppression", "add", "nobody.example", "a@b.example", "--type", "bounce"}, 1, "not found"},
		{[]string{"webhook", "add", "alice.example", "https://hooks.example.com/p", "--events", "delivered,bounced"}, 0, "whsec_"},
		{[]string{"webhook", "list", "alice.example"}, 0, "delivered,bounced"},
		{[]string{"webhook", "add", "alice.example", "ftp://x"}, 2, "postline webhook add: URL: must be an absolute http"},
		{[]string{"webhook", "remove", "alice.example", "1"}, 0, "removed webhook 1"},
		{[]string{"webhook", "remove", "alice.example", "1"}, 1, "not found"},
		{[]string{"webhook", "remove", "alice.example", "x"}, 2, "ID must be a number"},
		{[]string{"suppression", "import", "alice.example", csvFile}, 0, "imported: 2 added, 0 already present"},
		{[]string{"suppression", "list", "alice.example", "--type", "bounce"}, 0, "page 1 of 1, 2 in all"},
		{[]string{"suppression", "list", "alice.example", "--per-page", "5"}, 2, "--per-page must be 10 to 100, got 5"},
		{[]string{"suppression", "remove", "alice.example", "1"}, 0, "removed suppression 1"},
		{[]string{"suppression", "remove", "alice.example", "1"}, 1, "not found"},
		{[]string{"suppression", "list", "alice.example", "--type", "bounce"}, 0, "page 1 of 1, 1 in all"},
	}
	runSteps(t, dir, steps)
}

type cliStep struct {
	args     []string
	code     int
	contains string // in stdout (or stderr when code != 0)
}

// runSteps runs each command and checks its exit status and output.
func runSteps(t *testing.T, dir string, steps []cliStep) {
	t.Helper()
	for _, s := range steps {
		code, out, errs := cli(t, dir, s.args...)
		text := out
		if s.code != 0 {
			text = errs
		}
		if code != s.code || !strings.Contains(text, s.contains) {
			t.Errorf("postline %s: exit %d, stdout %q, stderr %q; want exit %d with %q", strings.Join(s.args, " "), code, out, errs, s.code, s.contains)
		}
		if strings.Contains(out+errs, "hunter2") {
			t.Errorf("postline %s printed the SMTP password", strings.Join(s.args, " "))
		}
	}
}

func TestCLIValidate(t *testing.T) {
	t.Parallel()
	dns := dnstest.New(t)
	dns.AddMX("acme-mail.com", 10, "mx.acme-mail.com")
	vars := map[string]string{"POSTLINE_DATA_DIR": t.TempDir(), "POSTLINE_DNS_SERVER": dns.Addr()}
	if code, _, errs := cliEnv(t, vars, "migrate"); code != 0 {
		t.Fatalf("migrate: %s", errs)
	}
	run := func(stdin string, args ...string) (int, []map[string]any, string) {
		var out, errb bytes.Buffer
		code := run(context.Background(), append([]string{"validate"}, args...),
			env{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb, getenv: func(k string) string { return vars[k] }})
		var results []map[string]any
		for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			if line == "" {
				continue
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("output line %q is not JSON: %v", line, err)
			}
			results = append(results, m)
		}
		return code, results, errb.String()
	}
	code, res, errs := run("jane@acme-mail.com\n\n  bob@nowhere-corp.net \nnot-an-address\njane@acme-mail.com\n")
	if code != 0 || len(res) != 4 {
		t.Fatalf("stdin: exit %d, %d results, stderr %q", code, len(res), errs)
	}
	want := []struct {
		email string
		valid bool
	}{{"jane@acme-mail.com", true}, {"bob@nowhere-corp.net", false}, {"not-an-address", false}, {"jane@acme-mail.com", true}}
	for i, w := range want {
		if res[i]["email"] != w.email || res[i]["is_valid"] != w.valid {
			t.Errorf("line %d = %v, want %s valid=%v (input order)", i+1, res[i], w.email, w.valid)
		}
	}
	if res[1]["reason"] != "nxdomain" || !strings.Contains(errs, "validated 4 addresses: 2 valid, 2 invalid") {
		t.Errorf("reason %v, summary %q", res[1]["reason"], errs)
	}
	// The server's cache is shared: a second run answers from it.
	if _, res, errs = run("", "jane@acme-mail.com"); res[0]["cached"] != true || !strings.Contains(errs, "validated 1 address: 1 valid, 0 invalid (1 from cache)") {
		t.Errorf("second run not cached: %v, summary %q", res[0], errs)
	}
	queries := dns.Queries()
	code, res, _ = run("", "--offline", "--strict", `"x y"@acme-mail.com`, "z@unknown-corp.net")
	if code != 0 || res[0]["is_valid"] != false || res[0]["reason"] != "syntax" || res[1]["is_valid"] != true || dns.Queries() != queries {
		t.Errorf("offline strict: exit %d %v, %d DNS queries", code, res, dns.Queries()-queries)
	}
	if code, _, errs := run("", "--concurrency", "0"); code != 2 {
		t.Errorf("--concurrency 0: exit %d %q, want 2", code, errs)
	}
}

func TestCLITemplates(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	html := dir + "/welcome.html"
	if err := os.WriteFile(html, []byte("<p>Hi {{name}}</p>"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Issue 28: 20,000 nested #with, refused at once naming the limit.
	deep := dir + "/deep.txt"
	if err := os.WriteFile(deep, []byte(strings.Repeat("{{#with this}}", 20_000)+strings.Repeat("{{/with}}", 20_000)), 0o600); err != nil {
		t.Fatal(err)
	}
	steps := []cliStep{
		{[]string{"user", "create", "alice"}, 0, "created account alice"},
		{[]string{"domain", "add", "alice", "example.org", "--direct"}, 0, "._domainkey.example.org"},
		{[]string{"template", "add", "example.org", "welcome", "--subject", "Hi {{name}}", "--text", "Hello {{name}}", "--html-file", html}, 0, "version 1 is active"},
		{[]string{"template", "add", "example.org", "welcome", "--subject", "x", "--text", "y"}, 1, "exists"},
		{[]string{"template", "add", "example.org", "broken", "--subject", "x", "--text", "{{#if a}}"}, 2, "--text"},
		{[]string{"template", "add", "example.org", "deep", "--subject", "x", "--text-file", deep}, 2, "more than 100 deep"},
		{[]string{"template", "update", "example.org", "welcome", "--subject", "Hello {{name}}", "--text", "Hello again {{name}}", "--strict"}, 0, "version 2 is active"},
		{[]string{"template", "list", "example.org"}, 0, "welcome  2        2         true"},
		{[]string{"template", "show", "example.org", "welcome", "--version", "1"}, 0, "<p>Hi {{name}}</p>"},
		{[]string{"template", "render", "example.org", "welcome", "--variables", `{"name": "<Ann>"}`}, 0, "Hello again <Ann>"},
		{[]string{"template", "render", "example.org", "welcome"}, 2, `"name" is missing`},
		{[]string{"template", "render", "example.org", "welcome", "--variables", "nope"}, 2, "--variables must be a JSON object"},
		{[]string{"template", "remove", "example.org", "welcome"}, 0, "removed template welcome"},
		{[]string{"template", "show", "example.org", "welcome"}, 1, "not found"},
		{[]string{"message", "show", "example.org", "nope@example.org"}, 1, "Message not found"},
	}
	runSteps(t, dir, steps)
}

// postline validate --check-mailbox probes each mailbox at its MX (a
// local scripted SMTP server) and prints the verdicts; without probing
// permitted it is a usage error naming the settings.
func TestCLIValidateCheckMailbox(t *testing.T) {
	t.Parallel()
	sink := smtptest.New(t, smtptest.Config{OnlyDomains: []string{"probe-corp.net"}})
	sink.Known("ok@probe-corp.net")
	sink.Script("full@probe-corp.net", smtptest.Reply{Code: 452, Enhanced: [3]int{4, 2, 2}, Message: "mailbox full"})
	sink.Script("grey@probe-corp.net", smtptest.Reply{Code: 451, Enhanced: [3]int{4, 7, 1}, Message: "greylisted"})
	smtptest.Silent(t, net.JoinHostPort("127.0.0.3", fmt.Sprint(sink.Port()))) // accepts, never greets
	dns := dnstest.New(t)
	for d, ip := range map[string]string{"probe-corp.net": "127.0.0.1", "all-corp.net": "127.0.0.1", "down-corp.net": "127.0.0.2", "slow-corp.net": "127.0.0.3"} {
		dns.AddMX(d, 10, "mx."+d)
		dns.AddA("mx."+d, ip)
	}
	vars := map[string]string{"POSTLINE_DATA_DIR": t.TempDir(), "POSTLINE_DNS_SERVER": dns.Addr(), "POSTLINE_MX_PORT": fmt.Sprint(sink.Port()),
		"POSTLINE_VALIDATION_PROBE_TIMEOUT": "1s"}
	if code, _, errs := cliEnv(t, vars, "validate", "--check-mailbox", "ok@probe-corp.net"); code != 2 || !strings.Contains(errs, "--validation-smtp-probe") {
		t.Errorf("--check-mailbox without probing: exit %d %q", code, errs)
	}
	vars["POSTLINE_VALIDATION_SMTP_PROBE"], vars["POSTLINE_VALIDATION_HELO"], vars["POSTLINE_VALIDATION_PROBE_ALLOW_PRIVATE"] = "true", "probe.postline.test", "true"
	want := [][2]string{
		{"ok@probe-corp.net", `"deliverability":"deliverable","deliverability_reasons":[]`},
		{"gone@probe-corp.net", `"deliverability":"undeliverable","deliverability_reasons":["mailbox_not_found"]`},
		{"full@probe-corp.net", `"deliverability":"risky","deliverability_reasons":["mailbox_full"]`},
		{"grey@probe-corp.net", `"deliverability":"unknown","deliverability_reasons":["greylisted"]`},
		{"anyone@all-corp.net", `"deliverability":"risky","deliverability_reasons":["catch_all"]`},
		{"x@down-corp.net", `"deliverability":"unknown","deliverability_reasons":["smtp_unavailable"]`},
		{"x@slow-corp.net", `"deliverability":"unknown","deliverability_reasons":["smtp_unavailable"]`},
	}
	args := []string{"validate", "--check-mailbox", "--concurrency", "1"}
	for _, w := range want {
		args = append(args, w[0])
	}
	code, out, errs := cliEnv(t, vars, args...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != len(want) {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	for i, w := range want {
		if !strings.Contains(lines[i], w[0]) || !strings.Contains(lines[i], w[1]) {
			t.Errorf("%s: %s, want %s", w[0], lines[i], w[1])
		}
	}
	if code, _, errs := cliEnv(t, map[string]string{"POSTLINE_DATA_DIR": t.TempDir(), "POSTLINE_VALIDATION_SMTP_PROBE": "true"}, "validate", "x@probe-corp.net"); code != 2 || !strings.Contains(errs, "validation-helo") {
		t.Errorf("probing without a HELO name: exit %d %q", code, errs)
	}
}
