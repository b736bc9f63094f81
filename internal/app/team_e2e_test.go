package app_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/smtp"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/store"
)

var (
	inviteLinkRE = regexp.MustCompile(`id="invite-link">(https?://[^/]+(/join/[A-Za-z0-9_-]+))<`)
	postFormRE   = regexp.MustCompile(`<form[^>]*method="post"[^>]*>`)
)

// csrfOf reads the session's CSRF token off a page.
func (b *browser) csrfOf(path string) string {
	b.t.Helper()
	_, page := b.do("GET", path, nil, nil)
	m := csrfRE.FindStringSubmatch(page)
	if m == nil {
		b.t.Fatalf("no CSRF token on %s:\n%s", path, page)
	}
	return m[1]
}

// invite has the owner b invite email as role on /members and returns the
// link's path, shown once.
func (b *browser) invite(email, role string) string {
	b.t.Helper()
	status, page := b.submit("/members", url.Values{"csrf": {b.csrfOf("/members")}, "email": {email}, "role": {role}})
	m := inviteLinkRE.FindStringSubmatch(page)
	if status != http.StatusSeeOther || m == nil {
		b.t.Fatalf("inviting %s as %s: %d\n%s", email, role, status, page)
	}
	if _, again := b.do("GET", "/members", nil, nil); strings.Contains(again, m[2]) {
		b.t.Errorf("the link of %s is shown again on the next page", email)
	}
	return m[2]
}

// join sets a member's password at its link and signs it in.
func join(t *testing.T, base, link, email, pw string) *browser {
	t.Helper()
	m := &browser{t: t, base: base}
	if r, page := m.do("GET", link, nil, nil); r.StatusCode != 200 || !strings.Contains(page, email) {
		t.Fatalf("GET %s: %d\n%s", link, r.StatusCode, page)
	}
	if r, page := m.do("POST", link, url.Values{"password": {pw}, "again": {pw}}, nil); r.StatusCode != 200 ||
		!strings.Contains(page, "Your password is set") {
		t.Fatalf("setting the password at %s: %d\n%s", link, r.StatusCode, page)
	}
	if r := m.signIn(email, pw, "/"); r.StatusCode != http.StatusSeeOther || m.cookie == nil {
		t.Fatalf("%s signing in with its password: %d", email, r.StatusCode)
	}
	return m
}

// consoleKeyRE is a new key as the keys page shows it, once.
var consoleKeyRE = regexp.MustCompile(`pl_[A-Za-z0-9_-]{43}`)

// makeKey has b make a key named name on the console's keys page (no
// scopes: every one) and returns it.
func (b *browser) makeKey(name string, scopes ...string) string {
	b.t.Helper()
	status, page := b.submit("/keys", url.Values{"csrf": {b.csrfOf("/keys")}, "name": {name}, "scopes": scopes})
	k := consoleKeyRE.FindString(page)
	if status != 303 || k == "" {
		b.t.Fatalf("making key %q: %d\n%s", name, status, page)
	}
	return k
}

// removeMember has the owner b remove the i-th of the account's members as
// /members lists them (by email), after checking there are n.
func (b *browser) removeMember(i, n int) {
	b.t.Helper()
	_, page := b.do("GET", "/members", nil, nil)
	ids := regexp.MustCompile(`action="/members/(\d+)/role"`).FindAllStringSubmatch(page, -1)
	if len(ids) != n {
		b.t.Fatalf("role forms: %v, want %d", ids, n)
	}
	if status, _ := b.submit("/members/"+ids[i][1]+"/remove", url.Values{"csrf": {b.csrfOf("/members")}}); status != 303 {
		b.t.Fatalf("removing member %d of %d: %d", i, n, status)
	}
}

// startTeam starts the API with the account alice, her domain
// alice.example, and her console signed in with her key.
func startTeam(t *testing.T, d store.Dialect) (*apitest.Env, apitest.User, *browser) {
	t.Helper()
	env := apitest.Start(t, d, nil)
	alice := env.NewUser("alice")
	env.NewDomain(alice, "alice.example")
	owner := &browser{t: t, base: env.URL}
	owner.signIn("alice", alice.Key, "/")
	return env, alice, owner
}

// TestConsoleTeam: an owner invites members with one-time links (used,
// expired and unknown links refused with a page saying so); members sign
// in with their email and password; a viewer sees no form and every POST
// is a 403; a developer changes things but not members nor the audit log;
// a role change and a removal hold from the member's next request; the
// member limit names its flag; the audit log records each change, for
// owners and the operator only.
func TestConsoleTeam(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		env := apitest.Start(t, d, func(c *config.Config) { c.MembersPerAccount = 3 })
		alice, bob := env.NewUser("alice"), env.NewUser("bob")
		env.NewDomain(alice, "alice.example")
		env.NewDomain(bob, "bob.example")
		ctx := context.Background()
		owner := &browser{t: t, base: env.URL}
		owner.signIn("alice", alice.Key, "/")
		devLink := owner.invite("Dev@Team.example", "developer")
		viewLink := owner.invite("view@team.example", "viewer")
		expLink := owner.invite("late@team.example", "viewer")

		// Links: once, for 24 hours, and only real ones.
		dev := join(t, env.URL, devLink, "dev@team.example", "developer password 1")
		if r, page := (&browser{t: t, base: env.URL}).do("GET", devLink, nil, nil); r.StatusCode != 410 || !strings.Contains(page, "has been used") {
			t.Errorf("a used link: %d\n%s", r.StatusCode, page)
		}
		if r, _ := (&browser{t: t, base: env.URL}).do("POST", devLink, url.Values{"password": {"another password 2"}, "again": {"another password 2"}}, nil); r.StatusCode != 410 {
			t.Errorf("setting a password again with a used link: %d, want 410", r.StatusCode)
		}
		if r := (&browser{t: t, base: env.URL}).signIn("dev@team.example", "another password 2", "/"); r.StatusCode != 401 {
			t.Errorf("the second use changed the password: sign-in %d", r.StatusCode)
		}
		if _, err := env.App.DB.Writer().ExecContext(ctx, `UPDATE account_members SET invite_expires_at = invite_expires_at - 25 * 3600 * 1000
			WHERE email = 'late@team.example'`); err != nil {
			t.Fatal(err)
		}
		if r, page := (&browser{t: t, base: env.URL}).do("GET", expLink, nil, nil); r.StatusCode != 410 || !strings.Contains(page, "has expired") {
			t.Errorf("an expired link: %d\n%s", r.StatusCode, page)
		}
		if r, _ := (&browser{t: t, base: env.URL}).do("POST", expLink, url.Values{"password": {"late password 123"}, "again": {"late password 123"}}, nil); r.StatusCode != 410 {
			t.Errorf("an expired link's form: %d, want 410", r.StatusCode)
		}
		if r, page := (&browser{t: t, base: env.URL}).do("GET", "/join/not-a-real-token", nil, nil); r.StatusCode != 404 || !strings.Contains(page, "not valid") {
			t.Errorf("an unknown link: %d\n%s", r.StatusCode, page)
		}
		viewer := join(t, env.URL, viewLink, "view@team.example", "viewer password 1")

		// The bound: three members (the expired invitation counts).
		status, page := owner.submit("/members", url.Values{"csrf": {owner.csrfOf("/members")}, "email": {"four@team.example"}, "role": {"viewer"}})
		if status != 422 || !strings.Contains(page, "members-per-account") {
			t.Errorf("a fourth member past --members-per-account 3: %d\n%s", status, page)
		}

		// A new link for the expired invitation: the old one is then unknown.
		lateLink := owner.invite("late@team.example", "developer")
		if r, _ := (&browser{t: t, base: env.URL}).do("GET", expLink, nil, nil); r.StatusCode != 404 {
			t.Errorf("a replaced link: %d, want 404", r.StatusCode)
		}
		join(t, env.URL, lateLink, "late@team.example", "late password 123")

		// The viewer reads every page, sees no form but sign-out, and every POST is refused.
		for _, p := range []string{"/", "/domains", "/domains/alice.example", "/domains/alice.example/suppressions", "/domains/alice.example/webhooks",
			"/domains/alice.example/templates", "/keys", "/validation", "/domains/alice.example/log"} {
			r, page := viewer.do("GET", p, nil, nil)
			if r.StatusCode != 200 {
				t.Errorf("viewer GET %s: %d", p, r.StatusCode)
			}
			for _, f := range postFormRE.FindAllString(page, -1) {
				if !strings.Contains(f, `action="/sign-out"`) {
					t.Errorf("viewer's %s shows a form: %s", p, f)
				}
			}
		}
		// What the hidden forms held is shown as text.
		if r := env.Do(apitest.Request{Method: "POST", Path: "/api/domains/alice.example/templates", Auth: alice.Auth(),
			Body: map[string]any{"name": "welcome", "subject": "Hello {{name}}", "text": "Welcome aboard, {{name}}."}}); r.StatusCode != 201 && r.StatusCode != 200 {
			t.Fatalf("creating a template: %d %s", r.StatusCode, r.Body)
		}
		if _, page := viewer.do("GET", "/domains/alice.example/templates/welcome", nil, nil); !strings.Contains(page, "Welcome aboard, {{name}}.") ||
			!strings.Contains(page, `id="read-only"`) || strings.Contains(page, "<textarea id=\"t-text\"") {
			t.Errorf("the viewer's template page shows no source, or the editor:\n%s", page)
		}
		if _, page := viewer.do("GET", "/domains/alice.example", nil, nil); !strings.Contains(page, "Opens off, clicks off") ||
			!strings.Contains(page, "Directly to the recipients") || strings.Contains(page, "<h2>Delete</h2>") {
			t.Errorf("the viewer's domain page does not state the settings, or offers deletion:\n%s", page)
		}
		vcsrf := viewer.csrfOf("/")
		for p, form := range map[string]url.Values{
			"/domains/alice.example/suppressions": {"recipient": {"x@rcpt.example"}, "type": {"bounce"}},
			"/keys":                               {"name": {"viewer key"}},
			"/domains":                            {"name": {"new.example"}},
		} {
			form.Set("csrf", vcsrf)
			if r, page := viewer.do("POST", p, form, nil); r.StatusCode != 403 || !strings.Contains(page, "viewer") {
				t.Errorf("viewer POST %s: %d, want the 403 page\n%s", p, r.StatusCode, page)
			}
		}
		for _, p := range []string{"/members", "/audit", "/domains/bob.example"} {
			want := 403
			if p == "/domains/bob.example" {
				want = 404
			}
			if r, _ := viewer.do("GET", p, nil, nil); r.StatusCode != want {
				t.Errorf("viewer GET %s: %d, want %d", p, r.StatusCode, want)
			}
		}

		// The developer: keys (below its role) and suppressions yes, members and audit no.
		status, page = dev.submit("/keys", url.Values{"csrf": {dev.csrfOf("/keys")}, "name": {"dev key"}, "scopes": {"send", "log:read"}})
		if status != 303 || !consoleKeyRE.MatchString(page) {
			t.Errorf("developer creating a key: %d\n%s", status, page)
		}
		if status, _ := dev.submit("/domains/alice.example/suppressions", url.Values{"csrf": {dev.csrfOf("/")}, "recipient": {"gone@rcpt.example"}, "type": {"bounce"}}); status != 303 {
			t.Errorf("developer adding a suppression: %d", status)
		}
		if r, _ := dev.do("POST", "/domains/bob.example/suppressions", url.Values{"csrf": {dev.csrfOf("/")}, "recipient": {"x@rcpt.example"}, "type": {"bounce"}}, nil); r.StatusCode != 404 {
			t.Errorf("Alice's developer adding to Bob's domain: %d, want 404", r.StatusCode)
		}
		for _, p := range []string{"/members", "/audit"} {
			if r, page := dev.do("GET", p, nil, nil); r.StatusCode != 403 || strings.Contains(page, "view@team.example") {
				t.Errorf("developer GET %s: %d, want the 403 page", p, r.StatusCode)
			}
		}
		if r, _ := dev.do("POST", "/members", url.Values{"csrf": {dev.csrfOf("/")}, "email": {"x@team.example"}, "role": {"owner"}}, nil); r.StatusCode != 403 {
			t.Errorf("developer inviting: %d, want 403", r.StatusCode)
		}
		if _, page := dev.do("GET", "/", nil, nil); strings.Contains(page, `href="/members"`) || !strings.Contains(page, "dev@team.example") || strings.Contains(page, `id="read-only"`) {
			t.Errorf("the developer's header: members link shown, or not who is signed in")
		}

		// The owner's page: roles and last sign-in; a role change holds at the next request.
		_, page = owner.do("GET", "/members", nil, nil)
		if !strings.Contains(page, "dev@team.example") || !strings.Contains(page, "late@team.example") || strings.Contains(page, "never") {
			t.Errorf("the members page:\n%s", page)
		}
		ids := regexp.MustCompile(`action="/members/(\d+)/role"`).FindAllStringSubmatch(page, -1)
		if len(ids) != 3 { // dev, late, view: by email
			t.Fatalf("role forms: %v", ids)
		}
		devID, viewID := ids[0][1], ids[2][1]
		if status, _ := owner.submit("/members/"+devID+"/role", url.Values{"csrf": {owner.csrfOf("/members")}, "role": {"viewer"}}); status != 303 {
			t.Fatalf("changing the developer to viewer: %d", status)
		}
		if r, _ := dev.do("POST", "/keys", url.Values{"csrf": {dev.csrfOf("/")}, "name": {"second"}}, nil); r.StatusCode != 403 {
			t.Errorf("the demoted developer's next POST: %d, want 403", r.StatusCode)
		}
		// Another account's owner cannot touch Alice's members.
		bobB := &browser{t: t, base: env.URL}
		bobB.signIn("bob", bob.Key, "/")
		if r, _ := bobB.do("POST", "/members/"+viewID+"/remove", url.Values{"csrf": {bobB.csrfOf("/")}}, nil); r.StatusCode != 404 {
			t.Errorf("Bob removing Alice's member: %d, want 404", r.StatusCode)
		}
		if status, _ := owner.submit("/members/"+viewID+"/remove", url.Values{"csrf": {owner.csrfOf("/members")}}); status != 303 {
			t.Fatalf("removing the viewer: %d", status)
		}
		if r, page := viewer.do("GET", "/domains", nil, nil); r.StatusCode != 401 || !strings.Contains(page, `action="/sign-in"`) ||
			!strings.Contains(page, "removed from the account") {
			t.Errorf("the removed member's next page: %d, want the sign-in form", r.StatusCode)
		}
		if r := (&browser{t: t, base: env.URL}).signIn("view@team.example", "viewer password 1", "/"); r.StatusCode != 401 {
			t.Errorf("a removed member signing in: %d, want 401", r.StatusCode)
		}

		// The audit log: each change with who and from where; owners and the operator only.
		_, page = owner.do("GET", "/audit", nil, nil)
		for _, want := range []string{"member.invited", "dev@team.example as developer", "password.set", "key.created", "dev key",
			"suppression.added", "gone@rcpt.example", "member.role_changed", "dev@team.example to viewer", "member.removed", "127.0.0.1"} {
			if !strings.Contains(page, want) {
				t.Errorf("the audit page lacks %q", want)
			}
		}
		if !regexp.MustCompile(`<td>dev@team.example</td><td><code>key.created</code>`).MatchString(page) ||
			!regexp.MustCompile(`<td>alice</td><td><code>member.removed</code>`).MatchString(page) {
			t.Errorf("the audit page does not name who did what:\n%s", page)
		}
		if strings.Index(page, "member.removed") > strings.Index(page, "member.invited") {
			t.Errorf("the audit page is not newest first")
		}
		if _, page := bobB.do("GET", "/audit", nil, nil); strings.Contains(page, "team.example") {
			t.Errorf("Bob's audit page shows Alice's entries")
		}
		env.NewUser("op")
		env.App.Accounts.SetAdmin(ctx, "op", true)
		keys, _, _ := env.App.Accounts.CreateKey(ctx, "op", "console")
		op := &browser{t: t, base: env.URL}
		op.signIn("op", keys, "/")
		if r, page := op.do("GET", "/admin/accounts/alice/audit", nil, nil); r.StatusCode != 200 || !strings.Contains(page, "member.removed") {
			t.Errorf("the operator's view of Alice's audit log: %d", r.StatusCode)
		}
		if r, _ := owner.do("GET", "/admin/accounts/bob/audit", nil, nil); r.StatusCode != 403 {
			t.Errorf("a sender reading Bob's audit log: %d, want 403", r.StatusCode)
		}

		// The API: its changes recorded with the key's name; GET /api/audit
		// for the account, another's for the operator only.
		if r := env.Do(apitest.Request{Method: "POST", Path: "/api/keys", Auth: alice.Auth(), Body: map[string]any{"name": "from the api"}}); r.StatusCode != 201 {
			t.Fatalf("POST /api/keys: %d %s", r.StatusCode, r.Body)
		}
		r := env.Do(apitest.Request{Method: "GET", Path: "/api/audit?limit=2", Auth: alice.Auth()})
		data, _ := r.JSON["data"].([]any)
		if r.StatusCode != 200 || len(data) != 2 || r.JSON["next_before"] == nil {
			t.Fatalf("GET /api/audit?limit=2: %d %s", r.StatusCode, r.Body)
		}
		if e := data[0].(map[string]any); e["actor"] != "api key test" || e["action"] != "key.created" || e["target"] != "keys" || e["client"] != "127.0.0.1" {
			t.Errorf("the API's key creation in the audit log: %v", e)
		}
		if e := data[1].(map[string]any); e["action"] != "member.removed" || e["actor"] != "alice" || e["target"] != "view@team.example" {
			t.Errorf("the entry before it: %v", e)
		}
		older := env.Do(apitest.Request{Method: "GET", Path: fmt.Sprintf("/api/audit?limit=500&before=%v", r.JSON["next_before"]), Auth: alice.Auth()})
		if od, _ := older.JSON["data"].([]any); older.StatusCode != 200 || len(od) < 5 || older.JSON["next_before"] != nil {
			t.Errorf("the older page: %d %s", older.StatusCode, older.Body)
		}
		if r := env.Do(apitest.Request{Method: "GET", Path: "/api/audit?account=alice", Auth: bob.Auth()}); r.StatusCode != 403 {
			t.Errorf("Bob reading Alice's audit log: %d %s", r.StatusCode, r.Body)
		}
		if r := env.Do(apitest.Request{Method: "GET", Path: "/api/audit", Auth: bob.Auth()}); r.StatusCode != 200 || strings.Contains(string(r.Body), "team.example") {
			t.Errorf("Bob's audit log: %d %s", r.StatusCode, r.Body)
		}
		opAuth := apitest.User{Login: "op", Key: keys}.Auth()
		if r := env.Do(apitest.Request{Method: "GET", Path: "/api/audit?account=alice&limit=500", Auth: opAuth}); r.StatusCode != 200 ||
			!strings.Contains(string(r.Body), "member.invited") {
			t.Errorf("the operator reading Alice's audit log: %d %s", r.StatusCode, r.Body)
		}
		if r := env.Do(apitest.Request{Method: "GET", Path: "/api/audit?account=nobody", Auth: opAuth}); r.StatusCode != 404 {
			t.Errorf("the operator reading a missing account's log: %d", r.StatusCode)
		}
		// The operator's changes to an account are in that account's log.
		for _, act := range []string{"disable", "enable"} {
			if status, _ := op.submit("/admin/accounts/bob/"+act, url.Values{"csrf": {op.csrfOf("/admin")}}); status != 303 {
				t.Fatalf("the operator's %s of bob: %d", act, status)
			}
		}
		bobLog := env.Do(apitest.Request{Method: "GET", Path: "/api/audit", Auth: bob.Auth()})
		if d, _ := bobLog.JSON["data"].([]any); len(d) != 2 || d[0].(map[string]any)["action"] != "account.enabled" ||
			d[1].(map[string]any)["action"] != "account.disabled" || d[1].(map[string]any)["actor"] != "operator op" {
			t.Errorf("Bob's audit log after the operator disabled and enabled it: %s", bobLog.Body)
		}
		if r := env.Do(apitest.Request{Method: "GET", Path: "/api/audit?limit=0", Auth: alice.Auth()}); r.StatusCode != 422 {
			t.Errorf("limit=0: %d %s", r.StatusCode, r.Body)
		}
	})
}

// A member's email is a login for the sign-in limits: failed passwords
// count against it (--auth-attempts-per-login), and past the limit even
// the right password is refused for now.
func TestConsoleMemberSignInLimit(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, store.SQLite, func(c *config.Config) { c.AuthAttemptsPerLogin = 3 })
	alice := env.NewUser("alice")
	owner := &browser{t: t, base: env.URL}
	owner.signIn("alice", alice.Key, "/")
	m := join(t, env.URL, owner.invite("ann@team.example", "viewer"), "ann@team.example", "the right password")
	if _, page := m.do("GET", "/", nil, nil); !strings.Contains(page, "ann@team.example") {
		t.Fatalf("the member's overview does not say who is signed in")
	}
	b := &browser{t: t, base: env.URL}
	for i := range 3 {
		if r := b.signIn("ANN@team.example", "a wrong password", "/"); r.StatusCode != 401 {
			t.Fatalf("wrong password %d: %d, want 401", i+1, r.StatusCode)
		}
	}
	if r := b.signIn("ann@team.example", "the right password", "/"); r.StatusCode != 429 || b.cookie != nil {
		t.Errorf("the right password after 3 failures: %d, want 429", r.StatusCode)
	}
}

// TestRemovedMemberKeys: the keys a member made — in the console, through
// the API with a key of theirs, or in a console session signed in with
// one — stop working when an owner
// removes the member (401, as a revoked key), and the keys list shows them
// revoked; the account's own keys and another member's go on working.
func TestRemovedMemberKeys(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		env, alice, owner := startTeam(t, d)
		dev := join(t, env.URL, owner.invite("dev@team.example", "developer"), "dev@team.example", "developer password 1")
		boss := join(t, env.URL, owner.invite("boss@team.example", "owner"), "boss@team.example", "owner password 1")
		devKey := dev.makeKey("dev key", "send", "log:read")
		bossKey := boss.makeKey("boss key") // every scope: it makes keys through the API
		r := env.Do(apitest.Request{Method: "POST", Path: "/api/keys", Auth: apitest.User{Login: "alice", Key: bossKey}.Auth(),
			Body: map[string]any{"name": "made with the boss key", "scopes": []string{"log:read"}}})
		if r.StatusCode != 201 {
			t.Fatalf("POST /api/keys with the boss's key: %d %s", r.StatusCode, r.Body)
		}
		childKey, _ := r.JSON["data"].(map[string]any)["key"].(string)
		ownKey := owner.makeKey("the account's", "log:read")
		// A console session signed in with the boss's key makes keys that are the boss's too.
		viaKey := &browser{t: t, base: env.URL}
		viaKey.signIn("alice", bossKey, "/")
		sessionKey := viaKey.makeKey("made in a session of the boss key", "log:read")

		works := func(key string) int {
			return env.Do(apitest.Request{Method: "GET", Path: "/api/domains/alice.example/log",
				Auth: apitest.User{Login: "alice", Key: key}.Auth()}).StatusCode
		}
		keys := map[string]string{"dev": devKey, "boss": bossKey, "child": childKey, "session": sessionKey, "own": ownKey}
		for name, k := range keys {
			if s := works(k); s != 200 {
				t.Fatalf("the %s key before any removal: %d", name, s)
			}
		}
		owner.removeMember(0, 2) // boss, dev: by email
		for name, want := range map[string]int{"boss": 401, "child": 401, "session": 401, "dev": 200, "own": 200} {
			if s := works(keys[name]); s != want {
				t.Errorf("the %s key after the boss's removal: %d, want %d", name, s, want)
			}
		}
		owner.removeMember(0, 1) // the developer
		if s := works(devKey); s != 401 {
			t.Errorf("the developer's key after its removal: %d, want 401", s)
		}
		if s := works(ownKey); s != 200 {
			t.Errorf("the account's key after both removals: %d, want 200", s)
		}
		list := env.Do(apitest.Request{Method: "GET", Path: "/api/keys", Auth: alice.Auth()})
		revoked := 0
		for _, k := range list.JSON["data"].([]any) {
			if k.(map[string]any)["revoked_at"] != nil {
				revoked++
			}
		}
		if list.StatusCode != 200 || revoked != 4 {
			t.Errorf("GET /api/keys: %d, %d revoked, want the removed members' 4:\n%s", list.StatusCode, revoked, list.Body)
		}
	})
}

// TestRemovedMemberKeepsNoAccountCredential: an owner member about to be
// removed tries to keep a way in through what the account itself owns:
// its console password (set in a session of the member's, or in one
// signed in with a key the member made), and, in an operator account, a
// key for its own account made through the admin API. None survives.
func TestRemovedMemberKeepsNoAccountCredential(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		env := apitest.Start(t, d, nil)
		alice := env.NewUser("alice")
		env.NewDomain(alice, "alice.example")
		if err := env.App.Accounts.SetAdmin(context.Background(), "alice", true); err != nil {
			t.Fatal(err)
		}
		owner := &browser{t: t, base: env.URL}
		owner.signIn("alice", alice.Key, "/")
		boss := join(t, env.URL, owner.invite("boss@team.example", "owner"), "boss@team.example", "owner password 1")
		const pw = "the boss keeps this"
		// The account's password, from the member's own session: refused.
		if status, _ := boss.submit("/password", url.Values{"csrf": {boss.csrfOf("/keys")}, "password": {pw}, "again": {pw}}); status != 403 {
			t.Errorf("a member setting the account's password: %d, want 403", status)
		}
		// ... and from a session signed in with a key the member made.
		bossKey := boss.makeKey("boss key")
		viaKey := &browser{t: t, base: env.URL}
		viaKey.signIn("alice", bossKey, "/")
		if status, _ := viaKey.submit("/password", url.Values{"csrf": {viaKey.csrfOf("/keys")}, "password": {pw}, "again": {pw}}); status != 403 {
			t.Errorf("a session of the member's key setting the account's password: %d, want 403", status)
		}
		// A key for its own account through the operator API is the member's too.
		r := env.Do(apitest.Request{Method: "POST", Path: "/api/admin/accounts/alice/keys", Auth: apitest.User{Login: "alice", Key: bossKey}.Auth(),
			Body: map[string]any{"name": "admin-made"}})
		if r.StatusCode != 201 {
			t.Fatalf("POST /api/admin/accounts/alice/keys with the boss's key: %d %s", r.StatusCode, r.Body)
		}
		adminKey, _ := r.JSON["data"].(map[string]any)["key"].(string)
		// The operator making a key for another account attaches no member of its own.
		env.NewUser("bob")
		r = env.Do(apitest.Request{Method: "POST", Path: "/api/admin/accounts/bob/keys", Auth: apitest.User{Login: "alice", Key: bossKey}.Auth(),
			Body: map[string]any{"name": "for bob"}})
		if r.StatusCode != 201 {
			t.Fatalf("POST /api/admin/accounts/bob/keys: %d %s", r.StatusCode, r.Body)
		}
		bobKey, _ := r.JSON["data"].(map[string]any)["key"].(string)
		bobKeys, err := env.App.Accounts.Keys(context.Background(), "bob")
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range bobKeys {
			if k.MemberID != 0 {
				t.Errorf("bob's key %q names member %d of another account", k.Name, k.MemberID)
			}
		}

		owner.removeMember(0, 1)
		after := &browser{t: t, base: env.URL}
		if r := after.signIn("alice", pw, "/"); r.StatusCode == 303 {
			t.Errorf("the removed member signs in as the account with the password it set")
		}
		if s := env.Do(apitest.Request{Method: "GET", Path: "/api/domains/alice.example/log",
			Auth: apitest.User{Login: "alice", Key: adminKey}.Auth()}).StatusCode; s != 401 {
			t.Errorf("the key the member made through the operator API after its removal: %d, want 401", s)
		}
		if s := env.Do(apitest.Request{Method: "GET", Path: "/api/keys", Auth: apitest.User{Login: "bob", Key: bobKey}.Auth()}).StatusCode; s != 200 {
			t.Errorf("bob's key made by the operator: %d, want 200 (bob's, not the member's)", s)
		}
	})
}

// TestRemovedMemberSubmissionSession: an SMTP submission session a member
// authenticated with its key, kept open past the member's removal (or the
// key's revocation), sends nothing more.
func TestRemovedMemberSubmissionSession(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		e := startSubmission(t, d, nil)
		owner := &browser{t: t, base: e.URL}
		owner.signIn(e.user.Login, e.user.Key, "/")
		dev := join(t, e.URL, owner.invite("dev@team.example", "developer"), "dev@team.example", "developer password 1")
		devKey := dev.makeKey("smtp", "send")
		c, err := dialSubmission(t, e, false, smtp.PlainAuth("", e.user.Login, devKey, "127.0.0.1"))
		if err != nil {
			t.Fatal(err)
		}
		msg := submittedMessage("orders@shop.example.com", "ann@rcpt.example.net", "")
		if err := submit(c, "orders@shop.example.com", []string{"ann@rcpt.example.net"}, msg); err != nil {
			t.Fatalf("submitting before the removal: %v", err)
		}
		owner.removeMember(0, 1)
		if err := c.Noop(); err != nil {
			t.Fatalf("NOOP: %v", err)
		}
		if err := submit(c, "orders@shop.example.com", []string{"bob@rcpt.example.net"}, msg); replyCode(err) != 530 {
			t.Errorf("submitting on the open session after the removal: %v, want 530", err)
		}
		if _, err := dialSubmission(t, e, false, smtp.PlainAuth("", e.user.Login, devKey, "127.0.0.1")); replyCode(err) != 535 {
			t.Errorf("authenticating again with the removed member's key: %v, want 535", err)
		}
	})
}

// TestRemovedMemberStreams: a live log stream a member opened, through the
// API with its key or in the console's live tail, ends soon after the
// member's removal instead of following the account's log on.
func TestRemovedMemberStreams(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		env, _, owner := startTeam(t, d)
		dev := join(t, env.URL, owner.invite("dev@team.example", "developer"), "dev@team.example", "developer password 1")
		devKey := dev.makeKey("logs", "log:read")
		open := func(name, path string, auth func(*http.Request)) <-chan struct{} {
			t.Helper()
			req, _ := http.NewRequest("GET", env.URL+path, nil)
			auth(req)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != 200 {
				t.Fatalf("%s: %d", name, resp.StatusCode)
			}
			t.Cleanup(func() { resp.Body.Close() })
			ended := make(chan struct{})
			go func() {
				io.Copy(io.Discard, resp.Body) //nolint:errcheck // until it ends
				close(ended)
			}()
			return ended
		}
		api := open("the API's log stream", "/api/domains/alice.example/log/stream?follow=true", func(r *http.Request) { r.SetBasicAuth("alice", devKey) })
		tail := open("the console's live tail", "/domains/alice.example/log/tail", func(r *http.Request) { r.AddCookie(dev.cookie) })
		select {
		case <-api:
			t.Fatal("the API's stream ended before the removal")
		case <-tail:
			t.Fatal("the live tail ended before the removal")
		case <-time.After(time.Second):
		}
		owner.removeMember(0, 1)
		deadline := time.After(15 * time.Second)
		for name, ch := range map[string]<-chan struct{}{"the API's log stream": api, "the console's live tail": tail} {
			select {
			case <-ch:
			case <-deadline:
				t.Errorf("%s still open 15 s after the member's removal", name)
				return
			}
		}
	})
}

// TestRemovedMemberInvitations: an invitation link an owner member made
// (in its session, or in one signed in with its key), still pending when
// the member is removed, stops working; the account's own pending link
// goes on working.
func TestRemovedMemberInvitations(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		env := apitest.Start(t, d, nil)
		alice := env.NewUser("alice")
		owner := &browser{t: t, base: env.URL}
		owner.signIn("alice", alice.Key, "/")
		boss := join(t, env.URL, owner.invite("boss@team.example", "owner"), "boss@team.example", "owner password 1")
		bossKey := boss.makeKey("boss key")
		viaKey := &browser{t: t, base: env.URL}
		viaKey.signIn("alice", bossKey, "/")
		alt := boss.invite("alt@elsewhere.example", "owner")
		alt2 := viaKey.invite("alt2@elsewhere.example", "owner")
		colleague := owner.invite("colleague@team.example", "viewer")

		_, mpage := owner.do("GET", "/members", nil, nil)
		m := regexp.MustCompile(`boss@team\.example[\s\S]*?action="/members/(\d+)/role"`).FindStringSubmatch(mpage)
		if m == nil {
			t.Fatalf("no role form for the boss:\n%s", mpage)
		}
		if status, _ := owner.submit("/members/"+m[1]+"/remove", url.Values{"csrf": {owner.csrfOf("/members")}}); status != 303 {
			t.Fatalf("removing the boss: %d", status)
		}
		for name, link := range map[string]string{"the boss's": alt, "the boss key session's": alt2} {
			b := &browser{t: t, base: env.URL}
			if r, page := b.do("POST", link, url.Values{"password": {"kept a way in 1"}, "again": {"kept a way in 1"}}, nil); r.StatusCode == 200 ||
				strings.Contains(page, "Your password is set") {
				t.Errorf("%s invitation link after the boss's removal: %d, want it dead", name, r.StatusCode)
			}
		}
		join(t, env.URL, colleague, "colleague@team.example", "colleague password 1")
	})
}
