package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/delivery"
	"github.com/postline/postline/internal/dnstest"
	"github.com/postline/postline/internal/egress"
	"github.com/postline/postline/internal/store"
)

// runBinary runs the built binary with the environment given (and no
// POSTLINE_* from the test's own) and returns its exit status and output.
func runBinary(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	bin, err := buildBinary()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "POSTLINE_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

const shapingShowFile = `["default"]
connection_limit = 10
max_message_rate = "100/s"
data_timeout = "30s"

[provider."big"]
match = [{MXSuffix = ".big.example"}]
max_deliveries_per_connection = 20
provider_connection_limit = "local:5"

["big.example"]
idle_timeout = "30s"
enable_tls = "Required"

[["big.example".automation]]
regex = "421 4\\.7\\.28"
action = "Suspend"
duration = "2 hours"

["big.example".sources."ip-2"]
connection_limit = 2
`

// `postline shaping show` resolves the domain through --dns-server, reads
// the same shaping files serve would, and prints the effective settings.
func TestShapingShowThroughTheBinary(t *testing.T) {
	t.Parallel()
	dns := dnstest.New(t)
	for _, d := range []string{"big.example", "customer.example"} { // customer.example is hosted by big.example
		dns.AddMX(d, 10, "mx1.big.example")
		dns.AddMX(d, 20, "mx2.big.example")
	}
	dns.AddMX("gmail.example", 5, "gmail-smtp-in.l.google.com")
	dns.AddA("plain.example", "192.0.2.1") // no MX: the domain itself is its MX
	dir := t.TempDir()
	file := filepath.Join(dir, "shaping.toml")
	if err := os.WriteFile(file, []byte(shapingShowFile), 0o644); err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(dir, "data")
	env := []string{"POSTLINE_DATA_DIR=" + dataDir, "POSTLINE_DNS_SERVER=" + dns.Addr()}

	code, out, errs := runBinary(t, env, "shaping", "show", "Customer.Example", "--shaping-file", file)
	if code != 0 {
		t.Fatalf("shaping show: exit %d, %s", code, errs)
	}
	want := "# rules: " + file + "\n" +
		"# mx: mx1.big.example, mx2.big.example\n" +
		"site = (mx1|mx2).big.example\n" +
		"provider = big\n" +
		"mx_rollup = true\n" +
		"connection_limit = 10\n" +
		"max_message_rate = 100/s\n" +
		"max_deliveries_per_connection = 20\n" +
		"max_recipients_per_transaction = 50  # default\n" +
		"idle_timeout = 30s\n" +
		"enable_tls = Required\n" +
		"enable_mta_sts = true  # default\n" +
		"enable_dane = true  # default\n" +
		"consecutive_connection_failures_before_delay = 100  # default\n" +
		"provider_connection_limit = local:5\n" +
		"automation = Suspend for 2h when a reply matches /421 4\\.7\\.28/  # \"big.example\", " + file + ":15\n"
	if out != want {
		t.Errorf("shaping show customer.example printed\n%s\nwant\n%s", out, want)
	}
	if !strings.Contains(errs, "ignoring keys Postline does not implement") || !strings.Contains(errs, "default.data_timeout") {
		t.Errorf("stderr %q should warn once about data_timeout", errs)
	}
	if _, err := os.Stat(dataDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("shaping show touched the data directory (%v); it must open no database", err)
	}

	// The same files from the environment, comma-separated, and a source.
	empty := filepath.Join(dir, "empty.toml")
	os.WriteFile(empty, nil, 0o644)
	code, out, _ = runBinary(t, append(env, "POSTLINE_SHAPING_FILE="+empty+","+file), "shaping", "show", "customer.example", "--source", "ip-2")
	if code != 0 || !strings.Contains(out, "\nsource = ip-2\n") || !strings.Contains(out, "\nconnection_limit = 2\n") ||
		!strings.Contains(out, "# rules: "+empty+", "+file+"\n") {
		t.Errorf("env files and --source ip-2: exit %d\n%s", code, out)
	}

	// No file: the built-in rules; no MX: the domain is its own site.
	code, out, _ = runBinary(t, env, "shaping", "show", "gmail.example")
	if code != 0 || !strings.Contains(out, "# rules: built-in\n") || !strings.Contains(out, "\nprovider = google\n") ||
		!strings.Contains(out, "\nmax_deliveries_per_connection = 50\n") || !strings.Contains(out, "when a reply matches /\\b4\\.7\\.28\\b/") {
		t.Errorf("built-in rules for a Google-hosted domain: exit %d\n%s", code, out)
	}
	code, out, _ = runBinary(t, env, "shaping", "show", "plain.example")
	if code != 0 || !strings.Contains(out, "site = plain.example\nprovider = (none)\n") ||
		!strings.Contains(out, "\nconnection_limit = 4  # default\nmax_recipients_per_transaction = 50  # default\nidle_timeout = 30s  # default\nenable_tls = OpportunisticInsecure  # default\n") {
		t.Errorf("a domain without MX: exit %d\n%s", code, out)
	}

	// A bad file is refused with its line and key; an unknown domain too.
	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(bad, []byte("[\"default\"]\nconnection_limit = 10\nmax_message_rate = \"fast\"\n"), 0o644)
	code, _, errs = runBinary(t, env, "shaping", "show", "customer.example", "--shaping-file", bad)
	if code != 1 || !strings.Contains(errs, bad+":3: default.max_message_rate: want a rate") {
		t.Errorf("bad file: exit %d, stderr %q", code, errs)
	}
	code, _, errs = runBinary(t, env, "shaping", "show", "nowhere.example")
	if code != 1 || !strings.Contains(errs, "cannot resolve the MX hosts of nowhere.example") {
		t.Errorf("unknown domain: exit %d, stderr %q", code, errs)
	}
}

// `postline shaping show` with --egress-file adds, after the lines it
// always prints (unchanged), the egress pools that may carry the mail:
// each pool's sources with their weight, address, EHLO name, today's
// warm-up cap and the count the database holds for it today.
func TestShapingShowEgressThroughTheBinary(t *testing.T) {
	t.Parallel()
	dns := dnstest.New(t)
	dns.AddMX("customer.example", 10, "mx1.big.example")
	dir := t.TempDir()
	today := egress.Day(time.Now())
	file := filepath.Join(dir, "egress.toml")
	if err := os.WriteFile(file, []byte(fmt.Sprintf(`
[source."ip-1"]
source_address = "127.0.0.2"
ehlo_domain = "mta1.postline.test"
warmup = ["5/day", "10/day"]
warmup_start = %q
[source."ip-2"]
[source."ip-3"]
source_address = "127.0.0.3"
warmup = ["50/day"]
warmup_start = %q
[pool."main"]
entries = [{name = "ip-1", weight = 2}, {name = "ip-2"}]
[pool."later"]
entries = [{name = "ip-3"}]
`, today.Format(time.DateOnly), today.AddDate(0, 0, 1).Format(time.DateOnly))), 0o644); err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(dir, "data")
	env := []string{"POSTLINE_DATA_DIR=" + dataDir, "POSTLINE_DNS_SERVER=" + dns.Addr()}

	// Without a database the counts are unknown; the rest is printed.
	code, out, errs := runBinary(t, env, "shaping", "show", "customer.example", "--egress-file", file, "--pool", "main")
	if code != 0 || !strings.Contains(out, "egress_source = ip-1 weight=2 source_address=127.0.0.2 ehlo_domain=mta1.postline.test warmup_cap=5 warmup_used=unknown\n") ||
		!strings.Contains(errs, "warm-up counts unknown") {
		t.Errorf("without a database: exit %d\n%s\n%s", code, out, errs)
	}

	// The database serve shares, with 3 of ip-1's 5 used today.
	if code, _, errs := runBinary(t, env, "migrate"); code != 0 {
		t.Fatalf("migrate: exit %d %s", code, errs)
	}
	ctx := context.Background()
	db, err := store.Open(ctx, "sqlite:"+filepath.Join(dataDir, "postline.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.NewRateCounter(db).Incr(ctx, delivery.WarmupKey("ip-1"), today, 3, 48*time.Hour); err != nil {
		t.Fatal(err)
	}
	db.Close()

	code, plain, errs := runBinary(t, env, "shaping", "show", "customer.example")
	if code != 0 {
		t.Fatalf("shaping show: exit %d %s", code, errs)
	}
	code, out, errs = runBinary(t, env, "shaping", "show", "customer.example", "--egress-file", file)
	if code != 0 {
		t.Fatalf("shaping show --egress-file: exit %d %s", code, errs)
	}
	if egress.Day(time.Now()) != today {
		t.Skip("the UTC day changed during the test")
	}
	want := plain + "# egress: " + file + " (UTC day " + today.Format(time.DateOnly) + ")\n" +
		"egress_pool = later\n" +
		"egress_source = ip-3 weight=1 source_address=127.0.0.3 ehlo_domain=(default) warmup_cap=0 warmup_used=0  # warm-up starts " +
		today.AddDate(0, 0, 1).Format(time.DateOnly) + "\n" +
		"egress_pool = main\n" +
		"egress_source = ip-1 weight=2 source_address=127.0.0.2 ehlo_domain=mta1.postline.test warmup_cap=5 warmup_used=3\n" +
		"egress_source = ip-2 weight=1 source_address=(system) ehlo_domain=(default) warmup_cap=none\n"
	if out != want {
		t.Errorf("shaping show --egress-file printed\n%s\nwant\n%s", out, want)
	}

	code, _, errs = runBinary(t, env, "shaping", "show", "customer.example", "--egress-file", file, "--pool", "nope")
	if code != 2 || !strings.Contains(errs, `--pool: no egress pool named "nope"`) {
		t.Errorf("--pool nope: exit %d %q", code, errs)
	}
}
