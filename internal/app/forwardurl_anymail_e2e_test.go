package app_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/store"
)

// anymailReceiver starts testdata/anymail/mailgun_inbound.py (a Django
// app with anymail's MailgunInboundWebhookView) and returns its URL and
// its output lines. Without Debian's python3-django-anymail the test is
// skipped, and fails under CI=true.
func anymailReceiver(t *testing.T, key string) (string, <-chan string) {
	t.Helper()
	const python = "/usr/bin/python3"
	if out, err := exec.Command(python, "-c", "import django, anymail").CombinedOutput(); err != nil {
		msg := "needs " + python + " with django-anymail (apt-get install python3-django-anymail): " + strings.TrimSpace(string(out))
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	cmd := exec.Command(python, filepath.Join("..", "..", "testdata", "anymail", "mailgun_inbound.py"), key)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Wait() }) //nolint:errcheck // it ends when its input closes
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	select {
	case l := <-lines:
		port, ok := strings.CutPrefix(l, "listening ")
		if !ok {
			t.Fatalf("the anymail app said %q", l)
		}
		return "http://127.0.0.1:" + port + "/anymail/mailgun/inbound/", lines
	case <-time.After(20 * time.Second):
		t.Fatal("the anymail app did not start")
	}
	return "", nil
}

// TestForwardURLAnymail: a route's Mailgun-format forward is taken by
// django-anymail's MailgunInboundWebhookView (which checks the signature
// with the account's signing key) and parsed as a Mailgun user's app sees
// it: envelope, fields, the stripped text, the attachment and the inline
// image by its Content-ID, bytes intact.
func TestForwardURLAnymail(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		r := startInbound(t, d, nil)
		key, err := r.App.Webhooks.SigningKey(t.Context(), r.user.ID)
		if err != nil {
			t.Fatal(err)
		}
		hook, lines := anymailReceiver(t, key)
		r.route(t, r.user, 1, `match_recipient("^help@shop\.example\.com$")`, `forward("`+hook+`")`)
		if res := deliver(t, r.addr, "bounce@sender.example", []string{"help@shop.example.com"}, reply("Shop <help@shop.example.com>", "Re: order")); res.data != nil {
			t.Fatalf("DATA: %v", res.data)
		}
		var got struct {
			EventID           string                 `json:"event_id"`
			EnvelopeSender    string                 `json:"envelope_sender"`
			EnvelopeRecipient string                 `json:"envelope_recipient"`
			FromEmail         string                 `json:"from_email"`
			To                []string               `json:"to"`
			Subject           string                 `json:"subject"`
			Text              string                 `json:"text"`
			HTML              string                 `json:"html"`
			StrippedText      string                 `json:"stripped_text"`
			Attachments       []anymailFile          `json:"attachments"`
			Inlines           map[string]anymailFile `json:"inlines"`
		}
		select {
		case l := <-lines:
			if err := json.Unmarshal([]byte(l), &got); err != nil {
				t.Fatalf("the anymail app said %q", l)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("anymail got no message")
		}
		if !postToken.MatchString(got.EventID) || got.EnvelopeSender != "bounce@sender.example" || got.EnvelopeRecipient != "help@shop.example.com" ||
			got.FromEmail != "Ann Sender <ann@sender.example>" || len(got.To) != 1 || got.To[0] != "Shop <help@shop.example.com>" ||
			got.Subject != "Re: order" || got.StrippedText != "Thanks, it works now." || !strings.Contains(got.Text, "> Did it work?") ||
			!strings.Contains(got.HTML, `cid:logo@sender.example`) {
			t.Errorf("anymail's message: %+v", got)
		}
		img, ok := got.Inlines["logo@sender.example"]
		if !ok || img.SHA256 != digest(pngBytes) || img.ContentType != "image/png" {
			t.Errorf("anymail's inline images: %+v; want logo@sender.example intact", got.Inlines)
		}
		if len(got.Attachments) != 1 || got.Attachments[0].Filename != "data.bin" || got.Attachments[0].SHA256 != digest(binBytes) {
			t.Errorf("anymail's attachments: %+v; want data.bin intact", got.Attachments)
		}
		if e := det(r.waitPost(t, "help@shop.example.com", 1)[0]); e("outcome") != "posted" || e("status") != 200.0 {
			t.Errorf("post entry: %v %v", e("outcome"), e("status"))
		}

		// Signed with another key (rotated since the app was set up),
		// anymail refuses the post: its check is real, and a refusal is
		// not retried.
		if _, err := r.App.Webhooks.RotateSigningKey(t.Context(), r.user.ID); err != nil {
			t.Fatal(err)
		}
		deliver(t, r.addr, "bounce@sender.example", []string{"help@shop.example.com"},
			crlfText("From: ann@sender.example\nSubject: second\nMessage-ID: <second@sender.example>\n\nHi\n"))
		select {
		case l := <-lines:
			if l != "rejected 400" {
				t.Errorf("anymail said %q to a post signed with another key; want a 400", l)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("anymail got no second post")
		}
		if e := det(r.waitPost(t, "help@shop.example.com", 2)[0]); e("outcome") != "failed" || e("status") != 400.0 {
			t.Errorf("post entry of the refused post: %v %v", e("outcome"), e("status"))
		}
	})
}

type anymailFile struct {
	Filename    string `json:"filename"`
	ContentType string `json:"content_type"`
	ContentID   string `json:"content_id"`
	SHA256      string `json:"sha256"`
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
