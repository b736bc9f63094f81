package app_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/store"
)

var newKeyRE = regexp.MustCompile(`pl_[A-Za-z0-9_-]{20,}`)

// TestConsoleDeveloperKeysStayBelowItsRole: a developer makes keys, but
// none with the keys scope: a key with every scope is the account's, and
// signing in to the console with it was a session as an owner (members,
// the audit log), as was reading /api/audit with it. The keys it may make
// work for what they name and no further; an owner still makes full keys.
func TestConsoleDeveloperKeysStayBelowItsRole(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, store.SQLite, nil)
	alice := env.NewUser("alice")
	env.NewDomain(alice, "alice.example")
	owner := &browser{t: t, base: env.URL}
	owner.signIn("alice", alice.Key, "/")
	dev := join(t, env.URL, owner.invite("dev@team.example", "developer"), "dev@team.example", "developer password 1")

	for _, scopes := range [][]string{nil, {"keys"}, {"send", "keys"}} {
		status, page := dev.submit("/keys", url.Values{"csrf": {dev.csrfOf("/keys")}, "name": {"mine"}, "scopes": scopes})
		if key := newKeyRE.FindString(page); key != "" {
			// What the key was good for, before the fix.
			esc := &browser{t: t, base: env.URL}
			if r := esc.signIn("alice", key, "/"); r.StatusCode == http.StatusSeeOther {
				if r, _ := esc.do("GET", "/members", nil, nil); r.StatusCode == 200 {
					t.Errorf("a developer's key (scopes %v) signed in to the console as an owner: /members answered 200", scopes)
				}
			}
			if r := env.Do(apitest.Request{Method: "GET", Path: "/api/audit", Auth: apitest.User{Login: "alice", Key: key}.Auth()}); r.StatusCode == 200 {
				t.Errorf("a developer's key (scopes %v) read the audit log through the API", scopes)
			}
			t.Errorf("a developer made a key with scopes %v: %d", scopes, status)
			continue
		}
		if status != http.StatusUnprocessableEntity || !strings.Contains(page, "without the keys scope") {
			t.Errorf("a developer's key with scopes %v: %d, want 422 saying why\n%s", scopes, status, page)
		}
	}

	// Below its role: a key for sending and the log works for them only.
	status, page := dev.submit("/keys", url.Values{"csrf": {dev.csrfOf("/keys")}, "name": {"ci"}, "scopes": {"send", "log:read"}})
	key := newKeyRE.FindString(page)
	if status != http.StatusSeeOther || key == "" {
		t.Fatalf("a developer's key for send and log:read: %d\n%s", status, page)
	}
	auth := apitest.User{Login: "alice", Key: key}.Auth()
	if r := env.Do(apitest.Request{Method: "GET", Path: "/api/domains/alice.example/log", Auth: auth}); r.StatusCode != 200 {
		t.Errorf("the developer's key reading the log: %d", r.StatusCode)
	}
	if r := env.Do(apitest.Request{Method: "GET", Path: "/api/audit", Auth: auth}); r.StatusCode != 403 {
		t.Errorf("the developer's key reading the audit log: %d, want 403", r.StatusCode)
	}
	if r := (&browser{t: t, base: env.URL}).signIn("alice", key, "/"); r.StatusCode != http.StatusForbidden {
		t.Errorf("signing in to the console with the developer's key: %d, want 403", r.StatusCode)
	}

	// An owner still makes a key with every scope.
	if status, page := owner.submit("/keys", url.Values{"csrf": {owner.csrfOf("/keys")}, "name": {"full"}}); status != http.StatusSeeOther || newKeyRE.FindString(page) == "" {
		t.Errorf("an owner's full key: %d\n%s", status, page)
	}
}
