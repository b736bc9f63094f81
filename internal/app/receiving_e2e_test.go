package app_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/message"
	"github.com/postline/postline/internal/smtptest"
	"github.com/postline/postline/internal/store"
)

// inboundRig is a running server with the inbound listener, alice's
// shop.example.com receiving mail, and the DNS of the senders the tests
// write as: sender.example (SPF names the loopback client, a published
// DKIM key, DMARC p=reject) and bank.example (SPF names another address,
// DMARC p=reject, no key).
type inboundRig struct {
	*sendEnv
	addr   string
	signer *message.Signer
}

const mxHost = "mx.postline.test"

func startInbound(t *testing.T, d store.Dialect, edit func(*config.Config)) *inboundRig {
	t.Helper()
	e := startSend(t, d, false, func(c *config.Config) {
		c.SMTPListen, c.InboundMXHost, c.WebhookAllowPrivate = "127.0.0.1:0", mxHost, true
		if edit != nil {
			edit(c)
		}
	})
	key, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	priv, _ := x509.MarshalPKCS8PrivateKey(key)
	pub, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	e.DNS.AddTXT("sel._domainkey.sender.example", "v=DKIM1; k=rsa; p="+base64.StdEncoding.EncodeToString(pub))
	e.DNS.AddTXT("sender.example", "v=spf1 ip4:127.0.0.0/8 -all")
	e.DNS.AddTXT("_dmarc.sender.example", "v=DMARC1; p=reject")
	e.DNS.AddTXT("bank.example", "v=spf1 ip4:192.0.2.1 -all")
	e.DNS.AddTXT("_dmarc.bank.example", "v=DMARC1; p=reject")
	signer, err := message.NewSigner("sender.example", "sel", priv)
	if err != nil {
		t.Fatal(err)
	}
	r := &inboundRig{sendEnv: e, addr: e.App.Inbound.Addr(), signer: signer}
	r.enable(t, e.user, "shop.example.com", true)
	return r
}

// enable turns inbound on or off for the user's domain over the API.
func (r *inboundRig) enable(t *testing.T, u apitest.User, domain string, on bool) *apitest.Response {
	t.Helper()
	resp := r.Do(apitest.Request{Method: "PATCH", Path: "/api/domains/" + domain + "/inbound", Auth: u.Auth(), Body: map[string]bool{"enabled": on}})
	if resp.StatusCode != 200 {
		t.Fatalf("PATCH inbound of %s: %d %s", domain, resp.StatusCode, resp.Body)
	}
	return resp
}

// route creates a route of the user's and returns its id.
func (r *inboundRig) route(t *testing.T, u apitest.User, priority int, expression string, actions ...string) string {
	t.Helper()
	resp := r.Do(apitest.Request{Method: "POST", Path: "/api/routes", Auth: u.Auth(),
		Body: map[string]any{"priority": priority, "expression": expression, "actions": actions}})
	if resp.StatusCode != 201 {
		t.Fatalf("route %s: %d %s", expression, resp.StatusCode, resp.Body)
	}
	return resp.JSON["data"].(map[string]any)["id"].(string)
}

// smtpResult is what an SMTP client heard: each RCPT's error, then DATA's
// (not sent when no recipient was accepted).
type smtpResult struct {
	rcpt []error
	data error
	sent bool
}

func (s smtpResult) code(err error) int { return smtpCode(err) }

// deliver sends msg from `from` to rcpts as an MX would.
func deliver(t *testing.T, addr, from string, rcpts []string, msg string) smtpResult {
	t.Helper()
	c, err := smtp.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Hello("mx.sender.example"); err != nil {
		t.Fatal(err)
	}
	var res smtpResult
	if err := c.Mail(from, nil); err != nil {
		res.rcpt = []error{err}
		return res
	}
	ok := false
	for _, rc := range rcpts {
		err := c.Rcpt(rc, nil)
		res.rcpt = append(res.rcpt, err)
		ok = ok || err == nil
	}
	if !ok {
		return res
	}
	w, err := c.Data()
	if err != nil {
		res.data = err
		return res
	}
	io.WriteString(w, msg)
	res.data, res.sent = w.Close(), true
	c.Quit()
	return res
}

func crlfText(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }

// mixed is a message with a text and an HTML body and an attachment.
func mixed(from, to, subject, extraHeader string) string {
	return crlfText(extraHeader + "From: Ann Sender <" + from + ">\nTo: " + to + "\nSubject: " + subject + "\n" +
		"Message-ID: <" + subject[:min(5, len(subject))] + "-1@sender.example>\nMIME-Version: 1.0\n" +
		"Content-Type: multipart/mixed; boundary=b1\n\n--b1\nContent-Type: multipart/alternative; boundary=b2\n\n" +
		"--b2\nContent-Type: text/plain; charset=utf-8\n\nHello, café\n--b2\nContent-Type: text/html; charset=utf-8\n\n<p>Hello <b>café</b></p>\n--b2--\n" +
		"--b1\nContent-Type: application/pdf; name=\"invoice.pdf\"\nContent-Disposition: attachment; filename=\"invoice.pdf\"\n" +
		"Content-Transfer-Encoding: base64\n\n" + base64.StdEncoding.EncodeToString([]byte("%PDF-1.4 invoice 42")) + "\n--b1--\n")
}

func (r *inboundRig) sign(t *testing.T, msg string) string {
	t.Helper()
	out, err := r.signer.Sign([]byte(msg))
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func (r *inboundRig) get(t *testing.T, u apitest.User, path string) *apitest.Response {
	t.Helper()
	return r.Do(apitest.Request{Method: "GET", Path: path, Auth: u.Auth()})
}

func jsonList(resp *apitest.Response) []map[string]any {
	var out []map[string]any
	for _, v := range resp.JSON["data"].([]any) {
		out = append(out, v.(map[string]any))
	}
	return out
}

// TestReceivingStoreAndRead: a domain with inbound on lists its MX; a
// signed message from a sender whose SPF and DMARC pass is stored by a
// route, read back parsed and raw (our Authentication-Results on top, the
// sender's claim to our name renamed), its attachment downloads intact;
// its log entry lists each action's outcome, the forward "queued" with
// its post's token;
// a forgery is stored too, with the failures recorded; unknown recipients
// and a domain without inbound get 550 at RCPT; past --smtp-max-bytes,
// 552; the list filters; metrics count.
func TestReceivingStoreAndRead(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		r := startInbound(t, d, func(c *config.Config) { c.SMTPMaxBytes = 64 << 10 })
		dom := r.get(t, r.user, "/api/domains/shop.example.com").JSON["data"].(map[string]any)
		inb := dom["inbound"].(map[string]any)
		if inb["enabled"] != true || inb["receiving"] != true || inb["mx_host"] != mxHost {
			t.Fatalf("inbound of the domain: %v", inb)
		}
		var mx map[string]any
		for _, rec := range dom["dns_records"].([]any) {
			if rec.(map[string]any)["purpose"] == "inbound_mx" {
				mx = rec.(map[string]any)
			}
		}
		if mx == nil || mx["type"] != "MX" || mx["name"] != "shop.example.com" || mx["value"] != "10 "+mxHost || mx["required"] != false {
			t.Fatalf("the MX record to publish: %v", mx)
		}
		// Mailgun's domain API lists it among the receiving records.
		mg := r.Do(apitest.Request{Method: "GET", Path: "/v3/domains/shop.example.com", Auth: apitest.User{Login: "api", Key: r.user.Key}.Auth()})
		if recv, _ := mg.JSON["receiving_dns_records"].([]any); len(recv) != 1 || recv[0].(map[string]any)["value"] != mxHost ||
			recv[0].(map[string]any)["priority"] != "10" || recv[0].(map[string]any)["record_type"] != "MX" {
			t.Errorf("Mailgun's receiving records: %s", mg.Body)
		}
		// Verification checks it like the others.
		r.DNS.AddMX("shop.example.com", 10, mxHost)
		resp := r.Do(apitest.Request{Method: "POST", Path: "/api/domains/shop.example.com/verify", Auth: r.user.Auth()})
		for _, rec := range resp.JSON["data"].(map[string]any)["dns_records"].([]any) {
			if m := rec.(map[string]any); m["purpose"] == "inbound_mx" && m["status"] != "ok" {
				t.Errorf("the published MX verifies as %v", m["status"])
			}
		}
		// The test publishes no SPF for the domain, so that verification
		// unverified it: the operator's override again.
		if _, _, err := r.App.Domains.Verify(context.Background(), r.dom, true); err != nil {
			t.Fatal(err)
		}
		// The other domain of alice's takes no mail.
		r.NewDomain(r.user, "quiet.example.com")

		help := r.route(t, r.user, 1, `match_recipient("^help@shop\.example\.com$")`, "store()", `forward("https://app.example/hook")`, "stop()")
		r.route(t, r.user, 2, `match_recipient("^help@")`, "store()") // after stop(): never runs

		forgedClaim := "Authentication-Results: " + mxHost + "; dkim=pass header.d=bank.example\n"
		msg := r.sign(t, mixed("ann@sender.example", "help@shop.example.com", "Order 1001 late", forgedClaim))
		res := deliver(t, r.addr, "bounce@sender.example", []string{"help@shop.example.com", "nobody@shop.example.com", "help@quiet.example.com", "x@nowhere.example"}, msg)
		if res.rcpt[0] != nil || smtpCode(res.rcpt[1]) != 550 || smtpCode(res.rcpt[2]) != 550 || smtpCode(res.rcpt[3]) != 550 || res.data != nil {
			t.Fatalf("RCPTs %v, DATA %v; want 250, 550, 550, 550, 250", res.rcpt, res.data)
		}
		var se *smtp.SMTPError
		if errorsAs(res.rcpt[1], &se); se == nil || se.EnhancedCode != (smtp.EnhancedCode{5, 1, 1}) {
			t.Errorf("unknown recipient: %v, want 5.1.1", res.rcpt[1])
		}

		list := r.get(t, r.user, "/api/domains/shop.example.com/inbound")
		items := jsonList(list)
		if list.StatusCode != 200 || list.JSON["count"] != 1.0 || len(items) != 1 {
			t.Fatalf("inbound list: %d %s", list.StatusCode, list.Body)
		}
		it := items[0]
		if it["recipient"] != "help@shop.example.com" || it["sender"] != "bounce@sender.example" || it["from"] != "Ann Sender <ann@sender.example>" ||
			it["subject"] != "Order 1001 late" || fmt.Sprint(it["routes"]) != "["+help+"]" || it["size"].(float64) < float64(len(msg)) {
			t.Fatalf("listed message: %v", it)
		}
		id := it["id"].(string)
		one := r.get(t, r.user, "/api/domains/shop.example.com/inbound/"+id)
		m := one.JSON["data"].(map[string]any)
		auth := m["auth"].(map[string]any)
		if one.StatusCode != 200 || m["body-plain"] != "Hello, café" || m["body-html"] != "<p>Hello <b>café</b></p>" ||
			m["message-id"] != "Order-1@sender.example" || m["attachment-count"] != 1.0 ||
			auth["spf"].(map[string]any)["result"] != "pass" || auth["dkim"].([]any)[0].(map[string]any)["result"] != "pass" ||
			auth["dmarc"].(map[string]any)["result"] != "pass" || auth["dmarc"].(map[string]any)["policy"] != "reject" {
			t.Fatalf("the stored message: %d %s", one.StatusCode, one.Body)
		}
		headers := m["message-headers"].([]any)
		if first := headers[0].([]any); first[0] != "Authentication-Results" || !strings.HasPrefix(first[1].(string), mxHost+"; spf=pass") {
			t.Errorf("first header: %v", first)
		}
		att := m["attachments"].([]any)[0].(map[string]any)
		if att["filename"] != "invoice.pdf" || att["content-type"] != "application/pdf" || att["size"] != 19.0 {
			t.Errorf("attachment: %v", att)
		}
		dl := r.Do(apitest.Request{Method: "GET", Path: strings.TrimPrefix(att["url"].(string), r.URL), Auth: r.user.Auth()})
		if dl.StatusCode != 200 || string(dl.Body) != "%PDF-1.4 invoice 42" || dl.Header.Get("Content-Type") != "application/octet-stream" ||
			!strings.Contains(dl.Header.Get("Content-Disposition"), `filename=invoice.pdf`) {
			t.Errorf("attachment download: %d %q %v", dl.StatusCode, dl.Body, dl.Header)
		}
		raw := r.get(t, r.user, "/api/domains/shop.example.com/inbound/"+id+"/raw")
		if raw.StatusCode != 200 || raw.Header.Get("Content-Type") != "message/rfc822" ||
			!bytes.HasPrefix(raw.Body, []byte("Authentication-Results: "+mxHost+";\r\n\tspf=pass smtp.mailfrom=sender.example;\r\n\tdkim=pass header.d=sender.example;\r\n\tdmarc=pass header.from=sender.example\r\nReceived: from mx.sender.example ([127.0.0.1])")) ||
			!bytes.Contains(raw.Body, []byte("\r\nX-Untrusted-Authentication-Results: "+mxHost+"; dkim=pass header.d=bank.example\r\n")) ||
			!bytes.HasSuffix(raw.Body, []byte(strings.SplitN(msg, "\r\n\r\n", 2)[1])) {
			t.Fatalf("raw: %d %s\n%s", raw.StatusCode, raw.Header.Get("Content-Type"), raw.Body)
		}

		entries := r.entries(t, "help@shop.example.com", event.Received)
		if len(entries) != 1 {
			t.Fatalf("received entries: %+v", entries)
		}
		var det struct {
			Routes  []string         `json:"routes"`
			Actions []map[string]any `json:"actions"`
			Stored  string           `json:"stored_id"`
			IP      string           `json:"remote_ip"`
			Auth    map[string]any   `json:"auth"`
		}
		json.Unmarshal(entries[0].Details, &det)
		if entries[0].Sender != "bounce@sender.example" || entries[0].Subject != "Order 1001 late" || entries[0].MessageID != "Order-1@sender.example" ||
			fmt.Sprint(det.Routes) != "["+help+"]" || det.Stored != id || det.IP != "127.0.0.1" || len(det.Actions) != 3 ||
			det.Actions[0]["outcome"] != "stored" || det.Actions[1]["outcome"] != "queued" || !postToken.MatchString(fmt.Sprint(det.Actions[1]["post"])) ||
			det.Actions[1]["format"] != "mailgun" || det.Actions[1]["destination"] != "https://app.example/hook" ||
			det.Actions[2]["action"] != "stop" || det.Actions[2]["outcome"] != "done" {
			t.Fatalf("received entry: %+v %s", entries[0], entries[0].Details)
		}
		logResp := r.get(t, r.user, "/api/domains/shop.example.com/log?event_type=received")
		if logResp.StatusCode != 200 || !bytes.Contains(logResp.Body, []byte(`"event_type":"received"`)) {
			t.Errorf("the log API's received entries: %d %s", logResp.StatusCode, logResp.Body)
		}

		// A forgery of bank.example: from an address its SPF refuses,
		// unsigned. Taken and stored, the failures recorded for the reader.
		forged := crlfText("From: Bank <ceo@bank.example>\nTo: help@shop.example.com\nSubject: Wire money now\n\nPay.\n")
		if res := deliver(t, r.addr, "ceo@bank.example", []string{"help@shop.example.com"}, forged); res.data != nil {
			t.Fatalf("forgery: %v %v", res.rcpt, res.data)
		}
		fl := jsonList(r.get(t, r.user, "/api/domains/shop.example.com/inbound?subject=WIRE"))
		if len(fl) != 1 {
			t.Fatalf("the forgery by subject: %v", fl)
		}
		fa := r.get(t, r.user, "/api/domains/shop.example.com/inbound/"+fl[0]["id"].(string)).JSON["data"].(map[string]any)["auth"].(map[string]any)
		if fa["spf"].(map[string]any)["result"] != "fail" || len(fa["dkim"].([]any)) != 0 || fa["dmarc"].(map[string]any)["result"] != "fail" ||
			fa["dmarc"].(map[string]any)["policy"] != "reject" {
			t.Errorf("the forgery's results: %v", fa)
		}
		for q, want := range map[string]float64{"recipient=HELP@shop.example.com": 2, "sender=ceo@bank.example": 1, "subject=order": 1,
			"limit=1&offset=1": 2, "start=2000-01-01&end=2000-01-02": 0} {
			resp := r.get(t, r.user, "/api/domains/shop.example.com/inbound?"+q)
			if resp.StatusCode != 200 || resp.JSON["count"] != want {
				t.Errorf("?%s: %d %s, want count %v", q, resp.StatusCode, resp.Body, want)
			}
		}
		if resp := r.get(t, r.user, "/api/domains/shop.example.com/inbound?limit=0&start=yesterday"); resp.StatusCode != 422 ||
			!bytes.Contains(resp.Body, []byte(`"limit"`)) || !bytes.Contains(resp.Body, []byte(`"start"`)) {
			t.Errorf("bad parameters: %d %s", resp.StatusCode, resp.Body)
		}
		for _, p := range []string{"/inbound/" + strings.Repeat("0", 32), "/inbound/nonsense", "/inbound/" + id + "/attachments/2"} {
			if resp := r.get(t, r.user, "/api/domains/shop.example.com"+p); resp.StatusCode != 404 {
				t.Errorf("GET %s: %d", p, resp.StatusCode)
			}
		}

		// Past --smtp-max-bytes: 552, nothing stored.
		big := crlfText("From: ann@sender.example\nSubject: big\n\n") + strings.Repeat("0123456789abcdef\r\n", 5000)
		if res := deliver(t, r.addr, "ann@sender.example", []string{"help@shop.example.com"}, big); smtpCode(res.data) != 552 {
			t.Errorf("a message past the size: %v %v, want 552", res.rcpt, res.data)
		}
		// Turned off, the domain takes nothing.
		r.enable(t, r.user, "shop.example.com", false)
		if res := deliver(t, r.addr, "ann@sender.example", []string{"help@shop.example.com"}, forged); smtpCode(res.rcpt[0]) != 550 {
			t.Errorf("inbound off: %v, want 550", res.rcpt)
		}
		metrics := string(r.Do(apitest.Request{Method: "GET", Path: "/metrics"}).Body)
		for _, want := range []string{`postline_inbound_messages_total{outcome="received"} 2`, `postline_inbound_messages_total{outcome="rcpt_refused"} 3`,
			`postline_inbound_messages_total{outcome="no_route"} 1`, `postline_inbound_messages_total{outcome="too_large"} 1`} {
			if !strings.Contains(metrics, want) {
				t.Errorf("metrics lack %s", want)
			}
		}
		if c := jsonList(r.get(t, r.user, "/api/domains/shop.example.com/inbound")); len(c) != 2 {
			t.Errorf("%d stored, want the two taken", len(c))
		}
	})
}

func errorsAs(err error, se **smtp.SMTPError) {
	if e, ok := err.(*smtp.SMTPError); ok {
		*se = e
	}
}

// TestReceivingAcrossAccounts: bob's routes never see alice's mail, even
// one whose pattern names her domain, and hers never see his; each
// account's stored messages and inbound settings are 404 for the other.
func TestReceivingAcrossAccounts(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		r := startInbound(t, d, nil)
		bob := r.NewUser("bob")
		r.NewDomain(bob, "bob.example")
		r.enable(t, bob, "bob.example", true)
		// bob tries to take alice's mail; alice tries to take bob's.
		bobGreedy := r.route(t, bob, 0, `match_recipient(".*@shop\.example\.com")`, "store()")
		bobOwn := r.route(t, bob, 1, `catch_all()`, "store()")
		aliceGreedy := r.route(t, r.user, 0, `match_recipient(".*@bob\.example")`, "store()")
		aliceOwn := r.route(t, r.user, 1, `match_recipient("^sales@")`, "store()")

		msg := crlfText("From: ann@sender.example\nSubject: hello both\n\nhi\n")
		res := deliver(t, r.addr, "ann@sender.example", []string{"sales@shop.example.com", "anyone@bob.example"}, msg)
		if res.rcpt[0] != nil || res.rcpt[1] != nil || res.data != nil {
			t.Fatalf("to both: %v %v", res.rcpt, res.data)
		}
		// A recipient of alice's only bob's route would take: refused.
		if res := deliver(t, r.addr, "ann@sender.example", []string{"support@shop.example.com"}, msg); smtpCode(res.rcpt[0]) != 550 {
			t.Errorf("alice's address only bob's pattern names: %v, want 550", res.rcpt)
		}
		al := jsonList(r.get(t, r.user, "/api/domains/shop.example.com/inbound"))
		bl := jsonList(r.get(t, bob, "/api/domains/bob.example/inbound"))
		if len(al) != 1 || fmt.Sprint(al[0]["routes"]) != "["+aliceOwn+"]" || len(bl) != 1 || fmt.Sprint(bl[0]["routes"]) != "["+bobOwn+"]" {
			t.Fatalf("alice's %v, bob's %v; want each taken by the owner's own route only", al, bl)
		}
		for _, e := range append(r.entries(t, "sales@shop.example.com", event.Received), r.entries(t, "anyone@bob.example", event.Received)...) {
			if s := string(e.Details); strings.Contains(s, bobGreedy) || strings.Contains(s, aliceGreedy) {
				t.Errorf("an entry names another account's route: %s", s)
			}
		}
		for _, c := range []struct {
			u    apitest.User
			path string
		}{
			{bob, "/api/domains/shop.example.com/inbound"},
			{bob, "/api/domains/shop.example.com/inbound/" + al[0]["id"].(string)},
			{bob, "/api/domains/shop.example.com/inbound/" + al[0]["id"].(string) + "/raw"},
			{bob, "/api/domains/bob.example/inbound/" + al[0]["id"].(string)},
			{r.user, "/api/domains/bob.example/inbound"},
			{r.user, "/api/domains/shop.example.com/inbound/" + bl[0]["id"].(string)},
		} {
			if resp := r.get(t, c.u, c.path); resp.StatusCode != 404 {
				t.Errorf("%s GET %s: %d, want 404", c.u.Login, c.path, resp.StatusCode)
			}
		}
		if resp := r.Do(apitest.Request{Method: "PATCH", Path: "/api/domains/shop.example.com/inbound", Auth: bob.Auth(),
			Body: map[string]bool{"enabled": false}}); resp.StatusCode != 404 {
			t.Errorf("bob turning alice's inbound off: %d", resp.StatusCode)
		}
	})
}

// TestReceivingHeaderRoutes: a route that needs the message's header
// takes its recipient at RCPT alone in its transaction (others get 452
// 4.5.3 and come in another), decides after DATA (550 when nothing
// matches); a catch_all() decides at RCPT.
func TestReceivingHeaderRoutes(t *testing.T) {
	t.Parallel()
	r := startInbound(t, store.SQLite, nil)
	urgent := r.route(t, r.user, 0, `match_recipient("^desk@") and match_header("subject", "(?i)urgent")`, "store()")
	r.route(t, r.user, 1, `match_recipient("^orders@")`, "store()")
	res := deliver(t, r.addr, "ann@sender.example", []string{"desk@shop.example.com", "orders@shop.example.com"},
		crlfText("From: ann@sender.example\nSubject: URGENT: help\n\nnow\n"))
	if res.rcpt[0] != nil || smtpCode(res.rcpt[1]) != 452 || res.data != nil {
		t.Fatalf("after-DATA recipient then another: %v %v; want 250, 452, 250", res.rcpt, res.data)
	}
	var se *smtp.SMTPError
	if errorsAs(res.rcpt[1], &se); se == nil || se.EnhancedCode != (smtp.EnhancedCode{4, 5, 3}) {
		t.Errorf("the second recipient: %v, want 4.5.3", res.rcpt[1])
	}
	res = deliver(t, r.addr, "ann@sender.example", []string{"orders@shop.example.com", "desk@shop.example.com"},
		crlfText("From: ann@sender.example\nSubject: urgent too\n\nnow\n"))
	if res.rcpt[0] != nil || smtpCode(res.rcpt[1]) != 452 || res.data != nil {
		t.Fatalf("a recipient then an after-DATA one: %v %v; want 250, 452, 250", res.rcpt, res.data)
	}
	if res := deliver(t, r.addr, "ann@sender.example", []string{"desk@shop.example.com"},
		crlfText("From: ann@sender.example\nSubject: a question\n\nwhen\n")); res.rcpt[0] != nil || smtpCode(res.data) != 550 {
		t.Fatalf("no header route matches after DATA: %v %v; want 250 then 550", res.rcpt, res.data)
	}
	list := jsonList(r.get(t, r.user, "/api/domains/shop.example.com/inbound?recipient=desk@shop.example.com"))
	if len(list) != 1 || list[0]["subject"] != "URGENT: help" || fmt.Sprint(list[0]["routes"]) != "["+urgent+"]" {
		t.Fatalf("desk's stored: %v", list)
	}
	r.route(t, r.user, 9, "catch_all()", "store()")
	if res := deliver(t, r.addr, "ann@sender.example", []string{"desk@shop.example.com", "x@shop.example.com"},
		crlfText("From: ann@sender.example\nSubject: anything\n\nx\n")); res.rcpt[0] != nil || res.rcpt[1] != nil || res.data != nil {
		t.Fatalf("with a catch_all: %v %v; want every recipient at RCPT", res.rcpt, res.data)
	}

	// A bounce address and an inbound recipient are transactions apart,
	// in either order; an address of nowhere is still 550 first.
	if resp := r.Do(apitest.Request{Method: "PUT", Path: "/api/domains/shop.example.com/auth-domain", Auth: r.user.Auth(),
		Body: map[string]string{"host": "bounces.shop.example.com"}}); resp.StatusCode != 200 {
		t.Fatalf("auth domain: %d %s", resp.StatusCode, resp.Body)
	}
	r.send(t, basicParts("ann@rcpt.example.net"), nil)
	sent, err := r.sink.WaitForMessages(ctxTimeout(t, 15*time.Second), 1)
	if err != nil {
		t.Fatal(err)
	}
	verp := sent[0].From
	dsn := smtptest.DSN("ann@rcpt.example.net", "failed", "5.1.1", "x@y")
	for _, rcpts := range [][]string{{verp, "x@shop.example.com"}, {"x@shop.example.com", verp}} {
		if res := deliver(t, r.addr, "", append(rcpts, "y@nowhere.example"), dsn); res.rcpt[0] != nil || smtpCode(res.rcpt[1]) != 452 ||
			smtpCode(res.rcpt[2]) != 550 || res.data != nil {
			t.Errorf("RCPT %v: %v %v; want 250, 452, 550, then DATA 250", rcpts, res.rcpt, res.data)
		}
	}
	if b := r.entries(t, "ann@rcpt.example.net", event.Bounced); len(b) != 1 {
		t.Errorf("the bounce was recorded %d times, want once", len(b))
	}
}

// TestReceivingLimits: the client address's budget (421 4.7.0 past it,
// the connection closed), the account's stored bytes (452 4.2.2, nothing
// recorded), retention (a stored message is gone after it), and a webhook
// that names received gets the entries.
func TestReceivingLimits(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		r := startInbound(t, d, func(c *config.Config) {
			c.InboundPerIPPerMinute, c.InboundStoreBytesPerAccount, c.InboundRetention = 4, 64<<10, 8*time.Second
		})
		var mu sync.Mutex
		var posted []map[string]any
		hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			var batch struct {
				Events []map[string]any `json:"events"`
			}
			json.NewDecoder(req.Body).Decode(&batch)
			mu.Lock()
			posted = append(posted, batch.Events...)
			mu.Unlock()
		}))
		defer hook.Close()
		if resp := r.Do(apitest.Request{Method: "POST", Path: "/api/domains/shop.example.com/webhooks", Auth: r.user.Auth(),
			Body: map[string]any{"url": hook.URL, "event_types": []string{"received"}}}); resp.StatusCode != 201 {
			t.Fatalf("webhook: %d %s", resp.StatusCode, resp.Body)
		}
		r.route(t, r.user, 0, "catch_all()", "store()")
		// The budget is a fixed one-minute window: its five transactions
		// must fall in one.
		if sec := time.Now().Second(); sec > 45 {
			time.Sleep(time.Duration(61-sec) * time.Second)
		}
		body := strings.Repeat(strings.Repeat("x", 1022)+"\r\n", 30)
		msg := func(i int) string {
			return crlfText(fmt.Sprintf("From: ann@sender.example\nSubject: n%d\n\n", i)) + body + "\r\n"
		}
		if res := deliver(t, r.addr, "ann@sender.example", []string{"a@shop.example.com"}, msg(1)); res.data != nil {
			t.Fatalf("first: %v %v", res.rcpt, res.data)
		}
		if res := deliver(t, r.addr, "ann@sender.example", []string{"a@shop.example.com"}, msg(2)); res.data != nil {
			t.Fatalf("second: %v %v", res.rcpt, res.data)
		}
		stored := jsonList(r.get(t, r.user, "/api/domains/shop.example.com/inbound"))
		if len(stored) != 2 {
			t.Fatalf("stored: %v", stored)
		}
		id := stored[0]["id"].(string)
		res := deliver(t, r.addr, "ann@sender.example", []string{"a@shop.example.com"}, msg(3))
		var se *smtp.SMTPError
		if errorsAs(res.data, &se); se == nil || se.Code != 452 || se.EnhancedCode != (smtp.EnhancedCode{4, 2, 2}) {
			t.Fatalf("past the account's stored bytes: %v %v; want 452 4.2.2", res.rcpt, res.data)
		}
		if n := len(r.entries(t, "a@shop.example.com", event.Received)); n != 2 {
			t.Errorf("%d received entries, want 2: the refused message records nothing", n)
		}
		// The fourth transaction is within the budget of 4; the fifth is not.
		if res := deliver(t, r.addr, "ann@sender.example", []string{"nobody-route@quiet.example"}, msg(4)); smtpCode(res.rcpt[0]) != 550 {
			t.Fatalf("a domain not ours: %v", res.rcpt)
		}
		res = deliver(t, r.addr, "ann@sender.example", []string{"a@shop.example.com"}, msg(4))
		if smtpCode(res.data) != 452 {
			t.Fatalf("fourth: %v %v", res.rcpt, res.data)
		}
		res = deliver(t, r.addr, "ann@sender.example", []string{"a@shop.example.com"}, msg(5))
		if errorsAs(res.rcpt[0], &se); se == nil || se.Code != 421 || se.EnhancedCode != (smtp.EnhancedCode{4, 7, 0}) {
			t.Fatalf("past the address's budget: %v; want 421 4.7.0", res.rcpt)
		}
		// The webhook got both received entries.
		deadline := time.Now().Add(15 * time.Second)
		for {
			mu.Lock()
			n := len(posted)
			mu.Unlock()
			if n >= 2 || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		mu.Lock()
		if len(posted) != 2 || posted[0]["event_type"] != "received" || posted[0]["recipient"] != "a@shop.example.com" {
			t.Errorf("webhook posts: %v", posted)
		}
		mu.Unlock()
		// Retention: gone from the API at once past it, and from the table
		// once the pruner ran.
		deadline = time.Now().Add(20 * time.Second)
		for {
			var n int
			r.App.DB.Reader().QueryRowContext(context.Background(), `SELECT COUNT(*) FROM inbound_messages`).Scan(&n)
			get := r.get(t, r.user, "/api/domains/shop.example.com/inbound/"+id)
			if n == 0 && get.StatusCode == 404 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("after the retention: %d rows, GET %d", n, get.StatusCode)
			}
			time.Sleep(200 * time.Millisecond)
		}
		if list := r.get(t, r.user, "/api/domains/shop.example.com/inbound"); list.JSON["count"] != 0.0 {
			t.Errorf("the list after the retention: %s", list.Body)
		}
	})
}
