package main

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/testutil"
)

// `postline queue suspend` beside a running serve holds the domain's
// deliveries (nothing reaches the sink, `queue list` shows them pending
// and the suspension); the suspension survives kill -9 and a new serve;
// `queue resume` lets them all through.
func TestQueueSuspendListResumeBinary(t *testing.T) {
	t.Parallel()
	rig := newDeliveryRig(t, map[string]string{"POSTLINE_DATA_DIR": t.TempDir()})
	srv := startServe(t, rig.env())
	if code, out, errs := cliEnv(t, rig.vars, "queue", "suspend", "--domain", "shop.example.com", "--reason", "complaints"); code != 0 ||
		!strings.Contains(out, "suspended domain shop.example.com until resumed: complaints") {
		t.Fatalf("queue suspend: %d %q %s", code, out, errs)
	}
	rig.enqueue(t, srv, 0, 5, 5)
	time.Sleep(1500 * time.Millisecond)
	if u, _ := rig.received(t); u != 0 {
		t.Fatalf("%d messages of a suspended domain were delivered", u)
	}
	wantList := func(when string) {
		t.Helper()
		code, out, errs := cliEnv(t, rig.vars, "queue", "list", "--by", "domain")
		if code != 0 || !strings.Contains(out, "shop.example.com  5        0         0        until resumed: complaints") ||
			!strings.Contains(out, "domain  shop.example.com  resumed  cli  complaints") {
			t.Fatalf("queue list %s: %d\n%s%s", when, code, out, errs)
		}
	}
	wantList("while suspended")

	srv.cmd.Process.Signal(syscall.SIGKILL)
	<-srv.done
	startServe(t, rig.env())
	time.Sleep(1500 * time.Millisecond)
	if u, _ := rig.received(t); u != 0 {
		t.Fatalf("%d messages delivered after a restart; the suspension must survive it", u)
	}
	wantList("after the restart")

	resumed := time.Now()
	if code, out, errs := cliEnv(t, rig.vars, "queue", "resume", "--domain", "shop.example.com"); code != 0 {
		t.Fatalf("queue resume: %d %s %s", code, out, errs)
	}
	if u, _ := rig.waitUnique(t, 5, 15*time.Second); u != 5 {
		t.Fatalf("%d of 5 delivered after the resume", u)
	}
	if took := time.Since(resumed); took > 3*time.Second {
		t.Errorf("delivered %v after the resume; the servers poll every second", took)
	}
	// The sink has them; their outcomes commit a moment later.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		code, out, _ := cliEnv(t, rig.vars, "queue", "list")
		if code == 0 && strings.Contains(out, "(nothing waiting)") && !strings.Contains(out, "suspensions:") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue list 5 s after the end: %d\n%s", code, out)
		}
	}
}

// Two serve processes on one PostgreSQL database: a suspension made
// through one holds in the other at once (a domain's, read by every claim)
// and within a second (a site's, from each process's copy); resuming
// through the CLI lets everything through.
func TestQueueSuspensionSharedByTwoServes(t *testing.T) {
	t.Parallel()
	if testutil.PostgresURL() == "" {
		t.Skip("POSTLINE_TEST_DATABASE_URL not set")
	}
	key := make([]byte, 32)
	rand.Read(key)
	rig := newDeliveryRig(t, map[string]string{"POSTLINE_DATA_DIR": t.TempDir(),
		"POSTLINE_DATABASE_URL": testutil.DatabaseURL(t, store.Postgres), "POSTLINE_SECRET_KEY": base64.StdEncoding.EncodeToString(key)})
	if code, _, errs := cliEnv(t, rig.vars, "user", "create", "op", "--admin"); code != 0 {
		t.Fatal(errs)
	}
	_, out, _ := cliEnv(t, rig.vars, "key", "create", "op")
	opKey := strings.TrimSpace(out)
	a, b := startServe(t, rig.env()), startServe(t, rig.env())

	// The domain, suspended through a's API, then mail sent through b.
	body, _ := json.Marshal(map[string]any{"domain": "shop.example.com", "reason": "from a"})
	req, _ := http.NewRequest("POST", "http://"+a.addr+"/api/admin/queue/suspensions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth("op", opKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("suspend through a: %d", resp.StatusCode)
	}
	rig.enqueue(t, b, 0, 4, 4)
	// The site, suspended by the CLI: both processes see it within a
	// second, before the domain is resumed.
	if code, out, errs := cliEnv(t, rig.vars, "queue", "suspend", "--site", "mx.rcpt.example.net"); code != 0 {
		t.Fatalf("queue suspend --site: %d %s %s", code, out, errs)
	}
	time.Sleep(1100 * time.Millisecond)
	if code, out, errs := cliEnv(t, rig.vars, "queue", "resume", "--domain", "shop.example.com"); code != 0 {
		t.Fatalf("queue resume --domain: %d %s %s", code, out, errs)
	}
	rig.enqueue(t, a, 4, 4, 4)
	time.Sleep(2 * time.Second)
	if u, _ := rig.received(t); u != 0 {
		t.Fatalf("%d messages delivered while the domain, then the site, was suspended", u)
	}
	code, out, _ := cliEnv(t, rig.vars, "queue", "list", "--by", "site")
	if code != 0 || !strings.Contains(out, "mx.rcpt.example.net  8") {
		t.Errorf("queue list --by site: %d\n%s", code, out)
	}
	if code, out, errs := cliEnv(t, rig.vars, "queue", "resume", "--site", "mx.rcpt.example.net"); code != 0 {
		t.Fatalf("queue resume --site: %d %s %s", code, out, errs)
	}
	if u, total := rig.waitUnique(t, 8, 15*time.Second); u != 8 || total != 8 {
		t.Fatalf("after resuming: %d unique of 8 delivered (%d in all)", u, total)
	}
}

// `postline queue list --by site` beside a running serve lists the site
// with its ready and held deliveries and its suspension, then the site's
// provider and the limits serve enforces from the same --shaping-file.
func TestQueueListBySiteLimitsBinary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rules := filepath.Join(dir, "shaping.toml")
	if err := os.WriteFile(rules, []byte("[provider.\"rcptco\"]\nmatch = [{MXSuffix = \".rcpt.example.net\"}]\n"+
		"connection_limit = 3\nmax_message_rate = \"100/h\"\nmax_deliveries_per_connection = 20\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rig := newDeliveryRig(t, map[string]string{"POSTLINE_DATA_DIR": dir, "POSTLINE_SHAPING_FILE": rules})
	srv := startServe(t, rig.env())
	if code, out, errs := cliEnv(t, rig.vars, "queue", "suspend", "--site", "mx.rcpt.example.net", "--reason", "421 storm"); code != 0 {
		t.Fatalf("queue suspend --site: %d %s %s", code, out, errs)
	}
	rig.enqueue(t, srv, 0, 3, 3)
	// The site line: SITE PENDING DEFERRED SENDING HELD SUSPENDED, once
	// serve has put the three back held.
	site := regexp.MustCompile(`(?m)^mx\.rcpt\.example\.net +3 +0 +0 +3 +until resumed: 421 storm$`)
	limits := regexp.MustCompile(`(?m)^mx\.rcpt\.example\.net +rcptco +3 +- +100/h +20$`)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		code, out, errs := cliEnv(t, rig.vars, "queue", "list", "--by", "site")
		if code == 0 && site.MatchString(out) {
			if !strings.Contains(out, "SITE                 PENDING  DEFERRED  SENDING  HELD  SUSPENDED") ||
				!strings.Contains(out, "PROVIDER  CONNECTION_LIMIT  MAX_CONNECTION_RATE  MAX_MESSAGE_RATE  MAX_DELIVERIES_PER_CONNECTION") ||
				!limits.MatchString(out) {
				t.Errorf("queue list --by site: want the site's provider and limits\n%s", out)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue list --by site: %d; want 3 ready, 3 held, the suspension\n%s%s", code, out, errs)
		}
	}
	if u, _ := rig.received(t); u != 0 {
		t.Errorf("%d messages to the suspended site were delivered", u)
	}
}
