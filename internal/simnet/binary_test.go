package simnet_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/postline/postline/internal/simnet"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/testutil"
)

var postline = &testutil.Binary{Pkg: "../../cmd/postline"}

func TestMain(m *testing.M) {
	code := m.Run()
	postline.Cleanup()
	os.Exit(code)
}

var buildBinary = postline.Build

// serve is `postline serve` delivering into a Net, with account alice and
// her direct-delivery domain shop.sender.test.
type serve struct {
	bin, addr, key string
	pid            int // the serve process's
	vars           map[string]string
	log            *bytes.Buffer
	mu             sync.Mutex // guards log
}

func (s *serve) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.Write(p)
}

func (s *serve) env() []string {
	env := os.Environ()
	for k, v := range s.vars {
		env = append(env, k+"="+v)
	}
	return env
}

func (s *serve) cli(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(s.bin, args...)
	cmd.Env = s.env()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("postline %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.String()
}

// startServe sets up the account and runs serve against n until the test
// ends.
func startServe(t *testing.T, n *simnet.Net) *serve {
	t.Helper()
	return startServeWith(t, n, nil)
}

// startServeWith is startServe with more of serve's environment.
func startServeWith(t *testing.T, n *simnet.Net, vars map[string]string) *serve {
	t.Helper()
	return startServeSetup(t, n, vars, nil)
}

// startServeSetup is startServeWith running setup (commands such as
// `postline domain update`) after the account exists and before serve
// starts.
func startServeSetup(t *testing.T, n *simnet.Net, vars map[string]string, setup func(s *serve)) *serve {
	t.Helper()
	bin, err := buildBinary()
	if err != nil {
		t.Fatal(err)
	}
	s := &serve{bin: bin, log: &bytes.Buffer{}, vars: n.ServeEnv()}
	s.vars["POSTLINE_DATA_DIR"] = t.TempDir()
	s.vars["POSTLINE_RETRY_SCHEDULE"] = "200ms"
	s.vars["POSTLINE_RATE_DOMAIN_PER_MINUTE"] = "100000"
	s.vars["POSTLINE_LOG_LEVEL"] = "warn"
	if testutil.PostgresURL() != "" {
		s.vars["POSTLINE_DATABASE_URL"] = testutil.DatabaseURL(t, store.Postgres)
	}
	for k, v := range vars {
		s.vars[k] = v
	}
	s.cli(t, "user", "create", "alice")
	s.cli(t, "domain", "add", "alice", "shop.sender.test", "--direct")
	s.cli(t, "domain", "verify", "shop.sender.test", "--force")
	s.key = strings.TrimSpace(s.cli(t, "key", "create", "alice"))
	if setup != nil {
		setup(s)
	}
	s.start(t)
	return s
}

// start runs one more `postline serve` process with s's environment, on
// its own address (s.addr becomes it), until the test ends.
func (s *serve) start(t *testing.T) {
	t.Helper()
	s.addr = testutil.FreeAddr(t)
	cmd := exec.Command(s.bin, "serve", "--addr", s.addr)
	cmd.Env = s.env()
	cmd.Stderr = s
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.pid = cmd.Process.Pid
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
		if t.Failed() {
			s.mu.Lock()
			t.Logf("serve's log:\n%s", s.log.String())
			s.mu.Unlock()
		}
	})
	for deadline := time.Now().Add(30 * time.Second); ; {
		resp, err := http.Get("http://" + s.addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		select {
		case <-done:
			t.Fatalf("serve exited before it was ready:\n%s", s.log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve not ready after 30 s: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// send queues one message to each of rcpts through the API.
func (s *serve) send(t *testing.T, rcpts []string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	mw.WriteField("from", "news@shop.sender.test")
	mw.WriteField("subject", "simnet")
	mw.WriteField("text", "hello")
	for _, r := range rcpts {
		mw.WriteField("to", r)
	}
	mw.Close()
	req, _ := http.NewRequest("POST", "http://"+s.addr+"/api/domains/shop.sender.test/message", &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.SetBasicAuth("alice", s.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 202 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("send: %s %s", resp.Status, b)
	}
}

// The real binary delivers 200 messages to 50 domains at 3 providers
// exactly once, through their limits, greylisting and STARTTLS. No shaping
// rule tells it these providers' limits, so it goes past them and recovers
// by retrying: the violations are logged, not asserted;
// TestBinaryKeepsToShapedLimits is the same traffic with a shaping file,
// and no violation. It runs with an empty shaping file, not the built-in
// rules: their automation answers simnet's "421 4.7.0 too many
// connections" with one message a minute to the site for an hour
// (TestBinaryAutomation* test automation).
func TestBinaryDeliversThroughProviders(t *testing.T) {
	t.Parallel()
	n := simnet.New(t, simnet.Config{Providers: []simnet.ProviderConfig{
		{Name: "gmail", Domains: 17, MaxConnections: 2, MessageRate: simnet.Rate{Count: 40, Per: time.Second}},
		// No connection limit here: without a shaping file Postline does
		// not know the provider's limit spans every domain's MX host.
		{Name: "outlook", Domains: 17, PerDomainMX: true, MaxMessagesPerConnection: 3},
		{Name: "yahoo", Domains: 16, TLS: simnet.TLSValid, Greylist: true, MaxMessagesPerConnection: 5},
	}})
	domains := n.Domains()
	if len(domains) != 50 {
		t.Fatalf("%d domains, want 50", len(domains))
	}
	s := startShaped(t, n, "# no rules: no limits, no automation\n")
	var rcpts []string
	for i := range 200 {
		rcpts = append(rcpts, fmt.Sprintf("user%d@%s", i, domains[i%len(domains)]))
	}
	for i := 0; i < len(rcpts); i += 50 {
		s.send(t, rcpts[i:i+50])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := n.WaitForMessages(ctx, len(rcpts)); err != nil {
		report(t, n)
		t.Fatal(err)
	}
	// A duplicate would come from a retry; give the retry schedule time.
	time.Sleep(time.Second)

	got := map[string]int{}
	for _, m := range n.Messages() {
		for _, r := range m.To {
			got[r]++
		}
		if p := n.ProviderOf(domainOf(m.To[0])); p == nil || p.Name() != m.Provider {
			t.Errorf("message to %v arrived at %s", m.To, m.Provider)
		}
		if m.Provider == "yahoo" && m.TLS == nil {
			t.Errorf("message to %v at a provider offering STARTTLS came in clear", m.To)
		}
	}
	for _, r := range rcpts {
		if got[r] != 1 {
			t.Errorf("%s received %d times, want once", r, got[r])
		}
	}
	if len(got) != len(rcpts) {
		t.Errorf("%d recipients received, want %d", len(got), len(rcpts))
	}

	report(t, n)
}

// The real binary, told the providers' limits in a shaping file, keeps to
// them: no provider sees more connections at once, messages in a second or
// messages on one connection from Postline's address than its limit, so
// it refuses nothing for a limit, and each of 300 messages to 50 domains
// arrives exactly once. Outlook's limit is per provider over one MX host
// per domain (provider_connection_limit); gmail's per site with a
// message rate; yahoo's per connection, with greylisting and STARTTLS.
func TestBinaryKeepsToShapedLimits(t *testing.T) {
	t.Parallel()
	n := simnet.New(t, simnet.Config{Providers: []simnet.ProviderConfig{
		{Name: "gmail", Domains: 17, MaxConnections: 2, MessageRate: simnet.Rate{Count: 40, Per: time.Second}},
		{Name: "outlook", Domains: 17, PerDomainMX: true, MaxConnections: 3, MaxMessagesPerConnection: 3},
		{Name: "yahoo", Domains: 16, TLS: simnet.TLSValid, Greylist: true, MaxMessagesPerConnection: 5},
	}})
	shaping := filepath.Join(t.TempDir(), "shaping.toml")
	if err := os.WriteFile(shaping, []byte(`
[provider."gmail"]
match = [{MXSuffix = ".gmail.simnet.test"}]
connection_limit = 2
max_message_rate = "40/s"

[provider."outlook"]
match = [{MXSuffix = ".outlook.simnet.test"}]
provider_connection_limit = 3
max_deliveries_per_connection = 3

[provider."yahoo"]
match = [{MXSuffix = ".yahoo.simnet.test"}]
max_deliveries_per_connection = 5
`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServeWith(t, n, map[string]string{"POSTLINE_SHAPING_FILE": shaping})
	domains := n.Domains()
	var rcpts []string
	for i := range 300 {
		rcpts = append(rcpts, fmt.Sprintf("user%d@%s", i, domains[i%len(domains)]))
	}
	for i := 0; i < len(rcpts); i += 50 {
		s.send(t, rcpts[i:i+50])
	}
	waitAll(t, n, rcpts)
	report(t, n)
	n.CheckNoViolations(t)
	for _, r := range n.Refusals() {
		if r.Cause != simnet.CauseGreylist {
			t.Errorf("refused for a limit: %+v", r)
		}
	}
}

// report logs what each provider saw from 127.0.0.1.
func report(t *testing.T, n *simnet.Net) {
	local := netip.MustParseAddr("127.0.0.1")
	for _, p := range n.Providers() {
		st := p.Stats(local)
		t.Logf("%s: %d messages, %d connections, at most %d at once, %d within %v, %d on one connection; violations %+v",
			p.Name(), st.Messages, st.Connections, st.MaxConcurrent, st.MaxRate, p.Config().MessageRate.Per,
			st.MaxPerConnection, st.Violations)
	}
	v := n.Violations()
	causes := map[simnet.Cause]int{}
	for _, r := range n.Refusals() {
		causes[r.Cause]++
	}
	t.Logf("%d limit violations; refusals by cause %v", len(v), causes)
	for _, x := range v[:min(len(v), 5)] {
		t.Logf("  %v", x)
	}
}

func domainOf(addr string) string { return addr[strings.LastIndexByte(addr, '@')+1:] }
