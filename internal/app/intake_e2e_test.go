package app_test

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"mime/multipart"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/smtptest"
	"github.com/postline/postline/internal/store"
)

// rawSMTP is an SMTP client that writes exactly the bytes it is given,
// so a test decides what a bare CR looks like on the wire.
type rawSMTP struct {
	t    *testing.T
	conn net.Conn
	r    *textproto.Reader
}

func dialRawSMTP(t *testing.T, conn net.Conn) *rawSMTP {
	t.Helper()
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	s := &rawSMTP{t: t, conn: conn, r: textproto.NewReader(bufio.NewReader(conn))}
	s.reply() // greeting
	return s
}

// reply reads one (possibly multi-line) reply: its code and text.
func (s *rawSMTP) reply() (int, string) {
	s.t.Helper()
	code, msg, err := s.r.ReadResponse(0)
	if err != nil && code == 0 {
		s.t.Fatalf("reading a reply: %v", err)
	}
	return code, msg
}

// send writes b as it is and reads the reply.
func (s *rawSMTP) send(b string) (int, string) {
	s.t.Helper()
	if _, err := s.conn.Write([]byte(b)); err != nil {
		s.t.Fatal(err)
	}
	return s.reply()
}

// must sends a command that has to succeed.
func (s *rawSMTP) must(line string) {
	s.t.Helper()
	if code, msg := s.send(line + "\r\n"); code >= 400 {
		s.t.Fatalf("%s: %d %s", line, code, msg)
	}
}

// message runs one transaction: DATA (msg dot-stuffed as it is, then
// CRLF.CRLF) or BDAT (msg as one LAST chunk), and returns the final reply.
func (s *rawSMTP) message(bdat bool, from string, rcpts []string, msg string) (int, string) {
	s.t.Helper()
	s.must("MAIL FROM:<" + from + ">")
	for _, r := range rcpts {
		s.must("RCPT TO:<" + r + ">")
	}
	if bdat {
		return s.send(fmt.Sprintf("BDAT %d LAST\r\n%s", len(msg), msg))
	}
	if code, text := s.send("DATA\r\n"); code != 354 {
		s.t.Fatalf("DATA: %d %s", code, text)
	}
	stuffed := strings.ReplaceAll(msg, "\r\n.", "\r\n..")
	if strings.HasPrefix(stuffed, ".") {
		stuffed = "." + stuffed
	}
	return s.send(stuffed + "\r\n.\r\n")
}

// quit ends the session and returns every reply still to come: only the
// 221, unless the server ran commands hidden in a message.
func (s *rawSMTP) quit() []int {
	s.t.Helper()
	s.conn.Write([]byte("QUIT\r\n"))
	var codes []int
	for {
		code, _, err := s.r.ReadResponse(0)
		if code == 0 || err != nil && code == 0 {
			return codes
		}
		codes = append(codes, code)
		if code == 221 {
			return codes
		}
	}
}

// manySessions lifts the per-address and per-account session bounds for
// tests that hold many sessions from 127.0.0.1.
func manySessions(c *config.Config) {
	c.SMTPMaxConnectionsPerIP, c.SubmissionSessionsPerAccount = 1000, 1000
}

// submissionSession is an authenticated session on the implicit TLS
// submission listener.
func submissionSession(t *testing.T, e *sendEnv, login, key string) *rawSMTP {
	t.Helper()
	conn, err := tls.Dial("tcp", e.App.Submission.Addr(true), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // the loopback test certificate
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	s := dialRawSMTP(t, conn)
	s.must("EHLO client.example")
	s.must("AUTH PLAIN " + base64.StdEncoding.EncodeToString([]byte("\x00"+login+"\x00"+key)))
	return s
}

// mimeSend posts a message to /v3/{domain}/messages.mime.
func mimeSend(e *sendEnv, key, to, msg string) *apitest.Response {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	mw.WriteField("to", to)
	w, _ := mw.CreateFormFile("message", "message.mime")
	w.Write([]byte(msg))
	mw.Close()
	return e.Do(apitest.Request{Method: "POST", Path: "/v3/shop.example.com/messages.mime", Auth: apitest.User{Login: "api", Key: key}.Auth(),
		Body: buf.Bytes(), Header: http.Header{"Content-Type": {mw.FormDataContentType()}}})
}

const resentDate = "Resent-Date: Tue, 24 Nov 2026 11:00:00 +0000\r\n"

// TestSenderRulesOnEveryDoor: a message that speaks for another tenant
// (a second From in any case, a Sender, Resent-From or Resent-Sender at a
// domain that is not the account's verified one) is refused naming the
// header on every door: SMTP DATA and BDAT (550 5.7.1), messages.mime
// (400), the /v3/ API's h: fields (400) and the native API's headers
// (422). What the account may say goes through, its client-written trace
// and authentication fields removed; nothing refused reaches the sink.
func TestSenderRulesOnEveryDoor(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		// Each case opens its own session and leaves it open until the test
		// ends: more than one address's and one account's bound.
		e := startSubmission(t, d, manySessions)
		bob := e.NewUser("bob")
		e.NewDomain(bob, "bob.example.org")
		e.NewDomain(e.user, "mine.example.net") // alice's other verified domain
		body := "Subject: s\r\n\r\nbody\r\n"
		refused := []struct{ name, head, header string }{
			{"a second From", "From: me@shop.example.com\r\nFrom: ceo@bob.example.org\r\n", "From"},
			{"a second from in lower case", "From: me@shop.example.com\r\nfrom: ceo@bob.example.org\r\n", "From"},
			{"FROM in upper case", "FROM: ceo@bob.example.org\r\n", "From"},
			{"a second address in From", "From: me@shop.example.com, ceo@bob.example.org\r\n", "From"},
			{"Sender of another tenant", "From: me@shop.example.com\r\nSENDER: ceo@bob.example.org\r\n", "Sender"},
			{"two Sender", "From: me@shop.example.com\r\nSender: a@shop.example.com\r\nSender: b@shop.example.com\r\n", "Sender"},
			{"Resent-From of another tenant", "From: me@shop.example.com\r\nresent-from: ceo@bob.example.org\r\n" + resentDate, "Resent-From"},
			{"Resent-Sender of another tenant", "From: me@shop.example.com\r\nResent-From: me@shop.example.com\r\nResent-Sender: ceo@bob.example.org\r\n" + resentDate, "Resent-Sender"},
			{"two Resent-From in a block", "From: me@shop.example.com\r\nResent-From: me@shop.example.com\r\nResent-From: ceo@bob.example.org\r\n" + resentDate, "Resent-From"},
		}
		for _, c := range refused {
			msg := c.head + "To: victim@rcpt.example.net\r\n" + body
			for _, bdat := range []bool{false, true} {
				s := submissionSession(t, e, "alice", e.user.Key)
				code, text := s.message(bdat, "me@shop.example.com", []string{"victim@rcpt.example.net"}, msg)
				if code != 550 || !strings.HasPrefix(text, "5.7.1 ") || !strings.Contains(text, c.header) {
					t.Errorf("%s (BDAT %v): %d %s, want 550 5.7.1 naming %s", c.name, bdat, code, text, c.header)
				}
			}
			r := mimeSend(e, e.user.Key, "victim@rcpt.example.net", msg)
			if m := fmt.Sprint(r.JSON["message"]); r.StatusCode != 400 || !strings.Contains(m, c.header) {
				t.Errorf("%s (messages.mime): %d %s, want 400 naming %s", c.name, r.StatusCode, r.Body, c.header)
			}
		}

		mg := func(form url.Values) *apitest.Response {
			for k, v := range map[string]string{"from": "news@shop.example.com", "to": "victim@rcpt.example.net", "subject": "s", "text": "t"} {
				form.Set(k, v)
			}
			return e.Do(apitest.Request{Method: "POST", Path: "/v3/shop.example.com/messages", Auth: apitest.User{Login: "api", Key: e.user.Key}.Auth(),
				Body: form.Encode(), Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}})
		}
		for param, form := range map[string]url.Values{
			"h:Resent-From":   {"h:Resent-From": {"ceo@bob.example.org"}, "h:Resent-Date": {"Tue, 24 Nov 2026 11:00:00 +0000"}},
			"h:Resent-Sender": {"h:Resent-Sender": {"Boss <ceo@bob.example.org>"}},
			"h:Sender":        {"h:Sender": {"ceo@bob.example.org"}},
			"h:resent-from":   {"h:Resent-From": {"me@shop.example.com"}, "h:resent-from": {"ceo@bob.example.org"}},
		} {
			if r := mg(form); r.StatusCode != 400 || !strings.Contains(fmt.Sprint(r.JSON["message"]), param) {
				t.Errorf("/v3/ %s: %d %s, want 400 naming it", param, r.StatusCode, r.Body)
			}
		}
		native := func(headers string) *apitest.Response {
			return e.send(t, append(basicParts("victim@rcpt.example.net"), part{name: "headers", value: headers}), nil)
		}
		for field, headers := range map[string]string{
			"headers.Resent-From":   `{"Resent-From": "ceo@bob.example.org"}`,
			"headers.Resent-Sender": `{"Resent-Sender": "ceo@bob.example.org"}`,
			"headers.resent-from":   `{"Resent-From": "me@shop.example.com", "resent-from": "ceo@bob.example.org"}`,
		} {
			r := native(headers)
			if errs, _ := r.JSON["errors"].(map[string]any); r.StatusCode != 422 || errs[field] == nil {
				t.Errorf("native %s: %d %s, want 422 naming %s", headers, r.StatusCode, r.Body, field)
			}
		}
		// A key limited to shop.example.com speaks for that domain only.
		limited, _, err := e.App.Accounts.CreateKeyWith(t.Context(), "alice", account.KeyOptions{Domains: []string{"shop.example.com"}})
		if err != nil {
			t.Fatal(err)
		}
		s := submissionSession(t, e, "alice", limited)
		if code, text := s.message(false, "me@shop.example.com", []string{"victim@rcpt.example.net"},
			"From: me@shop.example.com\r\nSender: me@mine.example.net\r\n"+body); code != 550 || !strings.Contains(text, "Sender") {
			t.Errorf("a Sender outside the key's domains: %d %s, want 550 naming Sender", code, text)
		}

		// What the account may say: its other domain in Sender and a resent
		// block; the trace and authentication fields a client wrote go.
		ok := "From: Shop <me@shop.example.com>\r\nSender: desk@mine.example.net\r\nResent-From: me@shop.example.com\r\n" + resentDate +
			"Received: from mx.bob.example.org\r\nReturn-Path: <ceo@bob.example.org>\r\nDKIM-Signature: v=1; d=bob.example.org; s=x; b=forged\r\n" +
			"ARC-Seal: i=1; cv=none; d=bob.example.org\r\nAuthentication-Results: mx.bob.example.org; dmarc=pass\r\n" +
			"X-Postline-Sender: ceo@bob.example.org\r\nX-Mailer: kept\r\nTo: %s\r\n" + body
		for i, to := range []string{"data@rcpt.example.net", "bdat@rcpt.example.net"} {
			s := submissionSession(t, e, "alice", e.user.Key)
			if code, text := s.message(i == 1, "me@shop.example.com", []string{to}, fmt.Sprintf(ok, to)); code != 250 {
				t.Errorf("%s: %d %s", to, code, text)
			}
		}
		if r := mimeSend(e, e.user.Key, "mime@rcpt.example.net", fmt.Sprintf(ok, "mime@rcpt.example.net")); r.StatusCode != 200 {
			t.Errorf("messages.mime: %d %s", r.StatusCode, r.Body)
		}
		if r := mg(url.Values{"h:Resent-From": {"desk@mine.example.net"}, "h:Resent-Date": {"Tue, 24 Nov 2026 11:00:00 +0000"}}); r.StatusCode != 200 {
			t.Errorf("/v3/ h:Resent-From at the account's other domain: %d %s", r.StatusCode, r.Body)
		}
		if r := native(`{"Resent-From": "desk@mine.example.net", "Resent-Date": "Tue, 24 Nov 2026 11:00:00 +0000"}`); r.StatusCode != 202 {
			t.Errorf("native Resent-From at the account's other domain: %d %s", r.StatusCode, r.Body)
		}
		msgs, err := e.sink.WaitForMessages(ctxTimeout(t, 20*time.Second), 5)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			head, _, _ := strings.Cut(string(m.Data), "\r\n\r\n")
			if m.To[0] == "victim@rcpt.example.net" {
				continue // the two API sends, checked below
			}
			for _, gone := range []string{"Received", "Return-Path", "ARC-Seal", "Authentication-Results", "X-Postline-Sender"} {
				if hasField(head, gone) {
					t.Errorf("%v: the client's %s reached the recipient:\n%s", m.To, gone, head)
				}
			}
			if strings.Contains(head, "forged") || !strings.Contains(head, "X-Mailer: kept") || !strings.Contains(head, "Sender: desk@mine.example.net") {
				t.Errorf("%v: header\n%s", m.To, head)
			}
		}
		time.Sleep(300 * time.Millisecond) // a refused message would have been queued by now, and sent
		for _, m := range e.sink.Messages() {
			if strings.Contains(string(m.Data), "ceo@bob.example.org") {
				t.Errorf("a message speaking for bob reached %v:\n%s", m.To, m.Data)
			}
		}
		if n := len(e.sink.Messages()); n != 5 {
			t.Errorf("the sink has %d messages, want the 5 accepted", n)
		}
		if q := e.entries(t, "victim@rcpt.example.net", event.Queued); len(q) != 2 {
			t.Errorf("victim@ has %d queued entries, want the 2 accepted API sends", len(q))
		}
	})
}

// TestSmugglingRefused: a message with a bare CR (\r.\r\n or \r\n\r.\r\n
// followed by a second transaction) or a NUL is refused whole, 550 5.6.0
// over SMTP submission (DATA and BDAT) and 400 through messages.mime; the
// hidden commands never run and nothing reaches the sink.
func TestSmugglingRefused(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		e := startSubmission(t, d, nil)
		hidden := "MAIL FROM:<ceo@shop.example.com>\r\nRCPT TO:<smuggled@rcpt.example.net>\r\nDATA\r\n" +
			"From: ceo@shop.example.com\r\nTo: smuggled@rcpt.example.net\r\nSubject: smuggled\r\n\r\nPay now.\r\n"
		head := "From: me@shop.example.com\r\nTo: ann@rcpt.example.net\r\nSubject: hi\r\n\r\nHello.\r\n"
		for name, msg := range map[string]string{
			`\r.\r\n`:     head + "tail\r.\r\n" + hidden,
			`\r\n\r.\r\n`: head + "\r.\r\n" + hidden,
			"NUL":         head + "nul\x00here\r\n",
		} {
			for _, bdat := range []bool{false, true} {
				s := submissionSession(t, e, "alice", e.user.Key)
				code, text := s.message(bdat, "me@shop.example.com", []string{"ann@rcpt.example.net"}, msg)
				if code != 550 || !strings.HasPrefix(text, "5.6.0 ") {
					t.Errorf("%s (BDAT %v): %d %s, want 550 5.6.0", name, bdat, code, text)
				}
				if codes := s.quit(); len(codes) != 1 || codes[0] != 221 {
					t.Errorf("%s (BDAT %v): replies after the message %v, want only QUIT's 221", name, bdat, codes)
				}
			}
			if r := mimeSend(e, e.user.Key, "ann@rcpt.example.net", msg); r.StatusCode != 400 || !strings.Contains(fmt.Sprint(r.JSON["message"]), "SMTP smuggling") {
				t.Errorf("%s (messages.mime): %d %s, want 400", name, r.StatusCode, r.Body)
			}
		}
		// A clean message on the same path arrives, and it alone.
		s := submissionSession(t, e, "alice", e.user.Key)
		if code, text := s.message(false, "me@shop.example.com", []string{"ann@rcpt.example.net"}, head); code != 250 {
			t.Fatalf("a clean message: %d %s", code, text)
		}
		if _, err := e.sink.WaitForMessages(ctxTimeout(t, 15*time.Second), 1); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
		if msgs := e.sink.Messages(); len(msgs) != 1 || strings.Contains(string(msgs[0].Data), "smuggled") {
			t.Errorf("the sink got %d messages (want the clean one only): %+v", len(msgs), msgs)
		}
		for _, rc := range []string{"smuggled@rcpt.example.net", "ann@rcpt.example.net"} {
			want := map[string]int{"smuggled@rcpt.example.net": 0, "ann@rcpt.example.net": 1}[rc]
			if q := e.entries(t, rc, event.Queued); len(q) != want {
				t.Errorf("%s: %d queued entries, want %d", rc, len(q), want)
			}
		}
	})
}

// TestSmugglingRefusedInbound: the inbound listener refuses a report with
// a bare CR (hiding a second transaction behind \r.\r\n or \r\n\r.\r\n)
// or a NUL with 550 5.6.0, runs none of the hidden commands and records
// nothing; the same report without them is recorded.
func TestSmugglingRefusedInbound(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		e := startSend(t, d, false, func(c *config.Config) { c.SMTPListen = "127.0.0.1:0" })
		if r := e.Do(apitest.Request{Method: "PUT", Path: "/api/domains/shop.example.com/auth-domain", Auth: e.user.Auth(),
			Body: map[string]string{"host": "bounces.shop.example.com"}}); r.StatusCode != 200 {
			t.Fatalf("set auth domain: %d %s", r.StatusCode, r.Body)
		}
		e.send(t, basicParts("ann@rcpt.example.net", "bob@rcpt.example.net"), nil)
		msgs, err := e.sink.WaitForMessages(ctxTimeout(t, 15*time.Second), 2)
		if err != nil {
			t.Fatal(err)
		}
		verp, msgID := map[string]string{}, map[string]string{}
		for _, m := range msgs {
			verp[m.To[0]], msgID[m.To[0]] = m.From, strings.Trim(readReceivedHeader(t, m, "Message-Id"), "<>")
			e.chain(t, m.To[0], event.Delivered)
		}
		dsn := func(rcpt string) string { return smtptest.DSN(rcpt, "failed", "5.1.1", msgID[rcpt]) }
		// The hidden transaction would bounce bob, whom the visible report
		// does not name.
		hidden := "MAIL FROM:<>\r\nRCPT TO:<" + verp["bob@rcpt.example.net"] + ">\r\nDATA\r\n" + dsn("bob@rcpt.example.net")
		for name, msg := range map[string]string{
			`\r.\r\n`:     "Subject: hi\r\n\r\ntext\r.\r\n" + hidden,
			`\r\n\r.\r\n`: "Subject: hi\r\n\r\n\r.\r\n" + hidden,
			"NUL":         strings.Replace(dsn("ann@rcpt.example.net"), "5.1.1", "5.1.1\x00", 1),
		} {
			conn, err := net.Dial("tcp", e.App.Inbound.Addr())
			if err != nil {
				t.Fatal(err)
			}
			s := dialRawSMTP(t, conn)
			s.must("EHLO mx.rcpt.example.net")
			if code, text := s.message(false, "", []string{verp["ann@rcpt.example.net"]}, msg); code != 550 || !strings.HasPrefix(text, "5.6.0 ") {
				t.Errorf("%s: %d %s, want 550 5.6.0", name, code, text)
			}
			if codes := s.quit(); len(codes) != 1 || codes[0] != 221 {
				t.Errorf("%s: replies after the message %v, want only QUIT's 221", name, codes)
			}
		}
		for _, rc := range []string{"ann@rcpt.example.net", "bob@rcpt.example.net"} {
			if b := e.entries(t, rc, event.Bounced); len(b) != 0 {
				t.Errorf("%s: bounced by a refused report: %+v", rc, b)
			}
		}
		if err := smtpTo(t, e.App.Inbound.Addr(), []string{verp["ann@rcpt.example.net"]}, dsn("ann@rcpt.example.net")); err != nil {
			t.Fatalf("the clean report: %v", err)
		}
		if b := e.entries(t, "ann@rcpt.example.net", event.Bounced); len(b) != 1 {
			t.Errorf("ann after the clean report: %+v, want one bounced entry", b)
		}
		if !strings.Contains(string(e.Do(apitest.Request{Method: "GET", Path: "/metrics"}).Body), `postline_inbound_messages_total{outcome="unsafe_bytes"} 3`) {
			t.Error(`metrics lack postline_inbound_messages_total{outcome="unsafe_bytes"} 3`)
		}
	})
}
