package app_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/store"
)

// recordStatuses checks the domain's records ("verify") and returns
// whether the check passed and each record's status by purpose.
func (e *sendEnv) recordStatuses(t *testing.T) (bool, map[string]string) {
	t.Helper()
	resp := e.Do(apitest.Request{Method: "POST", Path: "/api/domains/shop.example.com/verify", Auth: e.user.Auth()})
	data, _ := resp.JSON["data"].(map[string]any)
	if resp.StatusCode != 200 || data == nil {
		t.Fatalf("verify: %d %s", resp.StatusCode, resp.Body)
	}
	out := map[string]string{}
	for _, r := range data["dns_records"].([]any) {
		rec := r.(map[string]any)
		out[rec["purpose"].(string)+" "+rec["type"].(string)+" "+rec["name"].(string)+" → "+rec["value"].(string)] = rec["status"].(string)
	}
	check, _ := data["dns_check"].(map[string]any)
	return check["ok"] == true, out
}

func (e *sendEnv) lastMessage(t *testing.T, n int) received {
	t.Helper()
	msgs, err := e.sink.WaitForMessages(ctxTimeout(t, 15*time.Second), n)
	if err != nil {
		t.Fatal(err)
	}
	return readReceived(t, msgs[n-1].Data)
}

// A tracking domain carries the tracking URLs, is shown as a CNAME to
// publish and verified, serves only tracking paths, and after DELETE
// .../tracklink the links use the public URL again. An authentication
// domain shows its return-path CNAME and DKIM record.
func TestTrackingAndAuthenticationDomainsInEffect(t *testing.T) {
	t.Parallel()
	e := startSend(t, store.SQLite, false, func(c *config.Config) { c.PublicURL = "https://mail.postline.test" })
	put := func(path string, body any) {
		t.Helper()
		if r := e.Do(apitest.Request{Method: "PUT", Path: "/api/domains/shop.example.com/" + path, Auth: e.user.Auth(), Body: body}); r.StatusCode != 200 {
			t.Fatalf("PUT %s: %d %s", path, r.StatusCode, r.Body)
		}
	}
	// Only names under the domain, never the service's own host (its API
	// would then answer nothing but tracking paths).
	for _, host := range []string{"mail.postline.test", "track.other.example", "shop.example.com"} {
		r := e.Do(apitest.Request{Method: "PUT", Path: "/api/domains/shop.example.com/tracklink", Auth: e.user.Auth(),
			Body: map[string]string{"host": host}})
		if errs, _ := r.JSON["errors"].(map[string]any); r.StatusCode != 422 || errs["host"] == nil {
			t.Errorf("tracking domain %s: %d %s, want 422 naming host", host, r.StatusCode, r.Body)
		}
	}
	put("tracking", map[string]bool{"clicks": true})
	put("tracklink", map[string]string{"host": "track.shop.example.com"})
	put("auth-domain", map[string]string{"host": "bounces.shop.example.com"})

	e.DNS.AddTXT("shop.example.com", "v=spf1 a mx ~all")
	ok, st := e.recordStatuses(t)
	tracking := "tracking CNAME track.shop.example.com → mail.postline.test"
	returnPath := "auth_return_path CNAME bounces.shop.example.com → mail.postline.test"
	authDKIM := "auth_dkim TXT " + e.dom.DKIMSelector + "._domainkey.bounces.shop.example.com → " + e.dom.DKIMRecordValue()
	if ok || st[tracking] != "missing" || st[returnPath] != "missing" || st[authDKIM] != "missing" {
		t.Fatalf("before publishing: passed %v, statuses %v", ok, st)
	}
	e.DNS.AddCNAME("track.shop.example.com", "mail.postline.test")
	e.DNS.AddCNAME("bounces.shop.example.com", "mail.postline.test")
	e.DNS.AddTXT(e.dom.DKIMSelector+"._domainkey.bounces.shop.example.com", e.dom.DKIMRecordValue())
	if ok, st = e.recordStatuses(t); !ok || st[tracking] != "ok" || st[returnPath] != "ok" || st[authDKIM] != "ok" {
		t.Fatalf("after publishing: passed %v, statuses %v", ok, st)
	}

	e.send(t, append(basicParts("ann@rcpt.example.net"), part{name: "html", value: `<a href="https://landing.example/">x</a>`}), nil)
	m := e.lastMessage(t, 1)
	if len(m.clicks) != 1 || !strings.HasPrefix(m.clicks[0], "https://track.shop.example.com/t/c/") {
		t.Fatalf("click URLs %q, want them on the tracking domain", m.clicks)
	}
	if r := e.hit(t, "GET", m.clicks[0], browserUA, ""); r.StatusCode != 302 || r.Header.Get("Location") != "https://landing.example/" {
		t.Fatalf("click on the tracking domain: %d %q", r.StatusCode, r.Header.Get("Location"))
	}
	// The tracking domain serves tracking paths only.
	for _, path := range []string{"/api/domains", "/healthz", "/api/openapi.json"} {
		r := e.Do(apitest.Request{Method: "GET", Path: path, Auth: e.user.Auth(), Host: "track.shop.example.com"})
		if r.StatusCode != 404 {
			t.Errorf("GET %s on the tracking domain: %d, want 404", path, r.StatusCode)
		}
	}
	if r := e.Do(apitest.Request{Method: "GET", Path: "/api/domains", Auth: e.user.Auth(), Host: "mail.postline.test"}); r.StatusCode != 200 {
		t.Errorf("API on the public host: %d", r.StatusCode)
	}
	// HTTP/1.0 without a Host header (load balancer health checks) is not a
	// tracking domain, however many domains have none.
	e.App.Domains.Add(context.Background(), domain.AddParams{AccountID: e.user.ID, Name: "plain.example", Trusted: true,
		Delivery: domain.Delivery{Mode: domain.ModeDirect}})
	if status := rawHTTP10(t, strings.TrimPrefix(e.URL, "http://"), "/healthz"); status != "HTTP/1.0 200 OK" {
		t.Errorf("HTTP/1.0 /healthz without Host: %q", status)
	}

	if r := e.Do(apitest.Request{Method: "DELETE", Path: "/api/domains/shop.example.com/tracklink", Auth: e.user.Auth()}); r.StatusCode != 200 {
		t.Fatalf("DELETE tracklink: %d %s", r.StatusCode, r.Body)
	}
	e.send(t, append(basicParts("bob@rcpt.example.net"), part{name: "html", value: `<a href="https://landing.example/">x</a>`}), nil)
	m = e.lastMessage(t, 2)
	if len(m.clicks) != 1 || !strings.HasPrefix(m.clicks[0], "https://mail.postline.test/t/c/") {
		t.Fatalf("after DELETE tracklink, click URLs %q; want the public URL", m.clicks)
	}
	// Links already sent on the old tracking domain keep working.
	u, _ := url.Parse(m.clicks[0])
	if r := e.Do(apitest.Request{Method: "GET", Path: u.Path, Host: "track.shop.example.com", Header: map[string][]string{"User-Agent": {browserUA}}}); r.StatusCode != 302 {
		t.Errorf("tracking path on the old tracking host: %d", r.StatusCode)
	}

	// DELETE auth-domain: DKIM d= and MAIL FROM revert to the domain and from.
	msgs, _ := e.sink.WaitForMessages(ctxTimeout(t, time.Second), 2)
	if !strings.HasPrefix(msgs[1].From, "bounce+") || dkimDomain(t, e, msgs[1].Data) != "bounces.shop.example.com" {
		t.Fatalf("with the authentication domain: MAIL FROM %q", msgs[1].From)
	}
	if r := e.Do(apitest.Request{Method: "DELETE", Path: "/api/domains/shop.example.com/auth-domain", Auth: e.user.Auth()}); r.StatusCode != 200 {
		t.Fatalf("DELETE auth-domain: %d %s", r.StatusCode, r.Body)
	}
	e.send(t, basicParts("cat@rcpt.example.net"), nil)
	msgs, err := e.sink.WaitForMessages(ctxTimeout(t, 15*time.Second), 3)
	if err != nil {
		t.Fatal(err)
	}
	if msgs[2].From != "orders@shop.example.com" || dkimDomain(t, e, msgs[2].Data) != "shop.example.com" {
		t.Errorf("after DELETE auth-domain: MAIL FROM %q, DKIM d=%q", msgs[2].From, dkimDomain(t, e, msgs[2].Data))
	}
}

// rawHTTP10 sends "GET path HTTP/1.0" with no headers and returns the
// status line.
func rawHTTP10(t *testing.T, addr, path string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET %s HTTP/1.0\r\n\r\n", path)
	line, _ := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line)
}
