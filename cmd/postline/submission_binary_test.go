package main

import (
	"crypto/tls"
	"net/smtp"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/postline/postline/internal/testutil"
)

// submissionRig is a delivery rig whose serve also listens for SMTP
// submission on loopback (STARTTLS and implicit TLS, self-signed).
func submissionRig(t *testing.T) (*deliveryRig, string, string) {
	t.Helper()
	rig := newDeliveryRig(t, map[string]string{"POSTLINE_DATA_DIR": t.TempDir()})
	starttls, implicit := testutil.FreeAddr(t), testutil.FreeAddr(t)
	rig.vars["POSTLINE_SUBMISSION_LISTEN"], rig.vars["POSTLINE_SUBMISSIONS_LISTEN"] = starttls, implicit
	return rig, starttls, implicit
}

// need finds a client program, skipping the test without it (failing
// under CI, which installs them).
func need(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not installed (.ci/run installs it)", name)
		}
		t.Skipf("%s not installed", name)
	}
	return p
}

// TestSubmissionThroughClients: swaks (STARTTLS + AUTH PLAIN, with an
// attachment) and Python's smtplib (implicit TLS + AUTH LOGIN) submit to
// the real binary, and both messages arrive.
func TestSubmissionThroughClients(t *testing.T) {
	t.Parallel()
	if os.Getenv("POSTLINE_TEST_DATABASE_URL") != "" {
		t.Skip("client programs run once, in the SQLite pass")
	}
	swaks, python := need(t, "swaks"), need(t, "python3")
	rig, starttls, implicit := submissionRig(t)
	srv := startServe(t, rig.env())
	defer srv.stop(t)
	file := filepath.Join(t.TempDir(), "invoice.txt")
	os.WriteFile(file, []byte("INVOICE 42\n"), 0o600)
	out, err := exec.Command(swaks, "--server", starttls, "--tls", "--auth", "PLAIN", "--auth-user", "alice",
		"--auth-password", rig.key, "--from", "orders@shop.example.com", "--to", "swaks@rcpt.example.net",
		"--header", "Subject: from swaks", "--body", "Hello from swaks", "--attach-type", "text/plain", "--attach", "@"+file).CombinedOutput()
	if err != nil {
		t.Fatalf("swaks: %v\n%s", err, out)
	}
	script := `
import smtplib, ssl, sys
host, port = sys.argv[1].rsplit(":", 1)
s = smtplib.SMTP_SSL(host, int(port), context=ssl._create_unverified_context())
s.user, s.password = "alice", sys.argv[2]
s.ehlo()
s.auth("LOGIN", s.auth_login, initial_response_ok=False)
s.sendmail("orders@shop.example.com", ["python@rcpt.example.net"],
    "From: orders@shop.example.com\r\nTo: python@rcpt.example.net\r\nSubject: from smtplib\r\n\r\nHello from Python\r\n")
s.quit()
`
	if out, err := exec.Command(python, "-c", script, implicit, rig.key).CombinedOutput(); err != nil {
		t.Fatalf("python smtplib: %v\n%s", err, out)
	}
	if u, _ := rig.waitUnique(t, 2, 30*time.Second); u != 2 {
		t.Fatalf("%d of 2 submitted messages delivered", u)
	}
	var sawAttachment, sawPython bool
	for _, m := range rig.sink.Messages() {
		s := string(m.Data)
		sawAttachment = sawAttachment || (strings.Contains(s, "from swaks") && strings.Contains(s, "invoice.txt"))
		sawPython = sawPython || strings.Contains(s, "Hello from Python")
	}
	if !sawAttachment || !sawPython {
		t.Fatalf("swaks' message with its attachment %v, smtplib's %v", sawAttachment, sawPython)
	}
}

// TestSubmissionSurvivesKill9: serve is killed right after the client got
// 250; after a restart the message is delivered. Delivery is impossible
// before the kill (the MX port is closed), so the message can only have
// come from the queue on disk.
func TestSubmissionSurvivesKill9(t *testing.T) {
	t.Parallel()
	rig, starttls, _ := submissionRig(t)
	sinkPort := rig.vars["POSTLINE_MX_PORT"]
	closed := strings.TrimPrefix(testutil.FreeAddr(t), "127.0.0.1:")
	rig.vars["POSTLINE_MX_PORT"] = closed
	srv := startServe(t, rig.env())
	c, err := smtp.Dial(starttls)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.StartTLS(&tls.Config{InsecureSkipVerify: true}); err != nil { //nolint:gosec // the loopback self-signed certificate
		t.Fatal(err)
	}
	if err := c.Auth(smtp.PlainAuth("", "alice", rig.key, "127.0.0.1")); err != nil {
		t.Fatal(err)
	}
	if err := c.Mail("orders@shop.example.com"); err != nil {
		t.Fatal(err)
	}
	if err := c.Rcpt("crash@rcpt.example.net"); err != nil {
		t.Fatal(err)
	}
	w, _ := c.Data()
	w.Write([]byte("From: orders@shop.example.com\r\nTo: crash@rcpt.example.net\r\nSubject: kill -9\r\n\r\nstill here\r\n"))
	if err := w.Close(); err != nil { // the 250
		t.Fatalf("DATA: %v", err)
	}
	srv.cmd.Process.Signal(syscall.SIGKILL)
	<-srv.done
	if len(rig.sink.Messages()) != 0 {
		t.Fatal("delivered before the kill: the test proves nothing")
	}
	rig.vars["POSTLINE_MX_PORT"] = sinkPort
	again := startServe(t, rig.env())
	defer again.stop(t)
	if u, _ := rig.waitUnique(t, 1, 30*time.Second); u != 1 {
		t.Fatal("the message answered 250 before the kill was never delivered after the restart")
	}
}
