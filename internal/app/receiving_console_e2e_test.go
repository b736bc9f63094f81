package app_test

import (
	"context"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/postline/postline/internal/store"
)

// TestConsoleReceivedMail: the domain page turns receiving on and names
// the MX to publish; a stored message is listed, shown with its text,
// authentication results, header and attachments, its HTML in a
// sandboxed frame whose own policy loads nothing from the network (an
// inline image becomes a data: URL), its attachment downloads intact and
// never as a page; another account's message is a 404 page.
func TestConsoleReceivedMail(t *testing.T) {
	t.Parallel()
	r := startInbound(t, store.SQLite, nil)
	r.enable(t, r.user, "shop.example.com", false)
	b := &browser{t: t, base: r.URL}
	b.signIn("alice", r.user.Key, "/")
	_, page := b.do("GET", "/domains/shop.example.com", nil, nil)
	if !strings.Contains(page, "Receiving mail") || !strings.Contains(page, "<code>"+mxHost+"</code>") {
		t.Fatalf("the domain page has no receiving section naming the MX: %s", page)
	}
	csrf := csrfRE.FindStringSubmatch(page)[1]
	if resp, _ := b.do("POST", "/domains/shop.example.com/settings", url.Values{"csrf": {csrf}, "section": {"inbound"}, "inbound": {"on"}}, nil); resp.StatusCode != 303 {
		t.Fatalf("turning receiving on: %d", resp.StatusCode)
	}
	if d, _ := r.App.Domains.Owned(context.Background(), r.user.ID, "shop.example.com"); !d.Receives() {
		t.Fatal("the form did not turn receiving on")
	}
	_, page = b.do("GET", "/domains/shop.example.com", nil, nil)
	if !strings.Contains(page, "receiving mail") || !strings.Contains(page, "10 "+mxHost) {
		t.Errorf("the domain page after: no state or MX record")
	}
	r.route(t, r.user, 0, "catch_all()", "store()")
	png := "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
	msg := crlfText("From: Ann <ann@sender.example>\nTo: hi@shop.example.com\nSubject: With <b>HTML</b>\nMIME-Version: 1.0\n" +
		"Content-Type: multipart/mixed; boundary=o\n\n--o\nContent-Type: multipart/related; boundary=r\n\n" +
		"--r\nContent-Type: text/html; charset=utf-8\n\n<p>Hi <img src=\"cid:logo@x\"> <img src=\"https://tracker.example/p.gif\"></p><script>alert(1)</script>\n" +
		"--r\nContent-Type: image/png\nContent-ID: <logo@x>\nContent-Disposition: inline\nContent-Transfer-Encoding: base64\n\n" + png + "\n--r--\n" +
		"--o\nContent-Type: text/html; name=\"evil.html\"\nContent-Disposition: attachment; filename=\"evil.html\"\n\n<script>steal()</script>\n--o--\n")
	if res := deliver(t, r.addr, "ann@sender.example", []string{"hi@shop.example.com"}, r.sign(t, msg)); res.data != nil {
		t.Fatalf("deliver: %v %v", res.rcpt, res.data)
	}
	resp, page := b.do("GET", "/domains/shop.example.com/inbound", nil, nil)
	link := regexp.MustCompile(`href="(/domains/shop\.example\.com/inbound/[0-9a-f]{32})"`).FindStringSubmatch(page)
	if resp.StatusCode != 200 || link == nil || !strings.Contains(page, "With &lt;b&gt;HTML&lt;/b&gt;") {
		t.Fatalf("list page: %d %s", resp.StatusCode, page)
	}
	base := link[1]
	resp, page = b.do("GET", base, nil, nil)
	for _, want := range []string{"Ann &lt;ann@sender.example&gt;", "<strong>pass</strong>", `<iframe class="mailhtml" sandbox src="` + base + `/html"`,
		base + "/attachments/2", "evil.html", "Authentication-Results", base + "/raw"} {
		if !strings.Contains(page, want) {
			t.Errorf("message page lacks %q", want)
		}
	}
	if strings.Contains(page, "<script>") || strings.Contains(page, "<p>Hi") {
		t.Error("the message's HTML is in the console's page itself")
	}
	resp, html := b.do("GET", base+"/html", nil, nil)
	csp := resp.Header.Get("Content-Security-Policy")
	if resp.StatusCode != 200 || !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "sandbox") ||
		!strings.Contains(csp, "img-src data:;") || resp.Header.Get("X-Frame-Options") != "SAMEORIGIN" ||
		!strings.Contains(html, `src="data:image/png;base64,`+png) || !strings.Contains(html, "https://tracker.example/p.gif") {
		t.Errorf("the frame's document: %d CSP %q XFO %q\n%s", resp.StatusCode, csp, resp.Header.Get("X-Frame-Options"), html)
	}
	// Remote images load once the reader asks (the page's link), over
	// https only; scripts never run.
	if _, page := b.do("GET", base+"?remote=1", nil, nil); !strings.Contains(page, `sandbox src="`+base+`/html?remote=1"`) {
		t.Errorf("the page with remote images does not frame /html?remote=1:\n%s", page)
	}
	resp, _ = b.do("GET", base+"/html?remote=1", nil, nil)
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "img-src data: https:;") || !strings.Contains(csp, "script-src 'none'") {
		t.Errorf("/html?remote=1: CSP %q", csp)
	}
	resp, body := b.do("GET", base+"/attachments/2", nil, nil)
	if resp.StatusCode != 200 || body != "<script>steal()</script>" || resp.Header.Get("Content-Type") != "application/octet-stream" ||
		!strings.HasPrefix(resp.Header.Get("Content-Disposition"), "attachment") {
		t.Errorf("attachment: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	if resp, body := b.do("GET", base+"/raw", nil, nil); resp.StatusCode != 200 || !strings.HasPrefix(body, "Authentication-Results: "+mxHost) {
		t.Errorf("raw download: %d", resp.StatusCode)
	}
	bob := r.NewUser("bob")
	ob := &browser{t: t, base: r.URL}
	ob.signIn("bob", bob.Key, "/")
	for _, p := range []string{base, base + "/html", base + "/attachments/1", "/domains/shop.example.com/inbound"} {
		if resp, _ := ob.do("GET", p, nil, nil); resp.StatusCode != 404 {
			t.Errorf("bob GET %s: %d, want 404", p, resp.StatusCode)
		}
	}
}
