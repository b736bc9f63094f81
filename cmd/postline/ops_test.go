package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/postline/postline/internal/app"
	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/dnstest"
	"github.com/postline/postline/internal/secret"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/testutil"
)

// Every command answers --help with exit 0 and a usage line naming its
// positional arguments; a leaf lists only its own flags, in under 40 lines;
// the server settings are listed once, by `help settings`.
func TestHelpOfEveryCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	settingLine := regexp.MustCompile(`(?m)^  --(addr|data-dir|database-url|dns-server|secret-key)\b`)
	var walk func(c *cmd, names []string)
	walk = func(c *cmd, names []string) {
		args := append(append([]string{}, names...), "--help")
		code, out, errs := cli(t, dir, args...)
		if code != 0 || errs != "" {
			t.Errorf("postline %s: exit %d, stderr %q; want 0 and the help on stdout", strings.Join(args, " "), code, errs)
		}
		if c.setup == nil {
			want := "Usage: postline " + strings.TrimSpace(strings.Join(names, " ")+" COMMAND [ARGS] [flags]")
			if len(names) == 0 {
				want = "Usage: postline COMMAND [ARGS] [flags]"
			}
			if !strings.HasPrefix(out, want) {
				t.Errorf("postline %s: help starts %q, want %q", strings.Join(args, " "), firstLine(out), want)
			}
			for _, s := range c.subs {
				if !strings.Contains(out, "  "+s.name) {
					t.Errorf("postline %s: help does not list %s", strings.Join(args, " "), s.name)
				}
				walk(s, append(names, s.name))
			}
			return
		}
		want := "Usage: postline " + strings.Join(names, " ")
		if c.args != "" {
			want += " " + c.args
		}
		want += " [flags]\n"
		if !strings.HasPrefix(out, want) {
			t.Errorf("postline %s: usage line %q, want %q", strings.Join(args, " "), firstLine(out), strings.TrimSpace(want))
		}
		if n := strings.Count(out, "\n"); n >= 40 {
			t.Errorf("postline %s: help is %d lines, want under 40", strings.Join(args, " "), n)
		}
		if settingLine.MatchString(out) {
			t.Errorf("postline %s: help lists server settings:\n%s", strings.Join(args, " "), out)
		}
		if _, help, _ := cli(t, dir, append([]string{"help"}, names...)...); help != out {
			t.Errorf("postline help %s differs from postline %s --help", strings.Join(names, " "), strings.Join(names, " "))
		}
	}
	walk(commandTree(), nil)
	if code, out, _ := cli(t, dir, "domain", "add", "-h"); code != 0 || !strings.HasPrefix(out, "Usage: postline domain add LOGIN DOMAIN [flags]") {
		t.Errorf("domain add -h: exit %d, %q", code, firstLine(out))
	}
	code, out, _ := cli(t, dir, "help", "settings")
	if code != 0 {
		t.Fatalf("help settings: exit %d", code)
	}
	for _, s := range []string{"--dns-server HOST:PORT", "[POSTLINE_DNS_SERVER]", "--data-dir", "[POSTLINE_DATA_DIR]", "[POSTLINE_SECRET_KEY]", "[POSTLINE_RATE_VALIDATION_PER_HOUR]"} {
		if !strings.Contains(out, s) {
			t.Errorf("help settings lacks %q", s)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("help created %v in the data directory; it must open no database", entries)
	}
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }

// Flag mistakes are one line on stderr naming the flag and what it takes,
// with exit 2 and nothing else printed.
func TestFlagErrorsAreOneLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"domain", "add", "alice", "x.example", "--smtp-host", "h", "--smtp-tls", "ssl"},
			`postline domain add: --smtp-tls: want none, starttls or tls, got "ssl"`},
		{[]string{"domain", "add", "alice", "x.example", "--smtp-port", "abc"}, `postline domain add: --smtp-port: not a valid value, got "abc"`},
		{[]string{"domain", "add", "alice", "x.example", "--bogus"}, "postline domain add: unknown flag --bogus (see postline domain add --help)"},
		{[]string{"domain", "add", "alice"}, "postline domain add: want LOGIN DOMAIN, got 1 argument(s) (see postline domain add --help)"},
		{[]string{"domain", "add", "alice", "x.example", "--direct=maybe"}, `postline domain add: --direct: want true or false, got "maybe"`},
		{[]string{"user", "list", "--rate-domain-per-minute", "0"}, "postline user list: config: rate-domain-per-minute: must be at least 1, got 0"},
		{[]string{"key", "create", "alice", "--name"}, "postline key create: --name needs a value"},
		{[]string{"user", "create", "Bad Login!"}, "postline user create: LOGIN: login may contain only a-z, 0-9, '.', '_' and '-'"},
		{[]string{"version", "extra"}, `postline version: takes no arguments, got "extra" (see postline version --help)`},
	}
	for _, c := range cases {
		code, out, errs := cli(t, dir, c.args...)
		if code != 2 || out != "" || errs != c.want+"\n" {
			t.Errorf("postline %s: exit %d, stdout %q, stderr %q; want exit 2 and the one line %q",
				strings.Join(c.args, " "), code, out, errs, c.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("refused commands created %v; a mistake must not make a database", entries)
	}
}

// Commands never create a database by accident: run from the wrong place
// they say which database they looked for, by its absolute path.
func TestDataLocation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rel, err := filepath.Rel(mustGetwd(t), filepath.Join(dir, "data"))
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"POSTLINE_DATA_DIR": rel}
	abs := filepath.Join(dir, "data", "postline.db")
	for _, args := range [][]string{{"user", "list"}, {"key", "create", "alice"}, {"domain", "show", "x.example"}, {"cache", "purge"}} {
		code, _, errs := cliEnv(t, vars, args...)
		if code != 1 || !strings.Contains(errs, "no database at "+abs) || !strings.Contains(errs, "--data-dir") {
			t.Errorf("postline %s without a database: exit %d, %q; want 1 naming %s and --data-dir", strings.Join(args, " "), code, errs, abs)
		}
	}
	for _, args := range [][]string{{"version"}, {"validate", "--offline", "a@b.example"}, {"help"}} {
		if code, _, errs := cliEnv(t, vars, args...); code != 0 {
			t.Errorf("postline %s: exit %d %q", strings.Join(args, " "), code, errs)
		}
	}
	// The default build signs with Go's crypto/rsa, and says so.
	if _, out, _ := cliEnv(t, vars, "version"); !strings.Contains(out, "(RSA signing: go)") {
		t.Errorf("postline version: %q; want it to say (RSA signing: go)", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "data")); !os.IsNotExist(err) {
		t.Fatalf("a command made the data directory (%v); none of them needs it", err)
	}
	// An empty database (migrated, no accounts) says so on "not found".
	if code, out, errs := cliEnv(t, vars, "migrate"); code != 0 || !strings.Contains(out, abs) {
		t.Fatalf("migrate: exit %d %q %q; want it to name %s", code, out, errs, abs)
	}
	code, _, errs := cliEnv(t, vars, "key", "create", "alice")
	if code != 1 || !strings.Contains(errs, `account "alice" not found`) || !strings.Contains(errs, "the database at "+abs+" has no accounts") {
		t.Errorf("key create in an empty database: exit %d %q; want the database named", code, errs)
	}
}

func mustGetwd(t *testing.T) string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}

func TestDomainUpdateAndUserEnable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	must := mustCLI(t, dir)
	must("user", "create", "alice")
	key := strings.TrimSpace(must("key", "create", "alice"))
	must("domain", "add", "alice", "shop.example", "--smtp-host", "relay.example.net", "--smtp-user", "u", "--smtp-password", "old")
	before := must("domain", "show", "shop.example")
	dkim := regexp.MustCompile(`dkim\s+TXT\s+\S+\s+(\S+)`).FindStringSubmatch(before)
	if dkim == nil {
		t.Fatalf("no DKIM record in %q", before)
	}
	egressFile := filepath.Join(dir, "egress.toml")
	if err := os.WriteFile(egressFile, []byte("[source.a]\n[pool.main]\nentries = [{name = \"a\"}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"domain", "update", "shop.example", "--smtp-password", "new", "--smtp-user", "u2"}, 0, "shop.example now delivers relay relay.example.net:587 (starttls) as u2"},
		{[]string{"domain", "update", "shop.example", "--smtp-port", "2525", "--smtp-tls", "tls"}, 0, "relay relay.example.net:2525 (tls) as u2"},
		{[]string{"domain", "update", "shop.example"}, 2, "nothing to change"},
		{[]string{"domain", "update", "shop.example", "--smtp-tls", "ssl"}, 2, `--smtp-tls: want none, starttls or tls, got "ssl"`},
		{[]string{"domain", "update", "shop.example", "--direct", "--smtp-host", "x"}, 2, "either --direct or the --smtp-* flags"},
		{[]string{"domain", "update", "shop.example", "--smtp-user", "only"}, 2, "--smtp-password: user and password go together"},
		{[]string{"domain", "update", "shop.example", "--direct"}, 0, "shop.example now delivers direct to MX"},
		{[]string{"domain", "update", "shop.example", "--pool", "main"}, 2, `--pool: no egress pool named "main"`},
		{[]string{"domain", "update", "shop.example", "--egress-file", egressFile, "--pool", "main"}, 0, "direct to MX through egress pool main"},
		{[]string{"domain", "update", "shop.example", "--pool", ""}, 0, "shop.example now delivers direct to MX\n"},
		// The account's pool: the default of its domains that name none.
		{[]string{"user", "update", "alice", "--pool", "main"}, 2, `--pool: no egress pool named "main"`},
		{[]string{"user", "update", "alice"}, 2, "nothing to change: give --pool"},
		{[]string{"user", "update", "alice", "--egress-file", egressFile, "--pool", "main"}, 0, "account alice's domains without a pool of their own now send through egress pool main"},
		{[]string{"user", "update", "nobody", "--egress-file", egressFile, "--pool", "main"}, 1, `account "nobody" not found`},
		{[]string{"domain", "show", "shop.example"}, 0, "direct to MX through egress pool main (the account's)"},
		{[]string{"user", "list"}, 0, "  main\n"},
		{[]string{"user", "update", "alice", "--pool", ""}, 0, "account alice has no egress pool"},
		{[]string{"domain", "show", "shop.example"}, 0, "delivery:  direct to MX\n"},
		{[]string{"domain", "update", "shop.example", "--smtp-port", "25"}, 2, "--smtp-host is required to switch to relay delivery"},
		{[]string{"domain", "update", "nope.example", "--direct"}, 1, "domain nope.example not found"},
		{[]string{"user", "disable", "alice"}, 0, "disabled account alice"},
		{[]string{"user", "list"}, 0, "disabled"},
		{[]string{"user", "enable", "alice"}, 0, "enabled account alice"},
		{[]string{"user", "enable", "nobody"}, 1, `account "nobody" not found`},
	}
	for _, s := range steps {
		code, out, errs := cli(t, dir, s.args...)
		text := out
		if s.code != 0 {
			text = errs
		}
		if code != s.code || !strings.Contains(text, s.want) {
			t.Errorf("postline %s: exit %d, stdout %q, stderr %q; want exit %d with %q", strings.Join(s.args, " "), code, out, errs, s.code, s.want)
		}
	}
	if after := must("domain", "show", "shop.example"); !strings.Contains(after, dkim[1]) {
		t.Error("domain update changed the DKIM key")
	}
	if out := must("user", "list"); !strings.Contains(out, "active") {
		t.Errorf("after enable: %q", out)
	}
	// The key works again after enable.
	cfg := config.Default()
	cfg.DataDir = dir
	a, err := app.Open(context.Background(), cfg, nil, app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := a.Accounts.Authenticate(context.Background(), "alice", key); err != nil {
		t.Fatalf("alice's key after user enable: %v", err)
	}
}

// The trap, end to end through the CLI on both stores: a command
// run with another secret key (or without the server's) is refused with a
// message naming where each key came from, and changes nothing.
func TestSecretKeyMismatchAndRotate(t *testing.T) {
	t.Parallel()
	for _, d := range testutil.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			keyA := secret.Encode(secret.NewKey())
			base := map[string]string{"POSTLINE_DATA_DIR": t.TempDir(), "POSTLINE_DATABASE_URL": testutil.DatabaseURL(t, d)}
			with := func(key string) map[string]string {
				m := map[string]string{"POSTLINE_SECRET_KEY": key}
				for k, v := range base {
					m[k] = v
				}
				return m
			}
			for _, args := range [][]string{{"user", "create", "alice"}, {"domain", "add", "alice", "a.example", "--direct"}} {
				if code, _, errs := cliEnv(t, with(keyA), args...); code != 0 {
					t.Fatalf("%v: %s", args, errs)
				}
			}
			_, signingKey, _ := cliEnv(t, with(keyA), "webhook", "signing-key", "alice")
			code, _, errs := cliEnv(t, with(secret.Encode(secret.NewKey())), "domain", "add", "alice", "b.example", "--direct")
			if code != 1 || !strings.Contains(errs, "wrong secret key") || !strings.Contains(errs, "the key from POSTLINE_SECRET_KEY has fingerprint") ||
				!strings.Contains(errs, "recorded by `postline user create`") || !strings.Contains(errs, "Nothing was changed") {
				t.Fatalf("domain add with another key: exit %d %q", code, errs)
			}
			code, _, errs = cliEnv(t, base, "domain", "list", "alice")
			if code != 1 || !strings.Contains(errs, "no --secret-key, no POSTLINE_SECRET_KEY and no "+filepath.Join(base["POSTLINE_DATA_DIR"], "secret.key")) {
				t.Fatalf("domain list without a key: exit %d %q", code, errs)
			}
			if _, out, _ := cliEnv(t, with(keyA), "domain", "list", "alice"); strings.Contains(out, "b.example") || !strings.Contains(out, "a.example") {
				t.Fatalf("the refused add changed the domains: %q", out)
			}

			code, out, errs := cliEnv(t, with(keyA), "secret", "rotate")
			newKey := regexp.MustCompile(`(?m)^([A-Za-z0-9+/]{43}=)$`).FindStringSubmatch(out)
			if code != 0 || newKey == nil || !strings.Contains(out, "re-sealed 2 values") || !strings.Contains(out, "where POSTLINE_SECRET_KEY is set") {
				t.Fatalf("secret rotate: exit %d %q %q", code, out, errs)
			}
			if code, _, _ := cliEnv(t, with(keyA), "domain", "list", "alice"); code != 1 {
				t.Error("the old key still works after rotation")
			}
			if code, out, errs := cliEnv(t, with(newKey[1]), "domain", "show", "a.example"); code != 0 || !strings.Contains(out, "a.example") {
				t.Errorf("the new key after rotation: exit %d %q %q", code, out, errs)
			}
			if code, out, errs := cliEnv(t, with(newKey[1]), "webhook", "signing-key", "alice"); code != 0 || out != signingKey || len(out) < 33 {
				t.Errorf("the webhook signing key after rotation: exit %d %q %q; want %q, unchanged", code, out, errs, signingKey)
			}
		})
	}
}

// With the key in the data directory (the SQLite default), rotation
// replaces the file.
func TestSecretRotateKeyFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, args := range [][]string{{"user", "create", "alice"}, {"domain", "add", "alice", "a.example", "--smtp-host", "r.example.net", "--smtp-user", "u", "--smtp-password", "pw"}} {
		if code, _, errs := cli(t, dir, args...); code != 0 {
			t.Fatalf("%v: %s", args, errs)
		}
	}
	before, _ := os.ReadFile(filepath.Join(dir, "secret.key"))
	code, out, errs := cli(t, dir, "secret", "rotate")
	if code != 0 || !strings.Contains(out, "re-sealed 2 values") || !strings.Contains(out, filepath.Join(dir, "secret.key")+" now holds the new key") {
		t.Fatalf("secret rotate: exit %d %q %q", code, out, errs)
	}
	after, _ := os.ReadFile(filepath.Join(dir, "secret.key"))
	if string(before) == string(after) || strings.Contains(out, strings.TrimSpace(string(after))) {
		t.Fatal("the key file was not replaced, or the new key was printed although it is in the file")
	}
	if _, err := os.Stat(filepath.Join(dir, "secret.key.new")); !os.IsNotExist(err) {
		t.Error("secret.key.new left behind")
	}
	if code, out, _ := cli(t, dir, "domain", "show", "a.example"); code != 0 || !strings.Contains(out, "as u") {
		t.Fatalf("domain show after rotation: exit %d %q", code, out)
	}
	if code, _, errs := cli(t, dir, "secret", "rotate", "--new-key", "short"); code != 2 || !strings.Contains(errs, "--new-key") {
		t.Errorf("rotate --new-key short: exit %d %q", code, errs)
	}
}

// A cached NXDOMAIN from a resolver outage can be dropped: `validate
// --refresh` replaces it, `cache purge` removes it by address, domain or
// all.
func TestValidateRefreshAndCachePurge(t *testing.T) {
	t.Parallel()
	dns := dnstest.New(t)
	dns.SetNegativeTTL(0)
	vars := map[string]string{"POSTLINE_DATA_DIR": t.TempDir(), "POSTLINE_DNS_SERVER": dns.Addr()}
	if code, _, errs := cliEnv(t, vars, "migrate"); code != 0 {
		t.Fatal(errs)
	}
	validate := func(args ...string) string {
		t.Helper()
		code, out, errs := cliEnv(t, vars, append([]string{"validate"}, args...)...)
		if code != 0 {
			t.Fatalf("validate %v: exit %d %q", args, code, errs)
		}
		return out
	}
	if out := validate("jane@late-corp.net"); !strings.Contains(out, `"reason":"nxdomain"`) {
		t.Fatalf("before the domain exists: %s", out)
	}
	dns.AddMX("late-corp.net", 10, "mx.late-corp.net")
	if out := validate("jane@late-corp.net"); !strings.Contains(out, `"cached":true`) || !strings.Contains(out, `"is_valid":false`) {
		t.Fatalf("the NXDOMAIN should still be cached: %s", out)
	}
	if out := validate("--refresh", "jane@late-corp.net"); !strings.Contains(out, `"is_valid":true`) || !strings.Contains(out, `"cached":false`) {
		t.Fatalf("--refresh: %s", out)
	}
	if out := validate("jane@late-corp.net"); !strings.Contains(out, `"is_valid":true`) || !strings.Contains(out, `"cached":true`) {
		t.Fatalf("after --refresh the new answer is cached: %s", out)
	}
	validate("--strict", "jane@late-corp.net")
	validate("bob@late-corp.net", "ann@other-corp.net")
	purge := func(want string, args ...string) {
		t.Helper()
		code, out, errs := cliEnv(t, vars, append([]string{"cache", "purge"}, args...)...)
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("cache purge %v: exit %d %q %q; want %q", args, code, out, errs, want)
		}
	}
	purge("2 removed", "Jane@Late-Corp.net") // standard and strict
	purge("0 removed", "jane@late-corp.net")
	purge("1 removed", "late-corp.net") // bob
	purge("1 removed")                  // everything left: ann's NXDOMAIN
	if code, _, errs := cliEnv(t, vars, "cache", "purge", "not an@@address"); code != 2 || !strings.Contains(errs, "ADDRESS:") {
		t.Errorf("purge of a bad address: exit %d %q; want 2 naming ADDRESS", code, errs)
	}
}

// `postline version` reports the VCS revision of the checkout it was built
// from (when built with VCS stamping, as `go build` does in a git
// checkout by default).
func TestVersionFromBuildInfo(t *testing.T) {
	t.Parallel()
	rev, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skip("not a git checkout: no revision to compare with")
	}
	bin := filepath.Join(t.TempDir(), "postline")
	if out, err := exec.Command("go", "build", "-buildvcs=true", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil || !strings.HasPrefix(string(out), "postline ") || !strings.Contains(string(out), "revision "+strings.TrimSpace(string(rev))) {
		t.Fatalf("version: %q, %v; want the revision %s", out, err, rev)
	}
}

// TestDomainClaimedByTwoAccounts: the operator's commands name a domain
// that two accounts claim with --account; without it they refuse and list
// the claiming logins (the operator may see them).
func TestDomainClaimedByTwoAccounts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	must := mustCLI(t, dir)
	must("user", "create", "alice")
	must("user", "create", "bob")
	must("domain", "add", "alice", "shared.example", "--direct")
	must("domain", "add", "bob", "shared.example", "--direct")
	for _, args := range [][]string{
		{"domain", "verify", "shared.example", "--force"},
		{"domain", "show", "shared.example"},
		{"suppression", "add", "shared.example", "x@y.example", "--type", "bounce"},
	} {
		code, _, errs := cli(t, dir, args...)
		if code == 0 || !strings.Contains(errs, "claimed by several accounts (alice, bob)") || !strings.Contains(errs, "--account LOGIN") {
			t.Errorf("postline %s: exit %d %q, want a refusal listing alice, bob and naming --account", strings.Join(args, " "), code, errs)
		}
	}
	if out := must("domain", "verify", "shared.example", "--force", "--account", "bob"); !strings.Contains(out, "verified") {
		t.Errorf("verify --account bob: %q", out)
	}
	// Bob owns it now; alice's claim ended, so the name means bob's domain.
	if out := must("domain", "show", "shared.example"); !strings.Contains(out, "account:   bob") || !strings.Contains(out, "claim:     verified") {
		t.Errorf("show after bob verified: %q", out)
	}
	if out := must("domain", "show", "shared.example", "--account", "alice"); !strings.Contains(out, "claim:     ended") {
		t.Errorf("show --account alice: %q, want her claim shown as ended", out)
	}
	code, _, errs := cli(t, dir, "domain", "verify", "shared.example", "--force", "--account", "alice")
	if code == 0 || !strings.Contains(errs, "has ended") {
		t.Errorf("verify alice's ended claim: exit %d %q", code, errs)
	}
	code, _, errs = cli(t, dir, "domain", "show", "shared.example", "--account", "carol")
	if code == 0 || !strings.Contains(errs, "account carol has no domain shared.example") {
		t.Errorf("show --account carol: exit %d %q", code, errs)
	}
}

// TestBackupCopiesTheDatabase: `postline backup` copies the database (one
// read transaction, so serve may run meanwhile); the copy opens and holds what was there.
func TestBackupCopiesTheDatabase(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	must := mustCLI(t, dir)
	must("user", "create", "alice")
	must("domain", "add", "alice", "shop.example", "--direct")
	must("suppression", "add", "shop.example", "gone@x.example", "--type", "bounce")
	out := must("backup", filepath.Join(dir, "copy.db"))
	if !strings.Contains(out, "backed up") {
		t.Fatalf("backup: %q", out)
	}
	if code, _, errs := cli(t, dir, "backup", filepath.Join(dir, "copy.db")); code == 0 || !strings.Contains(errs, "exists") {
		t.Errorf("backup over an existing file: exit %d %q", code, errs)
	}
	// The copy is a working database: the commands read it.
	copyURL := "sqlite:" + filepath.Join(dir, "copy.db")
	if out := must("suppression", "list", "shop.example", "--type", "bounce", "--database-url", copyURL); !strings.Contains(out, "gone@x.example") {
		t.Errorf("the copy lacks the suppression: %q", out)
	}
}

// TestStoreCopyCommand: `postline store copy --to` copies the data
// directory's SQLite database into PostgreSQL and prints the row counts
// of both sides; it refuses a target that is not PostgreSQL, and a target
// that already has rows. The account's webhook signing key comes along.
func TestStoreCopyCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cli(t, dir, "user", "create", "alice")
	cli(t, dir, "domain", "add", "alice", "shop.example", "--direct")
	egressFile := filepath.Join(dir, "egress.toml")
	if err := os.WriteFile(egressFile, []byte("[source.a]\n[pool.main]\nentries = [{name = \"a\"}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := cli(t, dir, "user", "update", "alice", "--egress-file", egressFile, "--pool", "main"); code != 0 {
		t.Fatalf("user update --pool: exit %d %q", code, errs)
	}
	_, signingKey, _ := cli(t, dir, "webhook", "signing-key", "alice")
	if code, _, errs := cli(t, dir, "store", "copy", "--to", "mysql://x"); code != 2 || !strings.Contains(errs, "--to must be a postgres:// URL") {
		t.Errorf("store copy --to mysql: exit %d %q", code, errs)
	}
	pg := testutil.DatabaseURL(t, store.Postgres) // skips without PostgreSQL
	code, out, errs := cli(t, dir, "store", "copy", "--to", pg)
	if code != 0 || !strings.Contains(out, "copied") || !regexp.MustCompile(`(?m)^domains\s+1\s+1$`).MatchString(out) {
		t.Fatalf("store copy: exit %d\n%s\n%s", code, out, errs)
	}
	if code, _, errs := cli(t, dir, "store", "copy", "--to", pg); code == 0 || !strings.Contains(errs, "not empty") {
		t.Errorf("a second copy into the same database: exit %d %q", code, errs)
	}
	if code, out, errs := cli(t, dir, "domain", "show", "shop.example", "--database-url", pg); code != 0 || !strings.Contains(out, "account:   alice") ||
		!strings.Contains(out, "through egress pool main (the account's)") {
		t.Errorf("the copy read from PostgreSQL (the account's pool carried): exit %d %q %q", code, out, errs)
	}
	if code, out, errs := cli(t, dir, "webhook", "signing-key", "alice", "--database-url", pg); code != 0 || out != signingKey || len(out) < 33 {
		t.Errorf("the signing key read from the copy: exit %d %q %q; want %q", code, out, errs, signingKey)
	}
}

// mustCLI runs commands in dir that must succeed, returning their stdout.
func mustCLI(t *testing.T, dir string) func(args ...string) string {
	return func(args ...string) string {
		t.Helper()
		code, out, errs := cli(t, dir, args...)
		if code != 0 {
			t.Fatalf("postline %s: exit %d %q", strings.Join(args, " "), code, errs)
		}
		return out
	}
}
