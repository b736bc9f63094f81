package main

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-message/mail"

	"github.com/postline/postline/internal/smtptest"
	"github.com/postline/postline/internal/testutil"
)

var noFollow = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func (r *deliveryRig) call(t *testing.T, method, u, contentType string, body io.Reader, auth bool) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if auth {
		req.SetBasicAuth("alice", r.key)
	}
	req.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0")
	resp, err := noFollow.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

func (r *deliveryRig) sendHTML(t *testing.T, srv *server, to, html string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for k, v := range map[string]string{"from": "orders@shop.example.com", "to": to, "subject": "Hello", "text": "Hi", "html": html} {
		mw.WriteField(k, v)
	}
	mw.Close()
	if code, _, b := r.call(t, "POST", "http://"+srv.addr+"/api/domains/shop.example.com/message", mw.FormDataContentType(), &buf, true); code != 202 {
		t.Fatalf("send to %s: %d %s", to, code, b)
	}
}

// logTypes returns recipient's log entry types, oldest first.
func (r *deliveryRig) logTypes(t *testing.T, srv *server, recipient string) []string {
	t.Helper()
	code, _, b := r.call(t, "GET", "http://"+srv.addr+"/api/domains/shop.example.com/log?recipient="+url.QueryEscape(recipient), "", nil, true)
	var page struct {
		Data []struct {
			EventType string `json:"event_type"`
		} `json:"data"`
	}
	if code != 200 || json.Unmarshal(b, &page) != nil {
		t.Fatalf("log: %d %s", code, b)
	}
	var out []string
	for i := len(page.Data) - 1; i >= 0; i-- {
		out = append(out, page.Data[i].EventType)
	}
	return out
}

func (r *deliveryRig) waitLog(t *testing.T, srv *server, recipient, want string) []string {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		types := r.logTypes(t, srv, recipient)
		if strings.Contains(strings.Join(types, ","), want) {
			return types
		}
		if time.Now().After(deadline) {
			t.Fatalf("log of %s = %v, never contained %s", recipient, types, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (r *deliveryRig) messageTo(t *testing.T, rcpt string, n int) smtptest.Message {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		var got []smtptest.Message
		for _, m := range r.sink.Messages() {
			if m.To[0] == rcpt {
				got = append(got, m)
			}
		}
		if len(got) >= n {
			return got[n-1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s received %d messages, want %d", rcpt, len(got), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func htmlOf(t *testing.T, raw []byte) (html string, h mail.Header) {
	t.Helper()
	mr, err := mail.CreateReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	for {
		p, err := mr.NextPart()
		if err != nil {
			break
		}
		if ct, _, _ := p.Header.(*mail.InlineHeader).ContentType(); ct == "text/html" {
			b, _ := io.ReadAll(p.Body)
			return string(b), mr.Header
		}
	}
	t.Fatal("no HTML part")
	return "", mr.Header
}

// The whole feedback loop through the real binary: tracking URLs from the
// received message, hit over HTTP; a DSN by SMTP to --smtp-listen; the
// suppressions they make; whitelisting.
func TestBinaryTrackingAndBounces(t *testing.T) {
	t.Parallel()
	rig := newDeliveryRig(t, map[string]string{"POSTLINE_DATA_DIR": t.TempDir()})
	for _, args := range [][]string{
		{"domain", "track", "shop.example.com", "--opens", "on", "--clicks", "on", "--unsubscribe", "on"},
		{"domain", "set-auth", "shop.example.com", "bounces.shop.example.com"}} {
		if code, _, errs := cliEnv(t, rig.vars, args...); code != 0 {
			t.Fatalf("%v: %s", args, errs)
		}
	}
	inbound := testutil.FreeAddr(t)
	srv := startServe(t, rig.env(), "--smtp-listen", inbound)
	base := "http://" + srv.addr

	rig.sendHTML(t, srv, "ann@rcpt.example.net", `<p>Hi</p><a href="https://landing.example/offer">Offer</a>`)
	m := rig.messageTo(t, "ann@rcpt.example.net", 1)
	html, h := htmlOf(t, m.Data)
	click := regexp.MustCompile(`href="(` + regexp.QuoteMeta(base) + `/t/c/[^"]+)"`).FindStringSubmatch(html)
	pixel := regexp.MustCompile(`src="(` + regexp.QuoteMeta(base) + `/t/o/[^"]+)"`).FindStringSubmatch(html)
	unsub := regexp.MustCompile(`<(` + regexp.QuoteMeta(base) + `/t/u/[^>]+)>`).FindStringSubmatch(h.Get("List-Unsubscribe"))
	if click == nil || pixel == nil || unsub == nil {
		t.Fatalf("tracking URLs missing: html %s, List-Unsubscribe %q", html, h.Get("List-Unsubscribe"))
	}
	if code, hdr, _ := rig.call(t, "GET", pixel[1], "", nil, false); code != 200 || hdr.Get("Content-Type") != "image/gif" {
		t.Errorf("pixel: %d %s", code, hdr.Get("Content-Type"))
	}
	if code, hdr, _ := rig.call(t, "GET", click[1], "", nil, false); code != 302 || hdr.Get("Location") != "https://landing.example/offer" {
		t.Errorf("click: %d → %q", code, hdr.Get("Location"))
	}
	forged := click[1][:len(click[1])-3] + "AAA"
	if code, _, _ := rig.call(t, "GET", forged, "", nil, false); code != 404 {
		t.Errorf("forged click token: %d, want 404", code)
	}
	if code, _, b := rig.call(t, "POST", unsub[1], "application/x-www-form-urlencoded", strings.NewReader("List-Unsubscribe=One-Click"), false); code != 200 {
		t.Errorf("one-click unsubscribe: %d %s", code, b)
	}
	types := rig.waitLog(t, srv, "ann@rcpt.example.net", "unsubscribed")
	if got := strings.Join(types, ","); got != "queued,send,delivered,opened,clicked,unsubscribed" {
		t.Errorf("ann's log = %s", got)
	}
	if code, _, b := rig.call(t, "GET", base+"/api/domains/shop.example.com/suppressions/unsubscribes", "", nil, true); code != 200 ||
		!strings.Contains(string(b), `"recipient":"ann@rcpt.example.net"`) {
		t.Errorf("unsubscribes: %d %s", code, b)
	}

	// bob's message bounces later: a DSN to the bounce address it was sent from.
	rig.sendHTML(t, srv, "bob@rcpt.example.net", "<p>Hi</p>")
	bm := rig.messageTo(t, "bob@rcpt.example.net", 1)
	if !strings.HasSuffix(bm.From, "@bounces.shop.example.com") {
		t.Fatalf("MAIL FROM %q is not a bounce address", bm.From)
	}
	_, bh := htmlOf(t, bm.Data)
	if err := smtptest.Deliver(inbound, []string{bm.From}, smtptest.DSN("bob@rcpt.example.net", "failed", "5.1.1",
		strings.Trim(bh.Get("Message-Id"), "<>"))); err != nil {
		t.Fatalf("DSN refused: %v", err)
	}
	rig.waitLog(t, srv, "bob@rcpt.example.net", "delivered,bounced")
	if code, _, b := rig.call(t, "GET", base+"/api/domains/shop.example.com/suppressions?type=bounce", "", nil, true); code != 200 ||
		!strings.Contains(string(b), `"recipient":"bob@rcpt.example.net"`) {
		t.Errorf("bounces: %d %s", code, b)
	}
	rig.sendHTML(t, srv, "bob@rcpt.example.net", "<p>Again</p>")
	rig.waitLog(t, srv, "bob@rcpt.example.net", "bounced,failed") // suppressed at intake: no job
	if code, _, b := rig.call(t, "POST", base+"/api/domains/shop.example.com/suppressions/whitelist", "application/json",
		strings.NewReader(`{"recipient":"bob@rcpt.example.net"}`), true); code >= 300 {
		t.Fatalf("whitelist: %d %s", code, b)
	}
	rig.sendHTML(t, srv, "bob@rcpt.example.net", "<p>Once more</p>")
	rig.messageTo(t, "bob@rcpt.example.net", 2)
	srv.stop(t)
}
