package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-message/mail"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/store"
)

const phoneUA = "Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148"

const browserUA = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0 Safari/537.36"

// received is one message as the sink got it, with what tracking put in.
type received struct {
	raw                      []byte
	html, text               string
	listUnsub, listUnsubPost string
	clicks                   []string // click URLs in link order
	pixel                    string
}

var (
	hrefRE = regexp.MustCompile(`href="([^"]+)"`)
	srcRE  = regexp.MustCompile(`src="([^"]+/t/o/[^"]+)"`)
)

func readReceived(t *testing.T, raw []byte) received {
	t.Helper()
	mr, err := mail.CreateReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	r := received{raw: raw, listUnsub: mr.Header.Get("List-Unsubscribe"), listUnsubPost: mr.Header.Get("List-Unsubscribe-Post")}
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(p.Body)
		if ct, _, _ := p.Header.(*mail.InlineHeader).ContentType(); ct == "text/html" {
			r.html = string(body)
		} else if ct == "text/plain" {
			r.text = string(body)
		}
	}
	for _, m := range hrefRE.FindAllStringSubmatch(r.html, -1) {
		if u := strings.ReplaceAll(m[1], "&amp;", "&"); strings.Contains(u, "/t/c/") {
			r.clicks = append(r.clicks, u)
		}
	}
	if m := srcRE.FindStringSubmatch(r.html); m != nil {
		r.pixel = m[1]
	}
	return r
}

// hit requests a tracking URL from the test server, keeping its path and
// sending its host as the Host header (tracking domains do not resolve here).
func (e *sendEnv) hit(t *testing.T, method, rawURL, ua string, body string) *apitest.Response {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	h := map[string][]string{"User-Agent": {ua}}
	var b any
	if body != "" {
		h["Content-Type"] = []string{"application/x-www-form-urlencoded"}
		b = body
	}
	return e.Do(apitest.Request{Method: method, Path: u.Path, Host: u.Host, Header: h, Body: b})
}

func (e *sendEnv) entries(t *testing.T, recipient string, typ event.Type) []event.Entry {
	t.Helper()
	pg, err := e.App.Events.List(context.Background(), event.Filter{DomainID: e.dom.ID, Recipient: recipient,
		Type: typ, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return pg.Entries
}

// det returns an entry's details as a map.
func det(e event.Entry) func(key string) any {
	var m map[string]any
	json.Unmarshal(e.Details, &m)
	return func(key string) any { return m[key] }
}

func TestTrackingOpensClicksUnsubscribe(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		e := startSend(t, d, false, nil)
		resp := e.Do(apitest.Request{Method: "PUT", Path: "/api/domains/shop.example.com/tracking", Auth: e.user.Auth(),
			Body: map[string]bool{"opens": true, "clicks": true, "unsubscribe": true}})
		if tr, _ := resp.JSON["data"].(map[string]any)["tracking"].(map[string]any); resp.StatusCode != 200 || tr["opens"] != true || tr["clicks"] != true {
			t.Fatalf("turning tracking on: %d %s", resp.StatusCode, resp.Body)
		}
		html := `<html><body><p>Hi</p><a href="https://landing.example/welcome?x=1&amp;y=2">Go</a>
<a href="mailto:help@shop.example.com">Help</a> <a href="#top">Top</a>
<a href="https://landing.example/private" data-postline-notrack>Private</a>
<a href="https://landing.example/second">Second</a>
<p><a href="%unsubscribe_url%">Unsubscribe</a></p></body></html>`
		resp = e.send(t, append(basicParts("ann@rcpt.example.net"), part{name: "html", value: html},
			part{name: "text", value: "Leave: %unsubscribe_url%"}), nil)
		if resp.StatusCode != 202 {
			t.Fatalf("send: %d %s", resp.StatusCode, resp.Body)
		}
		msgs, err := e.sink.WaitForMessages(ctxTimeout(t, 15*time.Second), 1)
		if err != nil {
			t.Fatal(err)
		}
		m := readReceived(t, msgs[0].Data)

		// What the recipient got: two rewritten links, the others as written,
		// a pixel, List-Unsubscribe signed by DKIM, the placeholder filled in.
		if len(m.clicks) != 2 || !strings.Contains(m.html, `href="mailto:help@shop.example.com"`) ||
			!strings.Contains(m.html, `href="#top"`) || !strings.Contains(m.html, `href="https://landing.example/private"`) ||
			strings.Contains(m.html, "welcome?x=1") || m.pixel == "" {
			t.Fatalf("tracked HTML wrong (clicks %q, pixel %q):\n%s", m.clicks, m.pixel, m.html)
		}
		unsub := strings.Trim(m.listUnsub, "<>")
		if !strings.Contains(unsub, "/t/u/") || m.listUnsubPost != "List-Unsubscribe=One-Click" ||
			!strings.Contains(m.text, "Leave: "+unsub) || !strings.Contains(m.html, `href="`+unsub+`"`) {
			t.Fatalf("unsubscribe: header %q / %q, text %q", m.listUnsub, m.listUnsubPost, m.text)
		}
		if v := dkimVerify(t, e, m.raw); !strings.Contains(strings.ToLower(strings.Join(v.HeaderKeys, ":")), "list-unsubscribe:list-unsubscribe-post") {
			t.Fatalf("DKIM signs %v; want List-Unsubscribe and List-Unsubscribe-Post covered", v.HeaderKeys)
		}

		// Opens: the pixel answers a GIF that is never cached; the first open
		// is marked first.
		for _, ua := range []string{browserUA, browserUA, phoneUA} { // the same client twice at once counts once
			r := e.hit(t, "GET", m.pixel, ua, "")
			if r.StatusCode != 200 || r.Header.Get("Content-Type") != "image/gif" || !strings.Contains(r.Header.Get("Cache-Control"), "no-store") {
				t.Fatalf("pixel: %d %v", r.StatusCode, r.Header)
			}
		}
		opens := e.entries(t, "ann@rcpt.example.net", event.Opened)
		if len(opens) != 2 || det(opens[1])("first") != true || det(opens[0])("first") != false || det(opens[0])("user_agent") != phoneUA ||
			det(opens[1])("user_agent") != browserUA || det(opens[1])("ip") != "127.0.0.1" {
			t.Fatalf("opens = %+v", opens)
		}

		// Clicks redirect to the URL that was in the message, nothing else.
		r := e.hit(t, "GET", m.clicks[0], browserUA, "")
		if r.StatusCode != 302 || r.Header.Get("Location") != "https://landing.example/welcome?x=1&y=2" {
			t.Fatalf("click: %d Location %q", r.StatusCode, r.Header.Get("Location"))
		}
		if r = e.hit(t, "GET", m.clicks[1], "curl/8.5.0", ""); r.Header.Get("Location") != "https://landing.example/second" {
			t.Fatalf("second click: %d Location %q", r.StatusCode, r.Header.Get("Location"))
		}
		clicks := e.entries(t, "ann@rcpt.example.net", event.Clicked)
		if len(clicks) != 2 || det(clicks[1])("url") != "https://landing.example/welcome?x=1&y=2" ||
			det(clicks[1])("first") != true || det(clicks[0])("bot") != "user_agent:curl" || det(clicks[0])("first") != false {
			t.Fatalf("clicks = %+v", clicks)
		}

		// Forged and altered tokens: 404, nothing recorded.
		before := len(e.entries(t, "ann@rcpt.example.net", event.Clicked)) + len(e.entries(t, "ann@rcpt.example.net", event.Opened))
		altered := strings.Replace(m.clicks[0], "/t/c/", "/t/c/1", 1)
		otherLink := regexp.MustCompile(`\.0\.`).ReplaceAllString(m.clicks[0], ".1.")
		for _, u := range []string{altered, otherLink, strings.Replace(m.pixel, "/t/o/", "/t/c/", 1),
			e.URL + "/t/o/1.0.AAAAAAAAAAAAAAAAAAAAAA.gif", e.URL + "/t/u/nonsense"} {
			if r := e.hit(t, "GET", u, browserUA, ""); r.StatusCode != 404 {
				t.Errorf("GET %s: %d, want 404", u, r.StatusCode)
			}
		}
		if after := len(e.entries(t, "ann@rcpt.example.net", event.Clicked)) + len(e.entries(t, "ann@rcpt.example.net", event.Opened)); after != before {
			t.Errorf("forged tokens recorded %d entries", after-before)
		}

		// The unsubscribe page does not unsubscribe; the one-click POST does.
		if r := e.hit(t, "GET", unsub, browserUA, ""); r.StatusCode != 200 || !strings.Contains(string(r.Body), `<form method="post">`) {
			t.Fatalf("unsubscribe page: %d %s", r.StatusCode, r.Body)
		}
		if n := len(e.entries(t, "ann@rcpt.example.net", event.Unsubscribed)); n != 0 {
			t.Fatalf("the GET page unsubscribed (%d entries)", n)
		}
		if r := e.hit(t, "POST", unsub, "", "List-Unsubscribe=One-Click"); r.StatusCode != 200 {
			t.Fatalf("one-click: %d %s", r.StatusCode, r.Body)
		}
		// Repeats (mail clients retry, people click twice) are answered
		// the same but logged once.
		for i := 0; i < 19; i++ {
			if r := e.hit(t, "POST", unsub, "", "List-Unsubscribe=One-Click"); r.StatusCode != 200 {
				t.Fatalf("one-click %d: %d %s", i+2, r.StatusCode, r.Body)
			}
		}
		if r := e.hit(t, "GET", unsub, browserUA, ""); r.StatusCode != 200 {
			t.Fatalf("unsubscribe page after unsubscribing: %d", r.StatusCode)
		}
		un := e.entries(t, "ann@rcpt.example.net", event.Unsubscribed)
		if len(un) != 1 || det(un[0])("source") != "one_click" || det(un[0])("first") != true {
			t.Fatalf("after twenty one-click unsubscribes: %d entries %+v, want one", len(un), un)
		}
		resp = e.Do(apitest.Request{Method: "GET", Path: "/api/domains/shop.example.com/suppressions/unsubscribes", Auth: e.user.Auth()})
		if data, _ := resp.JSON["data"].([]any); len(data) != 1 || data[0].(map[string]any)["recipient"] != "ann@rcpt.example.net" {
			t.Fatalf("unsubscribes: %s", resp.Body)
		}

		// The next message to ann is not sent.
		e.send(t, basicParts("ann@rcpt.example.net"), nil)
		if c := e.chain(t, "ann@rcpt.example.net", event.Failed); c[len(c)-1] != "failed" {
			t.Fatalf("chain after unsubscribe: %v", c)
		}
	})
}

// TestTrackingPerAddressLimit: past --tracking-per-address-per-minute one
// client address still gets the image and the redirect, but its opens and
// clicks are no longer recorded; another address still is.
func TestTrackingPerAddressLimit(t *testing.T) {
	t.Parallel()
	e := startSend(t, store.SQLite, false, func(c *config.Config) { c.TrackingPerAddressPerMinute = 3 })
	e.Do(apitest.Request{Method: "PUT", Path: "/api/domains/shop.example.com/tracking", Auth: e.user.Auth(),
		Body: map[string]bool{"opens": true, "clicks": true}})
	html := `<html><body><a href="https://landing.example/a">A</a></body></html>`
	if resp := e.send(t, append(basicParts("ann@rcpt.example.net"), part{name: "html", value: html}), nil); resp.StatusCode != 202 {
		t.Fatalf("send: %d %s", resp.StatusCode, resp.Body)
	}
	msgs, err := e.sink.WaitForMessages(ctxTimeout(t, 15*time.Second), 1)
	if err != nil {
		t.Fatal(err)
	}
	m := readReceived(t, msgs[0].Data)
	for i := 0; i < 6; i++ { // distinct user agents: not repeats of one another
		ua := fmt.Sprintf("%s #%d", browserUA, i)
		if r := e.hit(t, "GET", m.pixel, ua, ""); r.StatusCode != 200 || r.Header.Get("Content-Type") != "image/gif" {
			t.Fatalf("open %d: %d %s, want the image every time", i, r.StatusCode, r.Header.Get("Content-Type"))
		}
		if r := e.hit(t, "GET", m.clicks[0], ua, ""); r.StatusCode != 302 || r.Header.Get("Location") != "https://landing.example/a" {
			t.Fatalf("click %d: %d %q, want the redirect every time", i, r.StatusCode, r.Header.Get("Location"))
		}
	}
	opens, clicks := e.entries(t, "ann@rcpt.example.net", event.Opened), e.entries(t, "ann@rcpt.example.net", event.Clicked)
	if len(opens)+len(clicks) != 3 {
		t.Fatalf("%d opens and %d clicks recorded from one address, want 3 in all (the limit)", len(opens), len(clicks))
	}
}
