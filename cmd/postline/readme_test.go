package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/postline/postline/internal/dnstest"
	"github.com/postline/postline/internal/testutil"
)

// readmeBlock is a ```sh block of the README with the marker comment on
// the line before it: <!-- readme: run --> or <!-- readme: skip: WHY -->.
type readmeBlock struct {
	line int // of the opening fence
	run  bool
	why  string
	code string
}

var readmeMarker = regexp.MustCompile(`^<!-- readme: (run|skip: (.+)) -->$`)

// readmeBlocks returns every sh block of the README; an unmarked one is an
// error, so a new block is either run here or says why it cannot be.
func readmeBlocks(path string) ([]readmeBlock, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var (
		blocks []readmeBlock
		prev   string
		cur    *readmeBlock
		n      int
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		n++
		line := sc.Text()
		switch {
		case cur != nil && line == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.code += line + "\n"
		case line == "```sh":
			m := readmeMarker.FindStringSubmatch(prev)
			if m == nil {
				return nil, fmt.Errorf("README.md:%d: a sh block without <!-- readme: run --> or <!-- readme: skip: WHY --> on the line before", n)
			}
			cur = &readmeBlock{line: n, run: m[1] == "run", why: m[2]}
		}
		prev = line
	}
	return blocks, sc.Err()
}

// TestREADME runs the README's marked shell blocks, in order, in one bash
// session against the built binary, as a newcomer would type them: with a
// local DNS server for every lookup and the README's own SMTP sink. It
// substitutes free ports for the README's, the built binary for `go
// build`, and a smaller count for the million-entry seed.
func TestREADME(t *testing.T) {
	t.Parallel()
	if testutil.PostgresURL() != "" {
		t.Skip("runs once, in the SQLite run of the suite")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed; the README's examples use it")
	}
	blocks, err := readmeBlocks("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	bin, err := buildBinary()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Link(bin, filepath.Join(dir, "postline")); err != nil {
		if err := copyFile(bin, filepath.Join(dir, "postline")); err != nil {
			t.Fatal(err)
		}
	}
	api, sink := testutil.FreeAddr(t), testutil.FreeAddr(t)
	_, sinkPort, _ := strings.Cut(sink, ":")
	subst := strings.NewReplacer(
		"go build -o postline ./cmd/postline", ": built by the test",
		"go run ./cmd/postline", "./postline",
		"127.0.0.1:8025", api,
		"127.0.0.1:2525", sink,
		"--smtp-port 2525", "--smtp-port "+sinkPort,
		"--count 1000000", "--count 2000",
	)
	var script strings.Builder
	script.WriteString("set -euo pipefail\ntrap 'kill $(jobs -p) 2>/dev/null; wait' EXIT\n")
	ran := 0
	for _, b := range blocks {
		if !b.run {
			t.Logf("README.md:%d skipped: %s", b.line, b.why)
			continue
		}
		ran++
		fmt.Fprintf(&script, "echo '### README.md:%d'\n%s", b.line, subst.Replace(b.code))
	}
	if ran < 8 {
		t.Fatalf("only %d blocks marked to run: the tour is not being checked", ran)
	}
	dns := dnstest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	cmd.Dir = dir
	// serve listens where the substituted curl lines look for it.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "LANG=C.UTF-8", "POSTLINE_DNS_SERVER=" + dns.Addr(), "POSTLINE_ADDR=" + api}
	// bash and the README's background processes share a process group,
	// so a timeout or a failure stops them all, not bash alone.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	t.Cleanup(func() {
		if cmd.Process != nil {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	})
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the README's blocks failed (%v); output:\n%s", err, out)
	}
	text := string(out)
	if testing.Verbose() {
		t.Logf("output:\n%s", text)
	}
	for _, want := range []string{
		`Created account "admin"`,                    // serve's first start
		`"message":"Email queued for 1 recipient(s)`, // the send
		`"event_type":"delivered"`,                   // the log after it
		"marked verified without DNS checks",
		`"is_valid":false`, // jane@gmial.com: no such domain in the test's DNS
		"recorded 2000 log entries",
		"removed suppression 4",
		"purged cached validation results for gmail.com: 1 removed",
		`"message":"Route created."`, "Route has been created", "match_recipient(\"^support-(?P<ticket>\\d+)@example\\.com$\")  forward(",
		"example.com receives mail (routes decide what becomes of it)", `"inbound":{"enabled":true,"receiving":true,"mx_host":null}`,
		`{"count":0,"data":[],"limit":20,"offset":0,"success":true}`, "example.com has no stored messages",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the README's output lacks %q; output:\n%s", want, text)
		}
	}
	eml, err := os.ReadFile(filepath.Join(dir, "received", "1.eml"))
	if err != nil || !strings.Contains(string(eml), "DKIM-Signature:") || !strings.Contains(string(eml), "invoice.txt") {
		t.Errorf("received/1.eml: %v; want the tour's message, DKIM-signed, with invoice.txt attached:\n%.2000s", err, eml)
	}
	if n := dns.Queries(); n == 0 {
		t.Error("no DNS query reached the test's DNS server: lookups went elsewhere")
	}
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o755)
}
