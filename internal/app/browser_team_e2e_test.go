package app_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/store"
)

// TestConsoleTeamInABrowser: in Chromium, an owner invites a viewer on
// the members page (the link shown once), the audit log shows it; the
// viewer sets a password at the link, signs in with the email, is shown
// the 403 page at /members and no form on the suppressions page, and a
// POST it makes anyway is refused. Each page passes the phone layout and
// accessibility checks (the screenshots go to a temporary directory).
func TestConsoleTeamInABrowser(t *testing.T) {
	t.Parallel()
	ctx, stop := browserContext(t)
	defer stop()
	env := apitest.Start(t, store.SQLite, nil)
	alice := env.NewUser("alice")
	env.NewDomain(alice, "alice.example")
	shots := t.TempDir()
	run := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	eval := func(js string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return v
	}
	run("sign in as the owner", chromedp.Navigate(env.URL+"/"), chromedp.WaitVisible(chromedp.ID("login")),
		chromedp.SendKeys(chromedp.ID("login"), "alice"), chromedp.SendKeys(chromedp.ID("secret"), alice.Key),
		chromedp.Submit(chromedp.ID("secret")), chromedp.WaitVisible(chromedp.CSS(".signout")))
	run("invite a viewer", chromedp.Navigate(env.URL+"/members"), chromedp.WaitVisible(chromedp.ID("member-email")),
		chromedp.SendKeys(chromedp.ID("member-email"), "view@team.example"),
		chromedp.Click(chromedp.CSS(`form[action="/members"] button[type=submit]`)), chromedp.WaitVisible(chromedp.ID("invite-link")))
	shoot(ctx, t, shots, "members")
	link := eval(`document.getElementById('invite-link').textContent`)
	if !strings.HasPrefix(link, env.URL+"/join/") {
		t.Fatalf("the invitation link %q", link)
	}
	run("the audit log", chromedp.Navigate(env.URL+"/audit"), chromedp.WaitVisible(chromedp.CSS("table.audit")))
	if text := eval(`document.querySelector('main').textContent`); !strings.Contains(text, "member.invited") || !strings.Contains(text, "view@team.example as viewer") {
		t.Errorf("the audit page: %q", text)
	}
	shoot(ctx, t, shots, "audit")
	run("sign out", chromedp.Click(chromedp.CSS(".signout button")), chromedp.WaitVisible(chromedp.ID("login")))

	run("open the link", chromedp.Navigate(link), chromedp.WaitVisible(chromedp.ID("pw-new")))
	shoot(ctx, t, shots, "join")
	run("set the password", chromedp.SendKeys(chromedp.ID("pw-new"), "viewer password 1"), chromedp.SendKeys(chromedp.ID("pw-again"), "viewer password 1"),
		chromedp.Submit(chromedp.ID("pw-again")), chromedp.WaitVisible(chromedp.ID("session-ended")))
	if login := eval(`document.getElementById('login').value`); login != "view@team.example" {
		t.Errorf("the sign-in form after the link is filled with %q, want the member's email", login)
	}
	run("sign in as the viewer", chromedp.SendKeys(chromedp.ID("secret"), "viewer password 1"),
		chromedp.Submit(chromedp.ID("secret")), chromedp.WaitVisible(chromedp.CSS(".signout")))
	run("the members page", chromedp.Navigate(env.URL+"/members"), chromedp.WaitVisible(chromedp.CSS("main h1")))
	if h1 := eval(`document.querySelector('main h1').textContent`); h1 != "Owners only" {
		t.Errorf("a viewer's /members shows %q, want the 403 page", h1)
	}
	shoot(ctx, t, shots, "members-viewer")
	run("the suppressions", chromedp.Navigate(env.URL+"/domains/alice.example/suppressions"), chromedp.WaitVisible(chromedp.CSS("main h1")))
	if forms := eval(`Array.prototype.filter.call(document.querySelectorAll('form[method=post]'), function (f) { return f.getAttribute('action') !== '/sign-out'; }).length + ''`); forms != "0" {
		t.Errorf("the viewer's suppressions page shows %s forms", forms)
	}
	shoot(ctx, t, shots, "suppressions-viewer")
	status, err := chromedp.Run(ctx, chromedp.Evaluate[int](`fetch('/domains/alice.example/suppressions', {method: 'POST',
		headers: {'Content-Type': 'application/x-www-form-urlencoded'},
		body: 'csrf=' + encodeURIComponent(document.querySelector('input[name=csrf]').value) + '&recipient=x%40rcpt.example&type=bounce'}).then(r => r.status)`,
		chromedp.EvalAwaitPromise))
	if err != nil || status != 403 {
		t.Errorf("the viewer's POST: %d (%v), want 403", status, err)
	}
}
