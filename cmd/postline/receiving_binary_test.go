package main

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/dnstest"
	"github.com/postline/postline/internal/message"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/testutil"
)

// TestReceivingThroughClients: the real binary on each store receives mail
// for a domain turned on with `postline domain update --inbound`, from
// swaks (a message DKIM-signed by a sender whose SPF names the client and
// whose DMARC says reject: all pass) and from Python's smtplib over
// STARTTLS (a forgery of a sender whose SPF refuses the client: fail,
// recorded). A route stores both; the API and `postline inbound list|show`
// read them back; unknown recipients and a domain without inbound get 550
// at RCPT, SIZE is advertised and a larger message refused with 552; past
// --inbound-retention the stored messages are gone.
func TestReceivingThroughClients(t *testing.T) {
	t.Parallel()
	swaks, python := need(t, "swaks"), need(t, "python3")
	for _, d := range testutil.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			receivingThroughClients(t, d, swaks, python)
		})
	}
}

func receivingThroughClients(t *testing.T, d store.Dialect, swaks, python string) {
	dir := t.TempDir()
	dns := dnstest.New(t)
	vars := map[string]string{"POSTLINE_DATA_DIR": dir, "POSTLINE_DNS_SERVER": dns.Addr(), "POSTLINE_INBOUND_MX_HOST": "mx.postline.test",
		"POSTLINE_INBOUND_RETENTION": "15s"}
	if d == store.Postgres {
		key := make([]byte, 32)
		rand.Read(key)
		vars["POSTLINE_DATABASE_URL"], vars["POSTLINE_SECRET_KEY"] = testutil.DatabaseURL(t, d), base64.StdEncoding.EncodeToString(key)
	}
	key, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	priv, _ := x509.MarshalPKCS8PrivateKey(key)
	pub, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	dns.AddTXT("s1._domainkey.sender.example", "v=DKIM1; k=rsa; p="+base64.StdEncoding.EncodeToString(pub))
	dns.AddTXT("sender.example", "v=spf1 ip4:127.0.0.1 -all")
	dns.AddTXT("_dmarc.sender.example", "v=DMARC1; p=reject")
	dns.AddTXT("bank.example", "v=spf1 ip4:192.0.2.1 -all")
	dns.AddTXT("_dmarc.bank.example", "v=DMARC1; p=quarantine")

	for _, args := range [][]string{{"user", "create", "alice"}, {"domain", "add", "alice", "shop.example.com", "--direct"},
		{"domain", "verify", "shop.example.com", "--force"}, {"domain", "add", "alice", "quiet.example.com", "--direct"},
		{"domain", "verify", "quiet.example.com", "--force"}} {
		if code, _, errs := cliEnv(t, vars, args...); code != 0 {
			t.Fatalf("%v: %s", args, errs)
		}
	}
	code, out, errs := cliEnv(t, vars, "domain", "update", "shop.example.com", "--inbound")
	if code != 0 || out != "shop.example.com receives mail (routes decide what becomes of it); publish: shop.example.com. MX 10 mx.postline.test.\n" {
		t.Fatalf("domain update --inbound: exit %d %q %q", code, out, errs)
	}
	if code, out, _ := cliEnv(t, vars, "domain", "show", "shop.example.com"); code != 0 || !strings.Contains(out, "inbound_mx  MX    shop.example.com") ||
		!strings.Contains(out, "10 mx.postline.test") {
		t.Fatalf("domain show: %s", out)
	}
	code, out, errs = cliEnv(t, vars, "route", "add", "alice", "--expression", `match_recipient("^(help|desk)@shop\.example\.com$")`,
		"--action", "store()", "--action", `forward("https://desk.example/in")`)
	if code != 0 {
		t.Fatalf("route add: %s", errs)
	}
	_, keyOut, _ := cliEnv(t, vars, "key", "create", "alice")
	apiKey := strings.TrimSpace(keyOut)

	certPEM, keyPEM, _ := testutil.SelfSignedCert(t, "mx.postline.test")
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, certPEM, 0o600)
	os.WriteFile(keyFile, keyPEM, 0o600)
	inbound := testutil.FreeAddr(t)
	var env []string
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	srv := startServe(t, env, "--smtp-listen", inbound, "--tls-cert", certFile, "--tls-key", keyFile,
		"--smtp-max-bytes", "200000")
	defer srv.stop(t)

	signer, err := message.NewSigner("sender.example", "s1", priv)
	if err != nil {
		t.Fatal(err)
	}
	msg := strings.ReplaceAll("From: Ann <ann@sender.example>\nTo: help@shop.example.com\nSubject: Order 1001 is late\n"+
		"Message-ID: <swaks-1@sender.example>\nDate: Fri, 27 Nov 2026 10:00:00 +0000\n\nWhere is my order?\n", "\n", "\r\n")
	signed, err := signer.Sign([]byte(msg))
	if err != nil {
		t.Fatal(err)
	}
	eml := filepath.Join(dir, "signed.eml")
	os.WriteFile(eml, signed, 0o600)
	if out, err := exec.Command(swaks, "--server", inbound, "--helo", "mx.sender.example", "--from", "bounces@sender.example",
		"--to", "help@shop.example.com", "--data", "@"+eml).CombinedOutput(); err != nil {
		t.Fatalf("swaks: %v\n%s", err, out)
	}
	// swaks to an address no route takes, and to a domain without inbound.
	for _, to := range []string{"nobody@shop.example.com", "help@quiet.example.com"} {
		out, err := exec.Command(swaks, "--server", inbound, "--from", "ann@sender.example", "--to", to, "--body", "hi").CombinedOutput()
		if err == nil || !strings.Contains(string(out), "<** 550 5.1.1") {
			t.Errorf("swaks to %s: %v\n%s", to, err, out)
		}
	}

	script := `
import smtplib, ssl, sys
host, port = sys.argv[1].rsplit(":", 1)
s = smtplib.SMTP(host, int(port))
s.ehlo("mail.bank.example")
print("size", s.esmtp_features.get("size", ""), "starttls" in s.esmtp_features)
s.starttls(context=ssl._create_unverified_context())
s.ehlo("mail.bank.example")
s.sendmail("ceo@bank.example", ["desk@shop.example.com"],
    b"From: The Bank <ceo@bank.example>\r\nTo: desk@shop.example.com\r\nSubject: Wire the money\r\n\r\nPay today.\r\n")
try:
    s.sendmail("ceo@bank.example", ["desk@shop.example.com"], b"Subject: big\r\n\r\n" + b"x" * 250000)
except smtplib.SMTPSenderRefused as e:
    print("big", e.smtp_code)
try:
    s.sendmail("ceo@bank.example", ["help@quiet.example.com"], b"Subject: q\r\n\r\nq\r\n")
except smtplib.SMTPRecipientsRefused as e:
    print("quiet", e.recipients["help@quiet.example.com"][0])
s.quit()
`
	pyOut, err := exec.Command(python, "-c", script, inbound).CombinedOutput()
	if err != nil {
		t.Fatalf("python smtplib: %v\n%s", err, pyOut)
	}
	if got := string(pyOut); got != "size 200000 True\nbig 552\nquiet 550\n" {
		t.Errorf("smtplib heard %q", got)
	}

	// A 503 is the server's "retry later" (a database call past
	// --db-timeout, which the full suite's load on two cores has caused);
	// a client retries it, and so does this one, a few times.
	api := func(path string) (int, []byte) {
		t.Helper()
		for try := 1; ; try++ {
			req, _ := http.NewRequest("GET", "http://"+srv.addr+path, nil)
			req.SetBasicAuth("alice", apiKey)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusServiceUnavailable || try == 3 {
				return resp.StatusCode, b
			}
			t.Logf("GET %s: 503 %s; retrying", path, b)
			time.Sleep(time.Second)
		}
	}
	status, body := api("/api/domains/shop.example.com/inbound")
	var list struct {
		Data []struct {
			ID, Recipient, Sender, Subject string
		}
		Count int
	}
	json.Unmarshal(body, &list)
	if status != 200 || list.Count != 2 || list.Data[0].Subject != "Wire the money" || list.Data[1].Sender != "bounces@sender.example" {
		t.Fatalf("inbound list: %d %s", status, body)
	}
	auth := func(id string) map[string]any {
		_, b := api("/api/domains/shop.example.com/inbound/" + id)
		var v struct {
			Data struct {
				Auth map[string]any `json:"auth"`
			} `json:"data"`
		}
		json.Unmarshal(b, &v)
		return v.Data.Auth
	}
	result := func(a map[string]any, k string) any {
		if k == "dkim" {
			if l, _ := a["dkim"].([]any); len(l) > 0 {
				return l[0].(map[string]any)["result"]
			}
			return "none"
		}
		m, _ := a[k].(map[string]any)
		return m["result"]
	}
	signedAuth, forgedAuth := auth(list.Data[1].ID), auth(list.Data[0].ID)
	for _, c := range []struct {
		a          map[string]any
		spf, dkim  string
		dmarc, why string
	}{{signedAuth, "pass", "pass", "pass", "signed, from an address its SPF names"}, {forgedAuth, "fail", "none", "fail", "forged"}} {
		if result(c.a, "spf") != c.spf || result(c.a, "dkim") != c.dkim || result(c.a, "dmarc") != c.dmarc {
			t.Errorf("%s: %v; want spf %s, dkim %s, dmarc %s", c.why, c.a, c.spf, c.dkim, c.dmarc)
		}
	}

	// The CLI reads the same messages.
	code, out, errs = runBinary(t, env, "inbound", "list", "shop.example.com")
	if code != 0 || !regexp.MustCompile(`(?m)^`+list.Data[0].ID+` .* desk@shop\.example\.com .*Wire the money`).MatchString(out) {
		t.Errorf("inbound list: exit %d\n%s%s", code, out, errs)
	}
	code, out, _ = runBinary(t, env, "inbound", "show", "shop.example.com", list.Data[1].ID)
	for _, want := range []string{"recipient:  help@shop.example.com", "spf:        pass sender.example", "dkim:       pass sender.example",
		"dmarc:      pass sender.example (policy reject)", "Where is my order?"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("inbound show lacks %q: exit %d\n%s", want, code, out)
		}
	}
	code, out, _ = runBinary(t, env, "inbound", "show", "shop.example.com", list.Data[0].ID, "--raw")
	if code != 0 || !strings.HasPrefix(out, "Authentication-Results: mx.postline.test;\r\n\tspf=fail smtp.mailfrom=bank.example;\r\n\tdkim=none;\r\n\tdmarc=fail") ||
		!strings.Contains(out, "with ESMTPS;") {
		t.Errorf("inbound show --raw: exit %d\n%s", code, out)
	}
	if code, _, errs := runBinary(t, env, "inbound", "show", "shop.example.com", strings.Repeat("a", 32)); code != 1 || !strings.Contains(errs, "not found") {
		t.Errorf("inbound show of an unknown id: exit %d %s", code, errs)
	}

	// Past the retention, gone from the API and the CLI (the newer one
	// last).
	deadline := time.Now().Add(40 * time.Second)
	for {
		status, body := api("/api/domains/shop.example.com/inbound/" + list.Data[0].ID)
		if status == 404 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the retention: %d %s", status, body)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if code, out, _ := runBinary(t, env, "inbound", "list", "shop.example.com"); code != 0 || out != "shop.example.com has no stored messages\n" {
		t.Errorf("inbound list after the retention: exit %d %q", code, out)
	}
}
