package app_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/store"
)

// mgHookSink is an application's Mailgun webhook receiver, written from
// Mailgun's documented algorithm: hex HMAC-SHA256 of timestamp+token under
// the signing key must equal signature, the timestamp must be recent and
// the token new. It records each verified post by path, and answers the
// paths in refuse with 406.
type mgHookSink struct {
	t      *testing.T
	mu     sync.Mutex
	key    string
	tokens map[string]bool
	refuse map[string]bool
	got    map[string][]map[string]any // path → event-data, in order
}

func (h *mgHookSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var p struct {
		Signature struct {
			Timestamp string `json:"timestamp"`
			Token     string `json:"token"`
			Signature string `json:"signature"`
		} `json:"signature"`
		EventData map[string]any `json:"event-data"`
	}
	if r.Method != "POST" || r.Header.Get("Content-Type") != "application/json" || json.Unmarshal(body, &p) != nil || p.EventData == nil {
		h.t.Errorf("%s %s %q: %s; want a JSON post with signature and event-data", r.Method, r.URL.Path, r.Header.Get("Content-Type"), body)
		w.WriteHeader(400)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	mac := hmac.New(sha256.New, []byte(h.key))
	mac.Write([]byte(p.Signature.Timestamp + p.Signature.Token))
	ts, err := strconv.ParseInt(p.Signature.Timestamp, 10, 64)
	if !hmac.Equal([]byte(hex.EncodeToString(mac.Sum(nil))), []byte(p.Signature.Signature)) || err != nil ||
		time.Since(time.Unix(ts, 0)).Abs() > time.Minute || p.Signature.Token == "" || h.tokens[p.Signature.Token] {
		h.t.Errorf("post to %s: signature %+v does not verify (key %q), or is old or replayed", r.URL.Path, p.Signature, h.key)
		w.WriteHeader(406)
		return
	}
	h.tokens[p.Signature.Token] = true
	h.got[r.URL.Path] = append(h.got[r.URL.Path], p.EventData)
	if h.refuse[r.URL.Path] {
		w.WriteHeader(http.StatusNotAcceptable)
		return
	}
	w.WriteHeader(200)
}

func (h *mgHookSink) events(path string) []map[string]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.got[path])
}

// TestMailgunWebhooks: webhooks set through /v3/domains/{domain}/webhooks
// in Mailgun's shapes receive each event of a batch send once per URL,
// alone and signed with the account's signing key as Mailgun does, with
// the user variables; a 406 is not retried; bad input is a 400 naming the
// parameter, another account's domain a 404.
func TestMailgunWebhooks(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		e := startSend(t, d, false, func(c *config.Config) { c.WebhookAllowPrivate = true })
		ctx := context.Background()
		bob := e.NewUser("bob")
		e.NewDomain(bob, "bob.example.org")
		key, err := e.App.Webhooks.SigningKey(ctx, e.user.ID)
		if err != nil || len(key) < 32 {
			t.Fatalf("signing key %q, %v", key, err)
		}
		sink := &mgHookSink{t: t, key: key, tokens: map[string]bool{}, refuse: map[string]bool{"/refuse": true},
			got: map[string][]map[string]any{}}
		srv := httptest.NewServer(sink)
		defer srv.Close()
		auth := apitest.User{Login: "api", Key: e.user.Key}.Auth()
		do := func(method, path string, form url.Values) *apitest.Response {
			t.Helper()
			r := apitest.Request{Method: method, Path: path, Auth: auth}
			if form != nil {
				r.Body, r.Header = form.Encode(), http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
			}
			return e.Do(r)
		}
		base := "/v3/domains/shop.example.com/webhooks"
		urls := func(resp *apitest.Response) []string {
			wh, _ := resp.JSON["webhook"].(map[string]any)
			var out []string
			for _, u := range wh["urls"].([]any) {
				out = append(out, u.(string))
			}
			return out
		}

		resp := do("POST", base, url.Values{"id": {"delivered"}, "url": {srv.URL + "/a", srv.URL + "/b"}})
		if resp.StatusCode != 200 || resp.JSON["message"] != "Webhook has been created" ||
			!slices.Equal(urls(resp), []string{srv.URL + "/a", srv.URL + "/b"}) {
			t.Fatalf("create delivered: %d %s", resp.StatusCode, resp.Body)
		}
		for id, path := range map[string]string{"accepted": "/refuse", "permanent_fail": "/fail"} {
			if resp := do("POST", base, url.Values{"id": {id}, "url": {srv.URL + path}}); resp.StatusCode != 200 {
				t.Fatalf("create %s: %d %s", id, resp.StatusCode, resp.Body)
			}
		}
		resp = do("GET", base, nil)
		hooks, _ := resp.JSON["webhooks"].(map[string]any)
		if resp.StatusCode != 200 || len(hooks) != 3 || hooks["delivered"] == nil {
			t.Fatalf("list: %d %s; want delivered, accepted and permanent_fail", resp.StatusCode, resp.Body)
		}
		if resp := do("GET", base+"/accepted", nil); resp.StatusCode != 200 || !slices.Equal(urls(resp), []string{srv.URL + "/refuse"}) {
			t.Fatalf("get accepted: %d %s", resp.StatusCode, resp.Body)
		}

		// Bad input answers 400 naming the parameter; another account's
		// domain is 404 whatever the method.
		many := []string{srv.URL + "/1", srv.URL + "/2", srv.URL + "/3", srv.URL + "/4"}
		for _, c := range []struct {
			method, path string
			form         url.Values
			status       int
			want         string
		}{
			{"POST", base, url.Values{"id": {"opened"}, "url": many}, 400, "url: at most 3 urls"},
			{"POST", base, url.Values{"id": {"bounced"}, "url": {srv.URL}}, 400, `id: unknown webhook id "bounced"`},
			{"POST", base, url.Values{"id": {"opened"}, "url": {"ftp://hooks.example/x"}}, 400, "url: \"ftp://hooks.example/x\" must be an absolute http or https URL"},
			{"POST", base, url.Values{"id": {"opened"}}, 400, "url: The url parameter is required"},
			{"POST", base, url.Values{"url": {srv.URL}}, 400, "id: The id is required"},
			{"POST", base, url.Values{"id": {"opened"}, "url": {srv.URL}, "secret": {"x"}}, 400, `secret: Unknown parameter "secret"`},
			{"POST", base, url.Values{"id": {"delivered"}, "url": {srv.URL}}, 400, "id: Webhook already exists"},
			{"PUT", base + "/opened", url.Values{"url": {srv.URL}}, 404, "Webhook not found"},
			{"PUT", base + "/delivered", url.Values{"url": many}, 400, "url: at most 3 urls"},
			{"GET", base + "/bounced", nil, 400, `id: Unknown webhook id "bounced"`},
			{"DELETE", base + "/clicked", nil, 404, "Webhook not found"},
			{"GET", "/v3/domains/bob.example.org/webhooks", nil, 404, "Domain not found: bob.example.org"},
			{"POST", "/v3/domains/bob.example.org/webhooks", url.Values{"id": {"delivered"}, "url": {srv.URL}}, 404, "Domain not found"},
			{"GET", "/v3/domains/bob.example.org/webhooks/delivered", nil, 404, "Domain not found"},
			{"PUT", "/v3/domains/bob.example.org/webhooks/delivered", url.Values{"url": {srv.URL}}, 404, "Domain not found"},
			{"DELETE", "/v3/domains/bob.example.org/webhooks/delivered", nil, 404, "Domain not found"},
		} {
			resp := do(c.method, c.path, c.form)
			if msg, _ := resp.JSON["message"].(string); resp.StatusCode != c.status || !strings.Contains(msg, c.want) {
				t.Errorf("%s %s %v: %d %s; want %d with %q", c.method, c.path, c.form, resp.StatusCode, resp.Body, c.status, c.want)
			}
		}

		// A batch send: each event once per URL, alone, signed.
		var to []string
		rv := map[string]any{}
		for i := range 12 {
			addr := fmt.Sprintf("b%02d@rcpt.example.net", i)
			to = append(to, addr)
			rv[addr] = map[string]any{"n": i}
		}
		rvJSON, _ := json.Marshal(rv)
		mgSend(t, e, strings.Join(to, ","), url.Values{"v:order": {"A-42"}, "recipient-variables": {string(rvJSON)}, "o:tag": {"batch"}})
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) && (len(sink.events("/a")) < len(to) || len(sink.events("/b")) < len(to) ||
			len(sink.events("/refuse")) < len(to)) {
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(300 * time.Millisecond) // a duplicate would come now
		for path, event := range map[string]string{"/a": "delivered", "/b": "delivered", "/refuse": "accepted"} {
			got := sink.events(path)
			seen := map[string]int{}
			for _, ev := range got {
				rcpt, _ := ev["recipient"].(string)
				seen[rcpt]++
				uv, _ := ev["user-variables"].(map[string]any)
				hdr, _ := ev["message"].(map[string]any)["headers"].(map[string]any)
				tags, _ := ev["tags"].([]any)
				if ev["event"] != event || uv["order"] != "A-42" || hdr["message-id"] == "" || len(tags) != 1 || tags[0] != "batch" {
					t.Errorf("%s: event-data %v; want %s with user-variables order A-42, a message-id and tag batch", path, ev, event)
				}
				if ds, _ := ev["delivery-status"].(map[string]any); event == "delivered" && (ds["tls"] != false || ds["certificate-verified"] != false) {
					t.Errorf("%s: delivery-status %v; want tls and certificate-verified false (the sink speaks plain SMTP)", path, ds)
				}
			}
			for _, rcpt := range to {
				if seen[rcpt] != 1 {
					t.Errorf("%s: %s arrived %d times; want once", path, rcpt, seen[rcpt])
				}
			}
			if len(got) != len(to) {
				t.Errorf("%s: %d posts; want %d", path, len(got), len(to))
			}
		}
		if n := len(sink.events("/fail")); n != 0 {
			t.Errorf("permanent_fail got %d posts; nothing failed", n)
		}

		// The 406s were not retried: the accepted webhook is past them with
		// no failure pending. Postline's API lists both kinds by format.
		resp = e.Do(apitest.Request{Method: "GET", Path: "/api/domains/shop.example.com/webhooks", Auth: e.user.Auth()})
		list, _ := resp.JSON["data"].([]any)
		formats := map[string]int{}
		for _, it := range list {
			w := it.(map[string]any)
			formats[w["format"].(string)]++
			if w["mailgun_event"] == "accepted" && (w["failures"] != float64(0) || w["next_attempt_at"] != nil) {
				t.Errorf("accepted webhook after 406s: %v; want no failure pending (406 is not retried)", w)
			}
		}
		if resp.StatusCode != 200 || formats["mailgun"] != 4 {
			t.Errorf("/api/ webhooks: %d %s; want the four mailgun URLs listed with their format", resp.StatusCode, resp.Body)
		}

		// Update keeps a URL that stays; delete names what it had.
		resp = do("PUT", base+"/delivered", url.Values{"url": {srv.URL + "/b", srv.URL + "/c"}})
		if resp.StatusCode != 200 || resp.JSON["message"] != "Webhook has been updated" || !slices.Equal(urls(resp), []string{srv.URL + "/b", srv.URL + "/c"}) {
			t.Errorf("update: %d %s", resp.StatusCode, resp.Body)
		}
		resp = do("DELETE", base+"/delivered", nil)
		if resp.StatusCode != 200 || resp.JSON["message"] != "Webhook has been deleted" || !slices.Equal(urls(resp), []string{srv.URL + "/b", srv.URL + "/c"}) {
			t.Errorf("delete: %d %s", resp.StatusCode, resp.Body)
		}
		if resp := do("GET", base+"/delivered", nil); resp.StatusCode != 404 {
			t.Errorf("get after delete: %d %s; want 404", resp.StatusCode, resp.Body)
		}
	})
}

// TestMailgunSDKWebhooks: mailgun.js's mg.webhooks lists, creates, reads,
// updates and destroys a domain's webhooks on Postline as on Mailgun, and
// the webhook it created receives a send's events signed as Mailgun's;
// another account's domain is a 404 and an unknown id a 400.
func TestMailgunSDKWebhooks(t *testing.T) {
	t.Parallel()
	e := startSend(t, store.SQLite, false, func(c *config.Config) { c.WebhookAllowPrivate = true })
	key, err := e.App.Webhooks.SigningKey(context.Background(), e.user.ID)
	if err != nil {
		t.Fatal(err)
	}
	bob := e.NewUser("bob")
	e.NewDomain(bob, "bob.example.org")
	sink := &mgHookSink{t: t, key: key, tokens: map[string]bool{}, refuse: map[string]bool{}, got: map[string][]map[string]any{}}
	srv := httptest.NewServer(sink)
	defer srv.Close()
	d := "shop.example.com"
	res := mailgunSDK(t, e, e.user.Key, []map[string]any{
		{"call": "webhooks.list", "domain": d},
		{"call": "webhooks.create", "domain": d, "id": "delivered", "url": srv.URL + "/sdk"},
		{"call": "webhooks.create", "domain": d, "id": "opened", "url": srv.URL + "/opened"},
		{"call": "webhooks.get", "domain": d, "id": "delivered"},
		{"call": "webhooks.list", "domain": d},
		{"call": "webhooks.update", "domain": d, "id": "opened", "urls": []string{srv.URL + "/o1", srv.URL + "/o2"}},
		{"call": "webhooks.destroy", "domain": d, "id": "opened"},
		{"call": "webhooks.get", "domain": d, "id": "opened"},
		{"call": "webhooks.create", "domain": d, "id": "bounced", "url": srv.URL},
		{"call": "webhooks.list", "domain": "bob.example.org"},
	})
	type hook struct {
		ID   string   `json:"id"`
		URL  string   `json:"url"`
		URLs []string `json:"urls"`
	}
	one := func(i int) hook {
		var h hook
		if !res[i].OK {
			t.Fatalf("step %d: %d %s", i, res[i].Status, res[i].Message)
		}
		json.Unmarshal(res[i].Result, &h)
		return h
	}
	list := func(i int) map[string]hook {
		m := map[string]hook{}
		if !res[i].OK {
			t.Fatalf("step %d: %d %s", i, res[i].Status, res[i].Message)
		}
		json.Unmarshal(res[i].Result, &m)
		return m
	}
	if l := list(0); len(l) != 0 {
		t.Errorf("list before any: %v; want empty", l)
	}
	if h := one(1); h.ID != "delivered" || h.URL != srv.URL+"/sdk" || !slices.Equal(h.URLs, []string{srv.URL + "/sdk"}) {
		t.Errorf("create: %+v", h)
	}
	if h := one(3); h.URL != srv.URL+"/sdk" {
		t.Errorf("get: %+v", h)
	}
	if l := list(4); len(l) != 2 || !slices.Equal(l["opened"].URLs, []string{srv.URL + "/opened"}) {
		t.Errorf("list: %v; want delivered and opened", l)
	}
	if h := one(5); !slices.Equal(h.URLs, []string{srv.URL + "/o1", srv.URL + "/o2"}) {
		t.Errorf("update: %+v", h)
	}
	if h := one(6); !slices.Equal(h.URLs, []string{srv.URL + "/o1", srv.URL + "/o2"}) {
		t.Errorf("destroy: %+v; want the URLs it had", h)
	}
	if r := res[7]; r.OK || r.Status != 404 {
		t.Errorf("get after destroy: %+v; want 404", r)
	}
	if r := res[8]; r.OK || r.Status != 400 || !strings.Contains(r.Message, "bounced") {
		t.Errorf("create with an unknown id: %+v; want 400 naming it", r)
	}
	if r := res[9]; r.OK || r.Status != 404 {
		t.Errorf("another account's domain: %+v; want 404", r)
	}

	mgSend(t, e, "sdk@rcpt.example.net", url.Values{"v:ref": {"r-1"}})
	waitFor(t, "the delivered event at the SDK's webhook", func() bool { return len(sink.events("/sdk")) == 1 })
	if ev := sink.events("/sdk")[0]; ev["recipient"] != "sdk@rcpt.example.net" || ev["user-variables"].(map[string]any)["ref"] != "r-1" {
		t.Errorf("event-data %v", ev)
	}
}
