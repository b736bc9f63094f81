package app_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net/smtp"
	"net/textproto"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-msgauth/dkim"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/store"
)

// loginAuth is the client side of AUTH LOGIN (net/smtp has only PLAIN).
type loginAuth struct{ user, pass string }

func (a loginAuth) Start(*smtp.ServerInfo) (string, []byte, error) { return "LOGIN", nil, nil }
func (a loginAuth) Next(from []byte, more bool) ([]byte, error) {
	if !more {
		return nil, nil
	}
	if strings.HasPrefix(strings.ToLower(string(from)), "user") {
		return []byte(a.user), nil
	}
	return []byte(a.pass), nil
}

func startSubmission(t *testing.T, d store.Dialect, edit func(*config.Config)) *sendEnv {
	t.Helper()
	e := startSend(t, d, false, func(c *config.Config) {
		c.SubmissionListen, c.SubmissionsListen = "127.0.0.1:0", "127.0.0.1:0"
		c.SubmissionMaxBytes = 64 << 10
		if edit != nil {
			edit(c)
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for e.App.Submission == nil || e.App.Submission.Addr(true) == "" {
		if time.Now().After(deadline) {
			t.Fatal("submission listeners did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return e
}

// dialSubmission connects to the STARTTLS listener (or the implicit TLS
// one) and authenticates with auth (nil: none).
func dialSubmission(t *testing.T, e *sendEnv, implicit bool, auth smtp.Auth) (*smtp.Client, error) {
	t.Helper()
	tc := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the server's self-signed loopback certificate
	var c *smtp.Client
	var err error
	if implicit {
		conn, derr := tls.Dial("tcp", e.App.Submission.Addr(true), tc)
		if derr != nil {
			t.Fatal(derr)
		}
		c, err = smtp.NewClient(conn, "127.0.0.1")
	} else {
		c, err = smtp.Dial(e.App.Submission.Addr(false))
		if err == nil {
			err = c.StartTLS(tc)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if auth != nil {
		if err := c.Auth(auth); err != nil {
			return c, err
		}
	}
	return c, nil
}

func submit(c *smtp.Client, from string, to []string, msg string) error {
	if err := c.Mail(from); err != nil {
		return err
	}
	for _, r := range to {
		if err := c.Rcpt(r); err != nil {
			return err
		}
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	if _, err := w.Write([]byte(msg)); err != nil {
		return err
	}
	return w.Close()
}

// replyCode is the code of a net/smtp client error.
func replyCode(err error) int {
	var te *textproto.Error
	if errors.As(err, &te) {
		return te.Code
	}
	return 0
}

const submittedBody = "--b1\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nYour invoice is attached.\r\n" +
	"--b1\r\nContent-Type: text/plain; name=\"invoice.txt\"\r\nContent-Disposition: attachment; filename=\"invoice.txt\"\r\n\r\nINVOICE 42\r\n--b1--\r\n"

func submittedMessage(from, to, extra string) string {
	return "From: Shop <" + from + ">\r\nTo: " + to + "\r\nSubject: Your invoice\r\n" + extra +
		"MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b1\r\n\r\n" + submittedBody
}

// TestSubmissionEndToEnd: net/smtp submits over STARTTLS + AUTH PLAIN and
// over implicit TLS + AUTH LOGIN; the message arrives at the sink with its
// body byte for byte, a DKIM signature that verifies, Bcc delivered and
// not visible, the client's Message-ID for every recipient; a foreign
// From, bad credentials and an oversize message are refused; a suppressed
// recipient is logged as failed.
func TestSubmissionEndToEnd(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		e := startSubmission(t, d, nil)
		ctx := context.Background()
		key := e.user.Key
		e.App.Suppressions.AddBounce(ctx, e.dom.ID, "gone@rcpt.example.net", "test")

		// STARTTLS + PLAIN; Bcc only in the envelope and a header to remove.
		c, err := dialSubmission(t, e, false, smtp.PlainAuth("", "alice", key, "127.0.0.1"))
		if err != nil {
			t.Fatalf("STARTTLS + AUTH PLAIN: %v", err)
		}
		msg := submittedMessage("orders@shop.example.com", "ann@rcpt.example.net",
			"Bcc: hidden@rcpt.example.net\r\nMessage-ID: <inv-42@shop.example.com>\r\nX-Postline-Tag: invoices\r\n")
		if err := submit(c, "orders@shop.example.com", []string{"ann@rcpt.example.net", "hidden@rcpt.example.net", "gone@rcpt.example.net"}, msg); err != nil {
			t.Fatalf("submit: %v", err)
		}
		// One transaction to ann and hidden: the message is the same for
		// both (max_recipients_per_transaction).
		msgs, err := e.sink.WaitForMessages(ctxTimeout(t, 15*time.Second), 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) != 1 || !slices.Equal(msgs[0].To, []string{"ann@rcpt.example.net", "hidden@rcpt.example.net"}) {
			t.Errorf("the sink got %d messages (first to %v), want one to ann and hidden", len(msgs), msgs[0].To)
		}
		for _, m := range msgs {
			if !bytes.HasSuffix(m.Data, []byte("\r\n\r\n"+submittedBody)) {
				t.Errorf("%v: the body is not the client's byte for byte:\n%s", m.To, m.Data)
			}
			head, _, _ := strings.Cut(string(m.Data), "\r\n\r\n")
			// Field names, not text: a DKIM signature's base64 may spell "Bcc".
			if hasField(head, "Bcc") || strings.Contains(head, "hidden@") || strings.Contains(head, "X-Postline") {
				t.Errorf("%v: the header shows what it must not:\n%s", m.To, head)
			}
			if !strings.Contains(head, "Message-ID: <inv-42@shop.example.com>") && !strings.Contains(head, "Message-Id: <inv-42@shop.example.com>") {
				t.Errorf("%v: the client's Message-ID is gone:\n%s", m.To, head)
			}
			verifs, err := dkim.VerifyWithOptions(bytes.NewReader(m.Data), &dkim.VerifyOptions{LookupTXT: func(name string) ([]string, error) {
				return e.App.Resolver.LookupTXT(context.Background(), name)
			}})
			if err != nil || len(verifs) != 1 || verifs[0].Err != nil || verifs[0].Domain != "shop.example.com" {
				t.Errorf("%v: DKIM %+v, %v; want one passing signature by shop.example.com", m.To, verifs, err)
			}
		}
		for _, rc := range []string{"ann@rcpt.example.net", "hidden@rcpt.example.net"} {
			q := e.entries(t, rc, event.Queued)
			if len(q) != 1 || q[0].MessageID != "inv-42@shop.example.com" || q[0].Tags != "invoices" {
				t.Errorf("%s: queued entries %+v, want one with the client's Message-ID and the tag", rc, q)
			}
		}
		if f := e.entries(t, "gone@rcpt.example.net", event.Failed); len(f) != 1 || det(f[0])("reason") != "suppressed" {
			t.Errorf("the suppressed recipient's entries: %+v, want failed/suppressed", f)
		}

		// Implicit TLS + LOGIN.
		c, err = dialSubmission(t, e, true, loginAuth{"alice", key})
		if err != nil {
			t.Fatalf("implicit TLS + AUTH LOGIN: %v", err)
		}
		if err := submit(c, "orders@shop.example.com", []string{"bob@rcpt.example.net"},
			submittedMessage("orders@shop.example.com", "bob@rcpt.example.net", "")); err != nil {
			t.Fatalf("submit over implicit TLS: %v", err)
		}
		if _, err := e.sink.WaitForMessages(ctxTimeout(t, 15*time.Second), 2); err != nil {
			t.Fatal(err)
		}
		// A header From on another domain; then a message over SIZE.
		err = submit(c, "orders@shop.example.com", []string{"bob@rcpt.example.net"},
			submittedMessage("ceo@bank.example", "bob@rcpt.example.net", ""))
		if replyCode(err) != 550 || !strings.Contains(err.Error(), "bank.example") {
			t.Errorf("a foreign From: %v, want 550 naming the domain", err)
		}
		c.Reset()
		err = submit(c, "orders@shop.example.com", []string{"bob@rcpt.example.net"},
			submittedMessage("orders@shop.example.com", "bob@rcpt.example.net", strings.Repeat("X-Pad: "+strings.Repeat("x", 90)+"\r\n", 700)))
		if replyCode(err) != 552 {
			t.Errorf("a message over SIZE: %v, want 552", err)
		}

		// No AUTH, bad credentials, a foreign envelope sender.
		c, _ = dialSubmission(t, e, false, nil)
		if err := c.Mail("orders@shop.example.com"); replyCode(err) != 530 {
			t.Errorf("MAIL without AUTH: %v, want 530", err)
		}
		bad, err := dialSubmission(t, e, false, smtp.PlainAuth("", "alice", "pl_wrong", "127.0.0.1"))
		if replyCode(err) != 535 {
			t.Errorf("bad credentials: %v, want 535", err)
		}
		bad.Quit() //nolint:errcheck // the session is counted when it ends

		c, _ = dialSubmission(t, e, false, smtp.PlainAuth("", "alice", key, "127.0.0.1"))
		if err := c.Mail("someone@other.example"); replyCode(err) != 550 {
			t.Errorf("a foreign envelope sender: %v, want 550", err)
		}
		// The server counts a session when it sees the connection end,
		// which may be a moment after the client's QUIT returned.
		for _, want := range []string{`postline_submission_messages_total{outcome="accepted"} 2`,
			`postline_submission_sessions_total{outcome="auth_failed"} 1`} {
			deadline := time.Now().Add(5 * time.Second)
			for {
				resp := e.Do(apitest.Request{Method: "GET", Path: "/metrics"})
				if bytes.Contains(resp.Body, []byte(want)) {
					break
				}
				if time.Now().After(deadline) {
					t.Errorf("metrics lack %s", want)
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	})
}

// TestSubmissionAuthLimits: past the failed-attempt limit of its address
// a client is refused with 454 before its credentials are checked, even
// correct ones.
func TestSubmissionAuthLimits(t *testing.T) {
	t.Parallel()
	e := startSubmission(t, store.SQLite, func(c *config.Config) { c.AuthAttemptsPerAddress = 3 })
	// A key without the send scope cannot submit, whatever its other scopes.
	readOnly, _, err := e.App.Accounts.CreateKeyWith(context.Background(), "alice", account.KeyOptions{Scopes: []string{account.ScopeLogRead}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dialSubmission(t, e, false, smtp.PlainAuth("", "alice", readOnly, "127.0.0.1")); replyCode(err) != 535 || !strings.Contains(err.Error(), "send") {
		t.Errorf("AUTH with a log:read key: %v, want 535 naming the send scope", err)
	}
	// An authorization identity other than the login is refused, right key or not.
	bob := e.NewUser("bob")
	if _, err := dialSubmission(t, e, false, smtp.PlainAuth("alice", "bob", bob.Key, "127.0.0.1")); replyCode(err) != 535 ||
		!strings.Contains(err.Error(), "authorization identity") {
		t.Errorf("AUTH PLAIN as bob for alice: %v, want 535 naming the authorization identity", err)
	}
	if _, err := dialSubmission(t, e, false, smtp.PlainAuth("bob", "bob", bob.Key, "127.0.0.1")); err != nil {
		t.Errorf("AUTH PLAIN as bob for bob: %v, want accepted", err)
	}
	for i := 0; i < 3; i++ {
		if _, err := dialSubmission(t, e, false, smtp.PlainAuth("", "alice", "pl_wrong", "127.0.0.1")); replyCode(err) != 535 {
			t.Fatalf("failure %d: %v, want 535", i+1, err)
		}
	}
	if _, err := dialSubmission(t, e, false, smtp.PlainAuth("", "alice", e.user.Key, "127.0.0.1")); replyCode(err) != 454 {
		t.Fatalf("the right key after 3 failures: %v, want 454 until the window passes", err)
	}
	// AUTH is not offered before STARTTLS.
	c, err := smtp.Dial(e.App.Submission.Addr(false))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if ok, _ := c.Extension("AUTH"); ok {
		t.Error("AUTH offered before TLS")
	}
}

// TestSubmissionTracking: a submitted HTML message gets the domain's
// tracking like an API send (click URLs that redirect to the original
// link, the pixel, List-Unsubscribe, the unsubscribe placeholder), still
// DKIM-valid; X-Postline-Track: none turns opens and clicks off for one
// message.
func TestSubmissionTracking(t *testing.T) {
	t.Parallel()
	e := startSubmission(t, store.SQLite, nil)
	e.Do(apitest.Request{Method: "PUT", Path: "/api/domains/shop.example.com/tracking", Auth: e.user.Auth(),
		Body: map[string]bool{"opens": true, "clicks": true, "unsubscribe": true}})
	html := "<html><body><p>Hi</p><a href=\"https://landing.example/offer?a=1\">Offer</a> " +
		"<a href=\"%unsubscribe_url%\">Leave</a></body></html>"
	msg := func(to, extra string) string {
		return "From: orders@shop.example.com\r\nTo: " + to + "\r\nSubject: Offer\r\n" + extra + "MIME-Version: 1.0\r\n" +
			"Content-Type: multipart/alternative; boundary=alt\r\n\r\n--alt\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n" +
			"Leave: %unsubscribe_url%\r\n--alt\r\nContent-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n" +
			html + "\r\n--alt--\r\n"
	}
	c, err := dialSubmission(t, e, false, smtp.PlainAuth("", "alice", e.user.Key, "127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := submit(c, "orders@shop.example.com", []string{"ann@rcpt.example.net"}, msg("ann@rcpt.example.net", "")); err != nil {
		t.Fatal(err)
	}
	if err := submit(c, "orders@shop.example.com", []string{"zed@rcpt.example.net"}, msg("zed@rcpt.example.net", "X-Postline-Track: none\r\n")); err != nil {
		t.Fatal(err)
	}
	msgs, err := e.sink.WaitForMessages(ctxTimeout(t, 15*time.Second), 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		r := readReceived(t, m.Data)
		tracked := m.To[0] == "ann@rcpt.example.net"
		if tracked != (len(r.clicks) == 1 && r.pixel != "") || !strings.Contains(r.html, "/t/u/") {
			t.Errorf("%v: %d click URLs, pixel %q; tracked %v:\n%s", m.To, len(r.clicks), r.pixel, tracked, r.html)
		}
		if r.listUnsub == "" || !strings.Contains(r.text, "/t/u/") || strings.Contains(r.text, "%unsubscribe_url%") {
			t.Errorf("%v: List-Unsubscribe %q, text %q: want the unsubscribe URL in both", m.To, r.listUnsub, r.text)
		}
		verifs, err := dkim.VerifyWithOptions(bytes.NewReader(m.Data), &dkim.VerifyOptions{LookupTXT: func(name string) ([]string, error) {
			return e.App.Resolver.LookupTXT(context.Background(), name)
		}})
		if err != nil || len(verifs) != 1 || verifs[0].Err != nil {
			t.Errorf("%v: DKIM %+v, %v", m.To, verifs, err)
		}
		if tracked {
			if resp := e.hit(t, "GET", r.clicks[0], browserUA, ""); resp.StatusCode != 302 || resp.Header.Get("Location") != "https://landing.example/offer?a=1" {
				t.Errorf("the click URL answered %d → %q, want 302 to the original link", resp.StatusCode, resp.Header.Get("Location"))
			}
		}
	}
}

// TestSubmissionLimits: each message counts against
// --rate-domain-per-minute like one API send (451 4.7.0 with the wait),
// and RCPT past 1000 recipients is 452 4.5.3.
func TestSubmissionLimits(t *testing.T) {
	t.Parallel()
	e := startSubmission(t, store.SQLite, func(c *config.Config) { c.RateDomainPerMinute = 1 })
	c, err := dialSubmission(t, e, false, smtp.PlainAuth("", "alice", e.user.Key, "127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	body := submittedMessage("orders@shop.example.com", "ann@rcpt.example.net", "")
	if err := submit(c, "orders@shop.example.com", []string{"ann@rcpt.example.net"}, body); err != nil {
		t.Fatalf("first message: %v", err)
	}
	err = submit(c, "orders@shop.example.com", []string{"ann@rcpt.example.net"}, body)
	if replyCode(err) != 451 || !strings.Contains(err.Error(), "retry in") {
		t.Errorf("second message in the minute: %v, want 451 with the seconds to wait", err)
	}
	c.Reset()
	if err := c.Mail("orders@shop.example.com"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 1000; i++ {
		if err := c.Rcpt(fmt.Sprintf("r%d@rcpt.example.net", i)); err != nil {
			t.Fatalf("RCPT %d: %v", i+1, err)
		}
	}
	if err := c.Rcpt("one-too-many@rcpt.example.net"); replyCode(err) != 452 {
		t.Errorf("RCPT 1001: %v, want 452", err)
	}
}

// TestSubmissionTemplateAndSchedule: X-Postline-Template and
// X-Postline-Variables make a submitted message a template send (rendered,
// escaped in HTML, the headers gone); X-Postline-Deliver-At holds a raw
// message in the queue as scheduled; a bad time is refused naming it.
func TestSubmissionTemplateAndSchedule(t *testing.T) {
	t.Parallel()
	e := startSubmission(t, store.SQLite, nil)
	resp := e.Do(apitest.Request{Method: "POST", Path: "/api/domains/shop.example.com/templates", Auth: e.user.Auth(),
		Body: map[string]any{"name": "receipt", "subject": "Receipt for {{name}}", "text": "Thanks {{name}}", "html": "<p>Thanks {{name}}</p>"}})
	if resp.StatusCode != 201 {
		t.Fatalf("template: %d %s", resp.StatusCode, resp.Body)
	}
	c, err := dialSubmission(t, e, false, smtp.PlainAuth("", "alice", e.user.Key, "127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	msg := "From: Shop <orders@shop.example.com>\r\nTo: ann@rcpt.example.net\r\nSubject: ignored\r\n" +
		"X-Postline-Template: receipt\r\nX-Postline-Variables: {\"name\": \"<i>Ann</i>\"}\r\n\r\nignored body\r\n"
	if err := submit(c, "orders@shop.example.com", []string{"ann@rcpt.example.net"}, msg); err != nil {
		t.Fatalf("template submission: %v", err)
	}
	got := e.lastMessage(t, 1)
	if got.text != "Thanks <i>Ann</i>" || got.html != "<p>Thanks &lt;i&gt;Ann&lt;/i&gt;</p>" || subjectOf(t, got.raw) != "Receipt for <i>Ann</i>" {
		t.Errorf("rendered: text %q html %q subject %q", got.text, got.html, subjectOf(t, got.raw))
	}
	if strings.Contains(string(got.raw), "X-Postline") || strings.Contains(string(got.raw), "ignored") {
		t.Errorf("the submitted headers or body leaked:\n%s", got.raw)
	}

	at := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	if err := submit(c, "orders@shop.example.com", []string{"later@rcpt.example.net"},
		submittedMessage("orders@shop.example.com", "later@rcpt.example.net", "Message-ID: <later-1@shop.example.com>\r\nX-Postline-Deliver-At: "+at+"\r\n")); err != nil {
		t.Fatalf("scheduled submission: %v", err)
	}
	m := e.Do(apitest.Request{Method: "GET", Path: "/api/domains/shop.example.com/messages/later-1@shop.example.com", Auth: e.user.Auth()})
	if m.StatusCode != 200 || m.JSON["data"].(map[string]any)["recipients"].([]any)[0].(map[string]any)["state"] != "scheduled" {
		t.Errorf("the scheduled submission: %d %s", m.StatusCode, m.Body)
	}
	err = submit(c, "orders@shop.example.com", []string{"x@rcpt.example.net"},
		submittedMessage("orders@shop.example.com", "x@rcpt.example.net", "X-Postline-Deliver-At: soon\r\n"))
	if replyCode(err) != 554 || !strings.Contains(err.Error(), "deliver_at") {
		t.Errorf("a bad X-Postline-Deliver-At: %v", err)
	}
}

// TestSubmissionThroughNodemailer: nodemailer (npm, pinned in testdata/js)
// submits over STARTTLS with AUTH; the message arrives with its HTML,
// attachment and tag.
func TestSubmissionThroughNodemailer(t *testing.T) {
	t.Parallel()
	node, dir := jsLib(t, "nodemailer")
	e := startSubmission(t, store.SQLite, nil)
	host, port, _ := strings.Cut(e.App.Submission.Addr(false), ":")
	cmd := exec.Command(node, "nodemailer-send.js", host, port, "alice", e.user.Key, "node@rcpt.example.net")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("nodemailer: %v\n%s", err, out)
	}
	var info struct {
		MessageID string   `json:"messageId"`
		Accepted  []string `json:"accepted"`
	}
	if json.Unmarshal(out, &info) != nil || len(info.Accepted) != 1 {
		t.Fatalf("nodemailer: %s", out)
	}
	msgs, err := e.sink.WaitForMessages(ctxTimeout(t, 15*time.Second), 1)
	if err != nil {
		t.Fatal(err)
	}
	raw := string(msgs[0].Data)
	if !strings.Contains(raw, "Hello from <b>nodemailer</b>") || !strings.Contains(raw, `filename=note.txt`) && !strings.Contains(raw, `filename="note.txt"`) {
		t.Errorf("delivered:\n%s", raw)
	}
	if got := readReceivedHeader(t, msgs[0], "Message-ID"); got != info.MessageID {
		t.Errorf("Message-ID %q, nodemailer's %q", got, info.MessageID)
	}
	if entries := e.entries(t, "node@rcpt.example.net", event.Queued); len(entries) != 1 || entries[0].Tags != "nodemailer" {
		t.Errorf("log: %+v", entries)
	}
}

// hasField reports whether a message head has a field of that name.
func hasField(head, name string) bool {
	for _, line := range strings.Split(head, "\r\n") {
		if k, _, ok := strings.Cut(line, ":"); ok && strings.EqualFold(strings.TrimSpace(k), name) && !strings.HasPrefix(line, " ") && !strings.HasPrefix(line, "\t") {
			return true
		}
	}
	return false
}
