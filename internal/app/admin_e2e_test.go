package app_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/smtptest"
	"github.com/postline/postline/internal/store"
)

// TestAdminAPI: the operator's routes answer 403 to other accounts; an
// operator lists, creates, keys, disables and enables accounts, sees the
// queue across domains (a deferred delivery, its domain and age) and
// makes deferred deliveries due at once.
func TestAdminAPI(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		// A deferred delivery waits an hour: only "retry now" brings it back.
		e := startSend(t, d, false, func(c *config.Config) { c.RetrySchedule = []time.Duration{time.Hour} })
		op := e.NewUser("operator")
		if err := e.App.Accounts.SetAdmin(context.Background(), "operator", true); err != nil {
			t.Fatal(err)
		}
		do := func(u apitest.User, method, path string, body any) *apitest.Response {
			return e.Do(apitest.Request{Method: method, Path: path, Auth: u.Auth(), Body: body})
		}
		for _, r := range []struct{ method, path string }{{"GET", "/api/admin/accounts"}, {"GET", "/api/admin/queue"},
			{"POST", "/api/admin/queue/retry"}, {"POST", "/api/admin/accounts/operator/disable"}} {
			if resp := do(e.user, r.method, r.path, nil); resp.StatusCode != 403 || !strings.Contains(string(resp.Body), "operator") {
				t.Errorf("alice %s %s: %d %s, want 403", r.method, r.path, resp.StatusCode, resp.Body)
			}
		}
		resp := do(op, "POST", "/api/admin/accounts", map[string]any{"login": "carol"})
		if resp.StatusCode != 201 {
			t.Fatalf("create carol: %d %s", resp.StatusCode, resp.Body)
		}
		if resp := do(op, "POST", "/api/admin/accounts", map[string]any{"login": "carol"}); resp.StatusCode != 409 {
			t.Errorf("carol again: %d", resp.StatusCode)
		}
		if resp := do(op, "POST", "/api/admin/accounts", map[string]any{"login": "bad login!"}); resp.StatusCode != 422 {
			t.Errorf("a bad login: %d %s", resp.StatusCode, resp.Body)
		}
		resp = do(op, "POST", "/api/admin/accounts/carol/keys", map[string]any{"name": "app"})
		key, _ := resp.JSON["data"].(map[string]any)["key"].(string)
		carol := apitest.User{Login: "carol", Key: key}
		if resp.StatusCode != 201 || do(carol, "GET", "/api/domains", nil).StatusCode != 200 {
			t.Fatalf("carol's key from the operator: %d %s", resp.StatusCode, resp.Body)
		}
		if resp := do(op, "POST", "/api/admin/accounts/carol/disable", nil); resp.StatusCode != 200 || resp.JSON["data"].(map[string]any)["disabled"] != true {
			t.Fatalf("disable: %d %s", resp.StatusCode, resp.Body)
		}
		if resp := do(carol, "GET", "/api/domains", nil); resp.StatusCode != 401 {
			t.Errorf("a disabled account's key: %d", resp.StatusCode)
		}
		do(op, "POST", "/api/admin/accounts/carol/enable", nil)
		if resp := do(carol, "GET", "/api/domains", nil); resp.StatusCode != 200 {
			t.Errorf("after enable: %d", resp.StatusCode)
		}
		// The last enabled operator cannot be disabled.
		if resp := do(op, "POST", "/api/admin/accounts/operator/disable", nil); resp.StatusCode != 409 ||
			!strings.Contains(fmt.Sprint(resp.JSON["message"]), "last enabled operator") {
			t.Errorf("disabling the last operator: %d %s, want 409", resp.StatusCode, resp.Body)
		}
		if resp := do(op, "GET", "/api/admin/accounts", nil); resp.StatusCode != 200 {
			t.Errorf("the operator after the refusal: %d", resp.StatusCode)
		}
		resp = do(op, "GET", "/api/admin/accounts", nil)
		if list := resp.JSON["data"].([]any); len(list) != 3 {
			t.Errorf("accounts: %s", resp.Body)
		}
		if resp := do(op, "GET", "/api/admin/accounts/nobody/keys", nil); resp.StatusCode != 404 {
			t.Errorf("keys of nobody: %d", resp.StatusCode)
		}

		// A delivery deferred by a 451: the queue shows it; retry makes it due.
		e.sink.Script("later@rcpt.example.net", smtptest.Reply{Code: 451, Message: "try later"})
		e.send(t, basicParts("later@rcpt.example.net"), nil)
		var q map[string]any
		waitFor(t, "a deferred delivery in the queue", func() bool {
			q = do(op, "GET", "/api/admin/queue", nil).JSON["data"].(map[string]any)
			return q["deferred"] == 1.0
		})
		doms := q["domains"].([]any)
		if len(doms) != 1 || doms[0].(map[string]any)["domain"] != "shop.example.com" || q["oldest_deferred"] == nil {
			t.Errorf("queue: %v", q)
		}
		resp = do(op, "POST", "/api/admin/queue/retry", nil)
		if resp.StatusCode != 200 || resp.JSON["data"].(map[string]any)["retried"] != 1.0 {
			t.Fatalf("retry: %d %s", resp.StatusCode, resp.Body)
		}
		if _, err := e.sink.WaitForMessages(ctxTimeout(t, 15*time.Second), 1); err != nil {
			t.Fatalf("the retried delivery was not delivered: %v", err)
		}
	})
}
