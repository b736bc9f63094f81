package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/postline/postline/internal/dnstest"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/testutil"
)

// TestForwardURLThroughClients: the real binary on each store forwards
// received mail to web apps: swaks sends a message with an attachment to a
// Mailgun-format route whose app first answers 500 (retried, then posted,
// signed as Mailgun signs with the key `postline webhook signing-key`
// prints, the attachment's bytes intact); Python's smtplib sends one with
// an attachment to a route added with `--format json` (Postmark's JSON,
// the attachment in base64).
func TestForwardURLThroughClients(t *testing.T) {
	t.Parallel()
	swaks, python := need(t, "swaks"), need(t, "python3")
	for _, d := range testutil.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			forwardURLThroughClients(t, d, swaks, python)
		})
	}
}

// appPost is one post a test app got.
type appPost struct {
	contentType string
	body        []byte
}

func forwardURLThroughClients(t *testing.T, d store.Dialect, swaks, python string) {
	dir := t.TempDir()
	dns := dnstest.New(t)
	vars := map[string]string{"POSTLINE_DATA_DIR": dir, "POSTLINE_DNS_SERVER": dns.Addr(), "POSTLINE_INBOUND_MX_HOST": "mx.postline.test"}
	if d == store.Postgres {
		key := make([]byte, 32)
		rand.Read(key)
		vars["POSTLINE_DATABASE_URL"], vars["POSTLINE_SECRET_KEY"] = testutil.DatabaseURL(t, d), base64.StdEncoding.EncodeToString(key)
	}
	var mu sync.Mutex
	got := map[string][]appPost{}
	failFirst := true
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		got[r.URL.Path] = append(got[r.URL.Path], appPost{r.Header.Get("Content-Type"), b})
		if r.URL.Path == "/mailgun" && failFirst {
			failFirst = false
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	defer app.Close()

	for _, args := range [][]string{{"user", "create", "alice"}, {"domain", "add", "alice", "shop.example.com", "--direct"},
		{"domain", "verify", "shop.example.com", "--force"}, {"domain", "update", "shop.example.com", "--inbound"},
		{"route", "add", "alice", "--expression", `match_recipient("^help@")`, "--action", `forward("` + app.URL + `/mailgun")`},
		{"route", "add", "alice", "--expression", `match_recipient("^desk@")`, "--action", `forward("` + app.URL + `/json")`, "--format", "json"}} {
		if code, _, errs := cliEnv(t, vars, args...); code != 0 {
			t.Fatalf("%v: %s", args, errs)
		}
	}
	_, keyOut, _ := cliEnv(t, vars, "webhook", "signing-key", "alice")
	signingKey := strings.TrimSpace(keyOut)

	inbound := testutil.FreeAddr(t)
	var env []string
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	srv := startServe(t, env, "--smtp-listen", inbound, "--webhook-allow-private", "--inbound-post-first-retry", "200ms")
	defer srv.stop(t)

	attachment := []byte("col1,col2\n1,\xff\x00\n")
	file := filepath.Join(dir, "report.csv")
	os.WriteFile(file, attachment, 0o600)
	if out, err := exec.Command(swaks, "--server", inbound, "--helo", "mx.sender.example", "--from", "ann@sender.example",
		"--to", "help@shop.example.com", "--header", "Subject: from swaks", "--body", "See the report.",
		"--attach-type", "text/csv", "--attach-name", "report.csv", "--attach", "@"+file).CombinedOutput(); err != nil {
		t.Fatalf("swaks: %v\n%s", err, out)
	}
	script := `
import smtplib, sys
from email.message import EmailMessage
host, port = sys.argv[1].rsplit(":", 1)
m = EmailMessage()
m["From"], m["To"], m["Subject"] = "Ann <ann@sender.example>", "desk@shop.example.com", "from smtplib"
m.set_content("Invoice attached.")
m.add_attachment(b"%PDF-1.4 \x00\x01 invoice", maintype="application", subtype="pdf", filename="invoice.pdf")
with smtplib.SMTP(host, int(port)) as s:
    s.send_message(m, from_addr="ann@sender.example")
`
	if out, err := exec.Command(python, "-c", script, inbound).CombinedOutput(); err != nil {
		t.Fatalf("python smtplib: %v\n%s", err, out)
	}

	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		done := len(got["/mailgun"]) >= 2 && len(got["/json"]) >= 1
		mu.Unlock()
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("posts: %d to /mailgun (want 2: a 500, then the retry), %d to /json", len(got["/mailgun"]), len(got["/json"]))
		}
		time.Sleep(100 * time.Millisecond)
	}

	mg := got["/mailgun"][1]
	_, params, _ := mime.ParseMediaType(mg.contentType)
	form, err := multipart.NewReader(bytes.NewReader(mg.body), params["boundary"]).ReadForm(1 << 20)
	if err != nil {
		t.Fatalf("the Mailgun-format post (%s): %v", mg.contentType, err)
	}
	field := func(k string) string {
		if v := form.Value[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	m := hmac.New(sha256.New, []byte(signingKey))
	m.Write([]byte(field("timestamp") + field("token")))
	if signingKey == "" || field("signature") != hex.EncodeToString(m.Sum(nil)) {
		t.Errorf("the signature does not verify with `webhook signing-key`'s key")
	}
	if field("subject") != "from swaks" || field("recipient") != "help@shop.example.com" || field("attachment-count") != "1" {
		t.Errorf("Mailgun fields: %v", form.Value)
	}
	var att []byte
	if fh := form.File["attachment-1"]; len(fh) == 1 && fh[0].Filename == "report.csv" {
		f, _ := fh[0].Open()
		att, _ = io.ReadAll(f)
		f.Close()
	}
	if !bytes.Equal(att, attachment) {
		t.Errorf("attachment-1 = %q; want swaks' report.csv intact", att)
	}

	var pm struct {
		Subject, From string
		Attachments   []struct{ Name, Content, ContentType string }
	}
	if err := json.Unmarshal(got["/json"][0].body, &pm); err != nil || pm.Subject != "from smtplib" || pm.From != "ann@sender.example" ||
		len(pm.Attachments) != 1 || pm.Attachments[0].Name != "invoice.pdf" || pm.Attachments[0].ContentType != "application/pdf" {
		t.Fatalf("the json post: %v %s", err, got["/json"][0].body)
	}
	if b, _ := base64.StdEncoding.DecodeString(pm.Attachments[0].Content); string(b) != "%PDF-1.4 \x00\x01 invoice" {
		t.Errorf("the json post's attachment: %q", b)
	}
}
