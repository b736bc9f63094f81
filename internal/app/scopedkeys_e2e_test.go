package app_test

import (
	"bytes"
	"context"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/account"
	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/store"
)

// sendAs posts a plain message on domain as u.
func (e *sendEnv) sendAs(t *testing.T, u apitest.User, dom string, parts []part) *apitest.Response {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, p := range parts {
		mw.WriteField(p.name, p.value)
	}
	mw.Close()
	return e.Do(apitest.Request{Method: "POST", Path: "/api/domains/" + dom + "/message", Auth: u.Auth(), Body: buf.Bytes(),
		Header: http.Header{"Content-Type": {mw.FormDataContentType()}}})
}

// newKey creates a key for the caller through POST /api/keys.
func newKey(t *testing.T, e *sendEnv, as apitest.User, body map[string]any) (apitest.User, *apitest.Response) {
	t.Helper()
	resp := e.Do(apitest.Request{Method: "POST", Path: "/api/keys", Auth: as.Auth(), Body: body})
	if resp.StatusCode != 201 {
		return apitest.User{}, resp
	}
	return apitest.User{Login: as.Login, ID: as.ID, Key: resp.JSON["data"].(map[string]any)["key"].(string)}, resp
}

// TestScopedKeys: a send-only key sends but is refused (403 naming the
// scope) on the log, the stream and validation; a domain that is not the
// account's is still 404 for it; a key limited to one domain sees and
// sends from that one only; a limited key cannot mint a broader one;
// keys expire and are revoked; bad input is 422 naming the field.
func TestScopedKeys(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		e := startSend(t, d, false, nil)
		ctx := context.Background()
		second, err := e.App.Domains.Add(ctx, domain.AddParams{AccountID: e.user.ID, Name: "news.example.com", Delivery: domain.Delivery{Mode: domain.ModeDirect}, Trusted: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := e.App.Domains.Verify(ctx, second, true); err != nil {
			t.Fatal(err)
		}
		bob := e.NewUser("bob")
		e.NewDomain(bob, "bob.example.org")
		do := func(u apitest.User, method, path string, body any) *apitest.Response {
			return e.Do(apitest.Request{Method: method, Path: path, Auth: u.Auth(), Body: body})
		}
		forbidden := func(resp *apitest.Response, what, want string) {
			t.Helper()
			if resp.StatusCode != 403 || !strings.Contains(string(resp.Body), want) {
				t.Errorf("%s: %d %s, want 403 naming %s", what, resp.StatusCode, resp.Body, want)
			}
		}

		sender, resp := newKey(t, e, e.user, map[string]any{"name": "app", "scopes": []string{"send"}})
		if resp.StatusCode != 201 {
			t.Fatalf("create a send key: %d %s", resp.StatusCode, resp.Body)
		}
		if sc := resp.JSON["data"].(map[string]any)["scopes"].([]any); len(sc) != 1 || sc[0] != "send" {
			t.Errorf("scopes in the answer: %v", sc)
		}
		if resp := e.sendAs(t, sender, "shop.example.com", basicParts("a@rcpt.example.net")); resp.StatusCode != 202 {
			t.Errorf("send with a send key: %d %s", resp.StatusCode, resp.Body)
		}
		forbidden(do(sender, "GET", "/api/domains/shop.example.com/log", nil), "log", `\"log:read\"`)
		forbidden(do(sender, "GET", "/api/domains/shop.example.com/log/stream", nil), "stream", `\"log:read\"`)
		forbidden(do(sender, "POST", "/api/email/validate", map[string]any{"email": "x@rcpt.example.net"}), "validate", `\"validate\"`)
		forbidden(do(sender, "GET", "/api/domains/shop.example.com/suppressions", nil), "suppressions", `\"suppressions\"`)
		forbidden(do(sender, "GET", "/api/keys", nil), "keys", `\"keys\"`)
		for _, path := range []string{"/api/domains/bob.example.org/log", "/api/domains/nowhere.example/log"} {
			if resp := do(sender, "GET", path, nil); resp.StatusCode != 404 {
				t.Errorf("%s with a send key: %d %s, want the same 404 as any key", path, resp.StatusCode, resp.Body)
			}
		}
		if resp := do(sender, "GET", "/api/domains/bob.example.org/suppressions", nil); resp.StatusCode != 404 {
			t.Errorf("bob's suppressions: %d", resp.StatusCode)
		}

		// One domain only.
		shopOnly, resp := newKey(t, e, e.user, map[string]any{"domains": []string{"SHOP.example.com"}})
		if resp.StatusCode != 201 {
			t.Fatalf("create a shop key: %d %s", resp.StatusCode, resp.Body)
		}
		forbidden(e.sendAs(t, shopOnly, "news.example.com", basicParts("a@rcpt.example.net")), "send from news", "news.example.com")
		if resp := e.sendAs(t, shopOnly, "shop.example.com", basicParts("b@rcpt.example.net")); resp.StatusCode != 202 {
			t.Errorf("send from shop: %d %s", resp.StatusCode, resp.Body)
		}
		if resp := do(shopOnly, "GET", "/api/domains/shop.example.com/log", nil); resp.StatusCode != 200 {
			t.Errorf("shop's log: %d", resp.StatusCode)
		}
		list := do(shopOnly, "GET", "/api/domains", nil).JSON["data"].([]any)
		if len(list) != 1 || list[0].(map[string]any)["name"] != "shop.example.com" {
			t.Errorf("domains seen by the shop key: %v", list)
		}
		forbidden(do(shopOnly, "POST", "/api/domains", map[string]any{"name": "new.example.com"}), "add another domain", "new.example.com")
		forbidden(do(shopOnly, "GET", "/api/admin/accounts", nil), "operator route", "every scope")

		// A limited key makes only keys as limited as itself.
		keyMaker, _ := newKey(t, e, e.user, map[string]any{"scopes": []string{"keys", "send"}})
		if _, resp := newKey(t, e, keyMaker, map[string]any{}); resp.StatusCode != 403 {
			t.Errorf("a keys+send key minting a full key: %d %s", resp.StatusCode, resp.Body)
		}
		if _, resp := newKey(t, e, keyMaker, map[string]any{"scopes": []string{"send", "validate"}}); resp.StatusCode != 403 {
			t.Errorf("minting a broader key: %d %s", resp.StatusCode, resp.Body)
		}
		narrow, resp := newKey(t, e, keyMaker, map[string]any{"scopes": []string{"send"}})
		if resp.StatusCode != 201 {
			t.Fatalf("minting a narrower key: %d %s", resp.StatusCode, resp.Body)
		}

		// Listing shows scopes, domains and last use; revoking ends a key.
		var narrowID float64
		for _, k := range do(e.user, "GET", "/api/keys", nil).JSON["data"].([]any) {
			m := k.(map[string]any)
			if strings.HasPrefix(narrow.Key, m["prefix"].(string)) {
				narrowID = m["id"].(float64)
			}
			if strings.HasPrefix(sender.Key, m["prefix"].(string)) && m["last_used_at"] == nil {
				t.Errorf("the send key's last use is not shown: %v", m)
			}
		}
		bobKeyID := bobsKeyID(t, e, bob)
		if resp := do(e.user, "DELETE", "/api/keys/"+strconv.FormatInt(bobKeyID, 10), nil); resp.StatusCode != 404 {
			t.Errorf("revoking bob's key: %d %s", resp.StatusCode, resp.Body)
		}
		if resp := do(bob, "GET", "/api/domains", nil); resp.StatusCode != 200 {
			t.Errorf("bob's key after alice's attempt: %d", resp.StatusCode)
		}
		if resp := do(keyMaker, "DELETE", "/api/keys/"+strconv.FormatInt(int64(narrowID), 10), nil); resp.StatusCode != 200 {
			t.Fatalf("revoke: %d %s", resp.StatusCode, resp.Body)
		}
		if resp := e.sendAs(t, narrow, "shop.example.com", basicParts("c@rcpt.example.net")); resp.StatusCode != 401 {
			t.Errorf("a revoked key: %d", resp.StatusCode)
		}

		// Expiry.
		soon := time.Now().Add(1500 * time.Millisecond).UTC().Format(time.RFC3339Nano)
		brief, resp := newKey(t, e, e.user, map[string]any{"expires_at": soon})
		if resp.StatusCode != 201 || resp.JSON["data"].(map[string]any)["expires_at"] == nil {
			t.Fatalf("a key that expires: %d %s", resp.StatusCode, resp.Body)
		}
		if resp := do(brief, "GET", "/api/domains", nil); resp.StatusCode != 200 {
			t.Errorf("before expiry: %d", resp.StatusCode)
		}
		time.Sleep(1600 * time.Millisecond)
		if resp := do(brief, "GET", "/api/domains", nil); resp.StatusCode != 401 || !strings.Contains(string(resp.Body), "expired") {
			t.Errorf("after expiry: %d %s", resp.StatusCode, resp.Body)
		}

		// Bad input.
		for _, c := range []struct {
			body  map[string]any
			field string
		}{
			{map[string]any{"scopes": []string{"send", "everything"}}, "scopes"},
			{map[string]any{"scopes": []string{}}, "scopes"},
			{map[string]any{"domains": []string{"not a domain"}}, "domains"},
			{map[string]any{"expires_at": time.Now().Add(-time.Hour).Format(time.RFC3339)}, "expires_at"},
			{map[string]any{"expires_at": time.Now().Add(10 * 366 * 24 * time.Hour).Format(time.RFC3339)}, "expires_at"},
			{map[string]any{"name": strings.Repeat("n", 101)}, "name"},
		} {
			resp := do(e.user, "POST", "/api/keys", c.body)
			if errs, _ := resp.JSON["errors"].(map[string]any); resp.StatusCode != 422 || errs[c.field] == nil {
				t.Errorf("%v: %d %s, want 422 naming %s", c.body, resp.StatusCode, resp.Body, c.field)
			}
		}
	})
}

func bobsKeyID(t *testing.T, e *sendEnv, bob apitest.User) int64 {
	t.Helper()
	keys, err := e.App.Accounts.Keys(context.Background(), bob.Login)
	if err != nil || len(keys) == 0 {
		t.Fatal(keys, err)
	}
	return keys[0].ID
}

// TestScopedKeysStayWithinTheirParent: a key limited to keys and send, one
// domain and an hour makes keys that expire no later than itself (none
// named: its own expiry; a later one: 422 naming expires_at), and revokes
// only keys at most as broad as itself: the account's unrestricted key,
// a broader key or a longer-lived one is 403 and keeps working. The
// console does the same for a session started with an expiring key, and
// ends that session when the key expires.
func TestScopedKeysStayWithinTheirParent(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		e := startSend(t, d, false, nil)
		do := func(u apitest.User, method, path string, body any) *apitest.Response {
			return e.Do(apitest.Request{Method: method, Path: path, Auth: u.Auth(), Body: body})
		}
		idOf := func(u apitest.User) string {
			t.Helper()
			for _, k := range mustKeys(t, e) {
				if strings.HasPrefix(u.Key, k.Prefix) {
					return strconv.FormatInt(k.ID, 10)
				}
			}
			t.Fatalf("no key with the prefix of %s", u.Key[:10])
			return ""
		}
		hour := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
		limited, resp := newKey(t, e, e.user, map[string]any{"scopes": []string{"keys", "send"},
			"domains": []string{"shop.example.com"}, "expires_at": hour.Format(time.RFC3339)})
		if resp.StatusCode != 201 {
			t.Fatalf("the limited key: %d %s", resp.StatusCode, resp.Body)
		}
		same := map[string]any{"scopes": []string{"send"}, "domains": []string{"shop.example.com"}}

		child, resp := newKey(t, e, limited, same)
		if resp.StatusCode != 201 {
			t.Fatalf("a child naming no expiry: %d %s", resp.StatusCode, resp.Body)
		}
		exp, _ := resp.JSON["data"].(map[string]any)["expires_at"].(string)
		if got, _ := time.Parse(time.RFC3339Nano, exp); !got.Equal(hour) {
			t.Errorf("a child naming no expiry expires at %v, want its parent's %v", got, hour)
		}
		for _, later := range []string{time.Now().Add(2 * time.Hour).Format(time.RFC3339), "2031-01-01T00:00:00Z"} {
			body := map[string]any{"scopes": []string{"send"}, "domains": []string{"shop.example.com"}, "expires_at": later}
			_, resp := newKey(t, e, limited, body)
			if errs, _ := resp.JSON["errors"].(map[string]any); resp.StatusCode != 422 || errs["expires_at"] == nil {
				t.Errorf("a child expiring at %s, after its parent: %d %s; want 422 naming expires_at", later, resp.StatusCode, resp.Body)
			}
		}
		sooner := time.Now().Add(30 * time.Minute).UTC().Truncate(time.Second)
		if _, resp := newKey(t, e, limited, map[string]any{"scopes": []string{"send"}, "domains": []string{"shop.example.com"},
			"expires_at": sooner.Format(time.RFC3339)}); resp.StatusCode != 201 {
			t.Errorf("a child expiring before its parent: %d %s", resp.StatusCode, resp.Body)
		}

		// Revoking: only keys at most as broad as the caller.
		broaderScopes, _ := newKey(t, e, e.user, map[string]any{"scopes": []string{"send", "validate"}, "domains": []string{"shop.example.com"},
			"expires_at": sooner.Format(time.RFC3339)})
		allDomains, _ := newKey(t, e, e.user, map[string]any{"scopes": []string{"send"}, "expires_at": sooner.Format(time.RFC3339)})
		forever, _ := newKey(t, e, e.user, same)
		for name, k := range map[string]apitest.User{"the account's unrestricted key": e.user, "a key with more scopes": broaderScopes,
			"a key for every domain": allDomains, "a key that never expires": forever} {
			if resp := do(limited, "DELETE", "/api/keys/"+idOf(k), nil); resp.StatusCode != 403 || !strings.Contains(string(resp.Body), "revoke") {
				t.Errorf("the limited key revoking %s: %d %s, want 403", name, resp.StatusCode, resp.Body)
			}
			if resp := do(k, "GET", "/api/domains", nil); resp.StatusCode != 200 && resp.StatusCode != 403 {
				t.Errorf("%s after the refused revocation: %d, want it still working", name, resp.StatusCode)
			}
		}
		if resp := do(e.user, "GET", "/api/keys", nil); resp.StatusCode != 200 {
			t.Fatalf("the unrestricted key after the refused revocation: %d", resp.StatusCode)
		}
		if resp := do(limited, "DELETE", "/api/keys/"+idOf(child), nil); resp.StatusCode != 200 {
			t.Errorf("the limited key revoking its own child: %d %s", resp.StatusCode, resp.Body)
		}

		// The console: a session started with an expiring key.
		soon := time.Now().Add(3 * time.Second).UTC().Truncate(time.Millisecond)
		brief, resp := newKey(t, e, e.user, map[string]any{"expires_at": soon.Format(time.RFC3339Nano)})
		if resp.StatusCode != 201 {
			t.Fatalf("a full key expiring soon: %d %s", resp.StatusCode, resp.Body)
		}
		b := &browser{t: t, base: e.URL}
		if r := b.signIn(e.user.Login, brief.Key, "/keys"); r.StatusCode != 303 {
			t.Fatalf("console sign-in with the expiring key: %d", r.StatusCode)
		}
		_, page := b.do("GET", "/keys", nil, nil)
		csrf := csrfRE.FindStringSubmatch(page)[1]
		if status, _ := b.submit("/keys", url.Values{"csrf": {csrf}, "name": {"from the console"}}); status != 303 {
			t.Fatalf("console key naming no expiry: %d", status)
		}
		for _, k := range mustKeys(t, e) {
			if k.Name == "from the console" && (k.ExpiresAt == nil || k.ExpiresAt.After(soon)) {
				t.Errorf("a console key from a session of a key expiring at %v expires at %v, want no later", soon, k.ExpiresAt)
			}
		}
		if r, page := b.do("POST", "/keys", url.Values{"csrf": {csrf}, "expires": {"2031-01-01"}}, nil); r.StatusCode != 422 || !strings.Contains(page, "expires_at must be no later") {
			t.Errorf("console key expiring in 2031 from a session of an expiring key: %d", r.StatusCode)
		}
		if r, page := b.do("POST", "/keys/"+idOf(e.user)+"/revoke", url.Values{"csrf": {csrf}}, nil); r.StatusCode != 403 || !strings.Contains(page, "can only revoke") {
			t.Errorf("the console session of an expiring key revoking the unrestricted key: %d", r.StatusCode)
		}
		time.Sleep(time.Until(soon) + 100*time.Millisecond)
		if r, page := b.do("GET", "/keys", nil, nil); r.StatusCode != 401 || !strings.Contains(page, "the API key it was started with expired") {
			t.Errorf("the console after its key expired: %d, want 401 (the session ended: the sign-in form saying why)", r.StatusCode)
		}
		if resp := do(e.user, "GET", "/api/keys", nil); resp.StatusCode != 200 {
			t.Errorf("the unrestricted key at the end: %d", resp.StatusCode)
		}
	})
}

func mustKeys(t *testing.T, e *sendEnv) []account.Key {
	t.Helper()
	keys, err := e.App.Accounts.Keys(context.Background(), e.user.Login)
	if err != nil {
		t.Fatal(err)
	}
	return keys
}
