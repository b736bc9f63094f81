package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/store"
	"github.com/postline/postline/internal/webhook"
)

// hookSink records the event types it receives, by recipient, checking
// signatures with the secret set after creation.
type hookSink struct {
	mu     sync.Mutex
	secret string
	got    map[string][]string
	bad    int
}

func (h *hookSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	defer h.mu.Unlock()
	if !webhook.Verify(h.secret, r.Header.Get(webhook.SignatureHeader), body, time.Now(), time.Minute) {
		h.bad++
	}
	var p struct {
		Events []struct {
			EventType string `json:"event_type"`
			Recipient string `json:"recipient"`
		} `json:"events"`
	}
	json.Unmarshal(body, &p)
	for _, e := range p.Events {
		h.got[e.Recipient] = append(h.got[e.Recipient], e.EventType)
	}
	w.WriteHeader(http.StatusOK)
}

func (h *hookSink) types(recipient string) (string, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.Join(h.got[recipient], ","), h.bad
}

func TestWebhooksDeliverLogEntries(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		e := startSend(t, d, false, func(c *config.Config) { c.WebhookAllowPrivate = true })
		sink := &hookSink{got: map[string][]string{}}
		srv := httptest.NewServer(sink)
		defer srv.Close()
		path := "/api/domains/shop.example.com/webhooks"
		resp := e.Do(apitest.Request{Method: "POST", Path: path, Auth: e.user.Auth(), Body: map[string]any{"url": srv.URL + "/postline"}})
		data, _ := resp.JSON["data"].(map[string]any)
		if resp.StatusCode != 201 || !strings.HasPrefix(data["secret"].(string), "whsec_") {
			t.Fatalf("create: %d %s", resp.StatusCode, resp.Body)
		}
		sink.mu.Lock()
		sink.secret = data["secret"].(string)
		sink.mu.Unlock()

		e.send(t, basicParts("ann@rcpt.example.net"), nil)
		deadline := time.Now().Add(15 * time.Second)
		for {
			got, bad := sink.types("ann@rcpt.example.net")
			if got == "queued,send,delivered" && bad == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("webhook received %q (%d bad signatures), want queued,send,delivered", got, bad)
			}
			time.Sleep(50 * time.Millisecond)
		}

		// The receiver answered before the dispatcher recorded the success.
		var list []any
		for {
			resp = e.Do(apitest.Request{Method: "GET", Path: path, Auth: e.user.Auth()})
			list, _ = resp.JSON["data"].([]any)
			if len(list) == 1 && list[0].(map[string]any)["last_success_at"] != nil || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if len(list) != 1 || list[0].(map[string]any)["secret"] != nil || list[0].(map[string]any)["last_success_at"] == nil ||
			list[0].(map[string]any)["last_event_id"] == float64(0) {
			t.Errorf("list: %s", resp.Body)
		}
		for _, c := range []struct {
			body  map[string]any
			field string
		}{{map[string]any{"url": "gopher://x"}, "url"}, {map[string]any{"url": srv.URL, "event_types": []string{"nope"}}, "event_types"}} {
			resp := e.Do(apitest.Request{Method: "POST", Path: path, Auth: e.user.Auth(), Body: c.body})
			if errs, _ := resp.JSON["errors"].(map[string]any); resp.StatusCode != 422 || errs[c.field] == nil {
				t.Errorf("create %v: %d %s, want 422 naming %s", c.body, resp.StatusCode, resp.Body, c.field)
			}
		}
		mallory := e.NewUser("mallory")
		if r := e.Do(apitest.Request{Method: "GET", Path: path, Auth: mallory.Auth()}); r.StatusCode != 404 {
			t.Errorf("another account's webhooks: %d, want 404", r.StatusCode)
		}
		id := int(list[0].(map[string]any)["id"].(float64))
		posts := e.Do(apitest.Request{Method: "GET", Path: path + "/" + strconv.Itoa(id) + "/posts", Auth: e.user.Auth()})
		items, _ := posts.JSON["data"].([]any)
		if posts.StatusCode != 200 || len(items) == 0 || items[0].(map[string]any)["status"] != 200.0 ||
			items[0].(map[string]any)["error"] != nil || items[0].(map[string]any)["entries"].(float64) < 1 {
			t.Errorf("recent posts: %d %s; want the successful posts, newest first", posts.StatusCode, posts.Body)
		}
		if r := e.Do(apitest.Request{Method: "GET", Path: path + "/" + strconv.Itoa(id) + "/posts", Auth: mallory.Auth()}); r.StatusCode != 404 {
			t.Errorf("another account's webhook posts: %d, want 404", r.StatusCode)
		}
		if r := e.Do(apitest.Request{Method: "GET", Path: path + "/999/posts", Auth: e.user.Auth()}); r.StatusCode != 404 {
			t.Errorf("posts of a webhook that does not exist: %d, want 404", r.StatusCode)
		}
		if r := e.Do(apitest.Request{Method: "DELETE", Path: path + "/" + strconv.Itoa(id), Auth: mallory.Auth()}); r.StatusCode != 404 {
			t.Errorf("another account deleting: %d, want 404", r.StatusCode)
		}
		if r := e.Do(apitest.Request{Method: "DELETE", Path: path + "/" + strconv.Itoa(id), Auth: e.user.Auth()}); r.StatusCode != 200 {
			t.Errorf("delete: %d %s", r.StatusCode, r.Body)
		}
	})
}

// Without --webhook-allow-private a tenant's webhook cannot reach the
// operator's network: nothing is posted and the reason is shown.
func TestWebhooksRefusePrivateAddresses(t *testing.T) {
	t.Parallel()
	e := startSend(t, store.SQLite, false, nil)
	sink := &hookSink{got: map[string][]string{}}
	srv := httptest.NewServer(sink)
	defer srv.Close()
	path := "/api/domains/shop.example.com/webhooks"
	if r := e.Do(apitest.Request{Method: "POST", Path: path, Auth: e.user.Auth(), Body: map[string]any{"url": srv.URL}}); r.StatusCode != 201 {
		t.Fatalf("create: %d %s", r.StatusCode, r.Body)
	}
	e.send(t, basicParts("ann@rcpt.example.net"), nil)
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp := e.Do(apitest.Request{Method: "GET", Path: path, Auth: e.user.Auth()})
		wh := resp.JSON["data"].([]any)[0].(map[string]any)
		if msg, _ := wh["last_error"].(string); strings.Contains(msg, "not allowed") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("webhook state %v, want a refused connection", wh)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got, _ := sink.types("ann@rcpt.example.net"); got != "" {
		t.Errorf("the private receiver got %q", got)
	}
}

// Webhook host names are resolved through --dns-server like every other
// lookup (the test's own DNS server here: the system resolver would not
// know these names), and a name that does not resolve is reported
// without the resolver's address.
func TestWebhookNamesResolveThroughDNSServer(t *testing.T) {
	t.Parallel()
	e := startSend(t, store.SQLite, false, func(c *config.Config) { c.WebhookAllowPrivate = true })
	sink := &hookSink{got: map[string][]string{}}
	srv := httptest.NewServer(sink)
	defer srv.Close()
	_, port, _ := strings.Cut(strings.TrimPrefix(srv.URL, "http://"), ":")
	e.DNS.AddA("hooks.tenant-corp.net", "127.0.0.1")
	path := "/api/domains/shop.example.com/webhooks"
	for _, host := range []string{"hooks.tenant-corp.net", "nohooks.tenant-corp.net"} {
		resp := e.Do(apitest.Request{Method: "POST", Path: path, Auth: e.user.Auth(),
			Body: map[string]any{"url": "http://" + host + ":" + port + "/postline"}})
		if resp.StatusCode != 201 {
			t.Fatalf("create: %d %s", resp.StatusCode, resp.Body)
		}
		if host == "hooks.tenant-corp.net" {
			sink.mu.Lock()
			sink.secret = resp.JSON["data"].(map[string]any)["secret"].(string)
			sink.mu.Unlock()
		}
	}
	e.send(t, basicParts("ann@rcpt.example.net"), nil)
	deadline := time.Now().Add(15 * time.Second)
	for {
		got, bad := sink.types("ann@rcpt.example.net")
		if strings.HasPrefix(got, "queued") && bad == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the webhook at hooks.tenant-corp.net received %q (%d bad signatures)", got, bad)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for {
		resp := e.Do(apitest.Request{Method: "GET", Path: path, Auth: e.user.Auth()})
		var msg string
		for _, w := range resp.JSON["data"].([]any) {
			if m := w.(map[string]any); strings.Contains(m["url"].(string), "nohooks") {
				msg, _ = m["last_error"].(string)
			}
		}
		if msg != "" {
			if !strings.Contains(msg, "cannot resolve nohooks.tenant-corp.net") || strings.Contains(msg, e.DNS.Addr()) {
				t.Fatalf("last_error %q: want it to say the name does not resolve, without the resolver's address", msg)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the unresolvable webhook never recorded an error")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestWebhookLimitHoldsUnderConcurrentCreates: 25 creates at once for one
// domain make exactly 10 webhooks; the others are told the limit.
func TestWebhookLimitHoldsUnderConcurrentCreates(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		env := apitest.Start(t, d, nil)
		alice := env.NewUser("alice")
		env.NewDomain(alice, "alice.example")
		var wg sync.WaitGroup
		codes := make([]int, 25)
		bodies := make([]string, 25)
		for i := range codes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := env.Do(apitest.Request{Method: "POST", Path: "/api/domains/alice.example/webhooks", Auth: alice.Auth(),
					Body: map[string]any{"url": fmt.Sprintf("https://hooks.example.com/%d", i)}})
				codes[i], bodies[i] = r.StatusCode, string(r.Body)
			}()
		}
		wg.Wait()
		created := 0
		for i, c := range codes {
			switch {
			case c == 201:
				created++
			case c == 422 && strings.Contains(bodies[i], "at most 10 webhooks"):
			default:
				t.Errorf("create %d: %d %s, want 201 or 422 naming the limit", i, c, bodies[i])
			}
		}
		resp := env.Do(apitest.Request{Method: "GET", Path: "/api/domains/alice.example/webhooks", Auth: alice.Auth()})
		if n := len(resp.JSON["data"].([]any)); created != 10 || n != 10 {
			t.Fatalf("%d creates answered 201 and the domain has %d webhooks; want 10 and 10", created, n)
		}
	})
}

// TestStandardWebhooksVerify: a webhook post verifies with the Standard
// Webhooks reference library (the npm package standardwebhooks, run by
// Node), not with the project's own signer.
func TestStandardWebhooksVerify(t *testing.T) {
	t.Parallel()
	node, lib := jsLib(t, "standardwebhooks")
	e := startSend(t, store.SQLite, false, func(c *config.Config) { c.WebhookAllowPrivate = true })
	got := make(chan *http.Request, 1)
	bodies := make(chan []byte, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		select {
		case got <- r:
			bodies <- b
		default:
		}
	}))
	defer srv.Close()
	resp := e.Do(apitest.Request{Method: "POST", Path: "/api/domains/shop.example.com/webhooks", Auth: e.user.Auth(),
		Body: map[string]any{"url": srv.URL, "event_types": []string{"queued"}}})
	secret := resp.JSON["data"].(map[string]any)["secret"].(string)
	e.send(t, basicParts("ann@rcpt.example.net"), nil)
	var r *http.Request
	select {
	case r = <-got:
	case <-time.After(15 * time.Second):
		t.Fatal("no webhook post")
	}
	body := <-bodies
	dir := t.TempDir()
	headers, _ := json.Marshal(map[string]string{"webhook-id": r.Header.Get("webhook-id"),
		"webhook-timestamp": r.Header.Get("webhook-timestamp"), "webhook-signature": r.Header.Get("webhook-signature")})
	os.WriteFile(filepath.Join(dir, "headers.json"), headers, 0o600)
	os.WriteFile(filepath.Join(dir, "body.json"), body, 0o600)
	cmd := exec.Command(node, "verify-standardwebhook.js", secret, filepath.Join(dir, "headers.json"), filepath.Join(dir, "body.json"))
	cmd.Dir = lib
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "verified 1 event(s)") {
		t.Fatalf("standardwebhooks: %v\n%s", err, out)
	}
	// A changed body does not verify.
	os.WriteFile(filepath.Join(dir, "body.json"), bytes.Replace(body, []byte("ann@"), []byte("eve@"), 1), 0o600)
	if out, err := cmd2(node, lib, secret, dir).CombinedOutput(); err == nil {
		t.Fatalf("a changed body verified: %s", out)
	}
}

func cmd2(node, lib, secret, dir string) *exec.Cmd {
	c := exec.Command(node, "verify-standardwebhook.js", secret, filepath.Join(dir, "headers.json"), filepath.Join(dir, "body.json"))
	c.Dir = lib
	return c
}
