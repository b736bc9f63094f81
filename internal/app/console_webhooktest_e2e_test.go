package app_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/webhook"
)

// TestConsoleWebhookTestEvent: "send a test event" on the webhooks page
// (issue 32) posts a made-up delivered event the way real posts go (signed
// with the webhook's secret, Standard Webhooks headers), says what the
// endpoint answered, and records nothing; a failing endpoint's answer and
// a refused connection are said in words; another account's webhook or
// domain is a 404.
func TestConsoleWebhookTestEvent(t *testing.T) {
	t.Parallel()
	e := startSend(t, store.SQLite, false, func(c *config.Config) { c.WebhookAllowPrivate = true })
	other := e.NewUser("mallory")
	e.NewDomain(other, "mallory.example")
	type got struct {
		header http.Header
		body   string
	}
	posts := make(chan got, 4)
	hooks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		posts <- got{r.Header.Clone(), string(b)}
		if strings.HasSuffix(r.URL.Path, "/broken") {
			w.WriteHeader(500)
			return
		}
		w.WriteHeader(204)
	}))
	defer hooks.Close()
	b := &browser{t: t, base: e.URL}
	b.signIn("alice", e.user.Key, "/")
	_, page := b.do("GET", "/domains/shop.example.com/webhooks", nil, nil)
	csrf := csrfRE.FindStringSubmatch(page)[1]
	_, page = b.submit("/domains/shop.example.com/webhooks", url.Values{"csrf": {csrf}, "url": {hooks.URL + "/in"}, "event_types": {"delivered"}})
	secret := regexp.MustCompile(`whsec_[A-Za-z0-9+/=_-]+`).FindString(page)
	testPath := regexp.MustCompile(`action="(/domains/shop\.example\.com/webhooks/\d+/test)"`).FindStringSubmatch(page)
	if secret == "" || testPath == nil {
		t.Fatalf("the new webhook's page has no secret or no test button:\n%s", page)
	}

	status, page := b.submit(testPath[1], url.Values{"csrf": {csrf}})
	if status != 303 || !strings.Contains(page, "The test event to "+hooks.URL+"/in was answered 204") {
		t.Errorf("test event: %d\n%s", status, page)
	}
	select {
	case p := <-posts:
		ts, _ := strconv.ParseInt(p.header.Get("Webhook-Timestamp"), 10, 64)
		if want := webhook.StandardSign(secret, p.header.Get("Webhook-Id"), time.Unix(ts, 0), []byte(p.body)); p.header.Get("Webhook-Signature") != want {
			t.Errorf("the test post's signature %q does not verify with the webhook's secret (want %q)", p.header.Get("Webhook-Signature"), want)
		}
		if !strings.Contains(p.body, `"event_type":"delivered"`) || !strings.Contains(p.body, `"test":true`) || !strings.Contains(p.body, `"domain":"shop.example.com"`) {
			t.Errorf("the test post's body: %s", p.body)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the endpoint got no test post")
	}
	if !strings.Contains(page, "No posts yet.") {
		t.Errorf("the test post was recorded among the webhook's posts:\n%s", page)
	}

	// An endpoint that fails, and one that is not there.
	_, page = b.submit("/domains/shop.example.com/webhooks", url.Values{"csrf": {csrf}, "url": {hooks.URL + "/broken"}})
	broken := regexp.MustCompile(`action="(/domains/shop\.example\.com/webhooks/\d+/test)"`).FindAllStringSubmatch(page, -1)
	if len(broken) != 2 {
		t.Fatalf("%d test buttons, want 2", len(broken))
	}
	if _, page := b.submit(broken[1][1], url.Values{"csrf": {csrf}}); !strings.Contains(page, "failed: the endpoint answered 500") {
		t.Errorf("a failing endpoint:\n%s", page)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := "http://" + ln.Addr().String() + "/gone"
	ln.Close()
	_, page = b.submit("/domains/shop.example.com/webhooks", url.Values{"csrf": {csrf}, "url": {closed}})
	gone := regexp.MustCompile(`action="(/domains/shop\.example\.com/webhooks/\d+/test)"`).FindAllStringSubmatch(page, -1)
	if _, page := b.submit(gone[2][1], url.Values{"csrf": {csrf}}); !strings.Contains(page, "failed: connection refused by") {
		t.Errorf("an endpoint that is not there:\n%s", page)
	}

	// A Mailgun-format webhook gets Mailgun's shape, signed.
	if resp := e.Do(apitest.Request{Method: "POST", Path: "/v3/domains/shop.example.com/webhooks", Auth: apitest.User{Login: "api", Key: e.user.Key}.Auth(),
		Body: url.Values{"id": {"delivered"}, "url": {hooks.URL + "/mg"}}.Encode(), Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}}); resp.StatusCode != 200 {
		t.Fatalf("mailgun webhook: %d %s", resp.StatusCode, resp.Body)
	}
	_, page = b.do("GET", "/domains/shop.example.com/webhooks", nil, nil)
	mg := regexp.MustCompile(`action="(/domains/shop\.example\.com/webhooks/\d+/test)"`).FindAllStringSubmatch(page, -1)
	for len(posts) > 0 {
		<-posts
	}
	if _, page := b.submit(mg[len(mg)-1][1], url.Values{"csrf": {csrf}}); !strings.Contains(page, "/mg was answered 204") {
		t.Errorf("a Mailgun-format webhook's test:\n%s", page)
	}
	if p := <-posts; !strings.Contains(p.body, `"event-data"`) || !strings.Contains(p.body, `"event":"delivered"`) || !strings.Contains(p.body, `"signature":{`) {
		t.Errorf("the Mailgun-format test post: %s", p.body)
	}

	// Another account's: its domain, and this domain with an id not its own.
	id := strings.Split(testPath[1], "/")[4]
	for _, p := range []string{"/domains/mallory.example/webhooks/" + id + "/test", "/domains/shop.example.com/webhooks/999999/test"} {
		if r, _ := b.do("POST", p, url.Values{"csrf": {csrf}}, nil); r.StatusCode != 404 {
			t.Errorf("POST %s: %d, want 404", p, r.StatusCode)
		}
	}
}
