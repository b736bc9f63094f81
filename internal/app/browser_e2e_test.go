package app_test

import (
	"context"
	"crypto/sha256"
	"flag"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/store"
)

// screenshots, when set (go test -run TestConsoleInABrowser ./internal/app/
// -args -screenshots), makes the browser test write the console's pages at
// two widths to docs/screenshots (shown in the README); otherwise they go
// to a temporary directory, so that a test run leaves the tree as it was.
var screenshots = flag.Bool("screenshots", false, "write the browser test's screenshots to docs/screenshots")

// trackedScreenshots is where the README's screenshots are kept.
const trackedScreenshots = "../../docs/screenshots"

// screenshotDir is where the test writes its screenshots. Without
// -screenshots the tracked ones must come out of the run as they went in
// (a test never changes the working tree): the test fails otherwise.
func screenshotDir(t *testing.T) string {
	if *screenshots {
		return trackedScreenshots
	}
	before := hashFiles(t, trackedScreenshots)
	t.Cleanup(func() {
		if after := hashFiles(t, trackedScreenshots); !maps.Equal(before, after) {
			t.Errorf("the test changed the tracked screenshots in docs/screenshots (%d files before, %d after); "+
				"only -screenshots may write them", len(before), len(after))
		}
	})
	return t.TempDir()
}

// hashFiles is each file of dir by name, as a SHA-256.
func hashFiles(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][32]byte{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = sha256.Sum256(b)
	}
	return out
}

// browserContext starts Debian's chromium headless with a throwaway
// profile and nothing that talks to the outside. The browser test runs
// once per CI run, in the SQLite pass.
func browserContext(t *testing.T) (context.Context, func()) {
	t.Helper()
	if os.Getenv("POSTLINE_TEST_DATABASE_URL") != "" {
		t.Skip("the browser test runs once, in the SQLite pass")
	}
	path, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium is not installed (.ci/run installs it)")
		}
		t.Skip("chromium not installed")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("metrics-recording-only", true),
		chromedp.NoSandbox, // containers without user namespaces
	)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, 2*time.Minute)
	return ctx, func() { cancelT(); cancelB(); cancelA() }
}

// shoot writes the current page at 1280×800 (the desktop) and 390×844 to dir.
func shoot(ctx context.Context, t *testing.T, dir, name string) {
	t.Helper()
	for _, size := range []struct {
		w, h int64
		tag  string
	}{{1280, 800, "desktop"}, {390, 844, "phone"}} {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(size.w, size.h)); err != nil {
			t.Fatalf("viewport: %v", err)
		}
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+"-"+size.tag+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
		if size.tag == "phone" {
			checkPhoneLayout(ctx, t, name)
		} else {
			checkAccessibility(ctx, t, name)
		}
	}
}

// phoneLayout lists what a phone's reader would miss on the page: a
// stacked table cell not led by its column's name, a filter label not
// above its field, a page wider than the screen.
const phoneLayout = `(function () {
  var bad = [];
  Array.prototype.forEach.call(document.querySelectorAll("table"), function (t) {
    if (t.offsetParent === null || !t.tHead) { return; }
    var heads = [];
    Array.prototype.forEach.call(t.tHead.rows[0].cells, function (th) {
      for (var i = 0; i < (th.colSpan || 1); i++) { heads.push(th.textContent.trim()); }
    });
    Array.prototype.forEach.call(t.tBodies, function (b) {
      Array.prototype.forEach.call(b.rows, function (tr) {
        var col = 0;
        Array.prototype.forEach.call(tr.cells, function (td) {
          var head = heads[col] || "", span = td.colSpan || 1;
          col += span;
          if (td.tagName !== "TD" || head === "" || span >= heads.length) { return; }
          var before = getComputedStyle(td, "::before").content;
          if (before.indexOf(head) < 0) { bad.push("a cell of column " + JSON.stringify(head) + " shows " + before); }
        });
      });
    });
  });
  Array.prototype.forEach.call(document.querySelectorAll("form.filters label[for]"), function (l) {
    var f = document.getElementById(l.htmlFor);
    if (!f) { return; }
    var lr = l.getBoundingClientRect(), fr = f.getBoundingClientRect();
    if (lr.bottom > fr.top + 1 || Math.abs(lr.left - fr.left) > 2) { bad.push("the filter label " + JSON.stringify(l.textContent.trim()) + " is not above its field"); }
  });
  if (document.documentElement.scrollWidth > window.innerWidth) { bad.push("the page is " + document.documentElement.scrollWidth + " px wide"); }
  return bad.join("\n");
})()`

// checkPhoneLayout fails the test when the page, at a phone's width,
// loses what its layout says on a desktop (issue 32, defect 3).
func checkPhoneLayout(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	bad, err := chromedp.Run(ctx, chromedp.Evaluate[string](phoneLayout))
	if err != nil {
		t.Fatalf("checking %s on a phone: %v", name, err)
	}
	if bad != "" {
		t.Errorf("%s on a phone:\n%s", name, bad)
	}
}

// TestConsoleInABrowser drives the console in headless Chromium: sign in
// with an API key, see the domain and its DNS records, suppress and
// whitelist an address, find a message sent through the API in the log
// and open its chain, sign out and be refused. It writes screenshots of
// every page.
func TestConsoleInABrowser(t *testing.T) {
	t.Parallel()
	ctx, stop := browserContext(t)
	defer stop()
	e := startSend(t, store.SQLite, false, func(c *config.Config) { c.RelayAllowlist = []string{"*.relay.example"} })
	shots := screenshotDir(t)
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	mainText := func() string {
		t.Helper()
		text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("main")))
		if err != nil {
			t.Fatalf("reading the page: %v", err)
		}
		return text
	}
	run("open the console", chromedp.Navigate(e.URL+"/"), chromedp.WaitVisible(chromedp.ID("login")))
	shoot(ctx, t, shots, "signin")
	run("sign in",
		chromedp.SendKeys(chromedp.ID("login"), "alice"),
		chromedp.SendKeys(chromedp.ID("secret"), e.user.Key),
		chromedp.Submit(chromedp.ID("secret")),
		chromedp.WaitVisible(chromedp.CSS("table")))
	if text := mainText(); !strings.Contains(text, "shop.example.com") {
		t.Fatalf("overview after sign-in: %q", text)
	}
	shoot(ctx, t, shots, "overview")
	run("the domain", chromedp.Navigate(e.URL+"/domains/shop.example.com"), chromedp.WaitVisible(chromedp.CSS("table")))
	if text := mainText(); !strings.Contains(text, "_domainkey.shop.example.com") || !strings.Contains(text, "v=DKIM1") {
		t.Fatalf("domain page: %q", text)
	}
	shoot(ctx, t, shots, "domain")
	// Verify now, with SPF never published: the domain stays verified and
	// says its records changed; the sends below still go out (defect 1).
	run("verify now", chromedp.Click(chromedp.CSS(`form[action$="/verify"] button`)), chromedp.WaitVisible(chromedp.ID("records-changed")))
	if text := mainText(); !strings.Contains(text, "stays verified and keeps sending") || !strings.Contains(text, "spf — missing") {
		t.Fatalf("the domain page after verify now: %q", text)
	}
	run("add a relay domain",
		chromedp.Navigate(e.URL+"/domains"),
		chromedp.SendKeys(chromedp.ID("d-name"), "news.example.com"),
		chromedp.Click(chromedp.CSS(`input[name=mode][value=smtp]`)),
		chromedp.SendKeys(chromedp.ID("d-host"), "smtp.relay.example"),
		chromedp.SendKeys(chromedp.ID("d-user"), "relayuser"),
		chromedp.SendKeys(chromedp.ID("d-password"), "relaypass"),
		chromedp.Submit(chromedp.ID("d-name")),
		chromedp.WaitVisible(chromedp.Search(`//h1[text()="news.example.com"]`)))
	if text := mainText(); !strings.Contains(text, "_domainkey.news.example.com") || !strings.Contains(text, "smtp.relay.example") ||
		strings.Contains(text, "relaypass") {
		t.Fatalf("the new relay domain's page: %q", text)
	}
	shoot(ctx, t, shots, "domain-added")

	run("suppress an address",
		chromedp.Navigate(e.URL+"/domains/shop.example.com/suppressions?type=bounce"),
		chromedp.SendKeys(chromedp.ID("s-recipient"), "gone@rcpt.example.net"),
		chromedp.Submit(chromedp.ID("s-recipient")),
		chromedp.WaitVisible(chromedp.Search(`//td[text()="gone@rcpt.example.net"]`)))
	run("whitelist it",
		chromedp.SetValue(chromedp.ID("s-type"), "whitelist"),
		chromedp.SendKeys(chromedp.ID("s-recipient"), "gone@rcpt.example.net"),
		chromedp.Submit(chromedp.ID("s-recipient")),
		chromedp.WaitVisible(chromedp.Search(`//a[@aria-current="page" and text()="whitelist"]`)))
	if text := mainText(); !strings.Contains(text, "gone@rcpt.example.net") {
		t.Fatalf("whitelist page: %q", text)
	}
	shoot(ctx, t, shots, "suppressions")
	// Destructive buttons ask first (defect 8): cancelled, nothing is
	// removed; confirmed, the page the POST redirects to says what
	// happened, once, and a reload posts nothing again.
	dialogs := make(chan string, 4)
	answers := make(chan bool, 1)
	go func() {
		for ev, err := range chromedp.Events(ctx, page.JavascriptDialogOpening) {
			if err != nil {
				return
			}
			dialogs <- ev.Message
			chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: <-answers}) //nolint:errcheck
		}
	}()
	remove := chromedp.CSS(`form[data-confirm] button.danger`)
	if red, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`getComputedStyle(document.querySelector('form[data-confirm] button.danger')).backgroundColor`)); red != "rgb(164, 14, 38)" {
		t.Errorf("the Remove button's colour is %s, want the danger red", red)
	}
	answers <- false
	run("remove, then cancel", chromedp.Click(remove))
	if msg := <-dialogs; !strings.Contains(msg, "Remove gone@rcpt.example.net from the whitelist list?") {
		t.Errorf("the confirmation asked %q", msg)
	}
	run("still listed", chromedp.WaitVisible(chromedp.Search(`//td[text()="gone@rcpt.example.net"]`)))
	answers <- true
	// The page before had a notice too ("Added ..."): wait for the new one.
	run("remove, confirmed", chromedp.Click(remove),
		chromedp.WaitVisible(chromedp.Search(`//*[@id="notice" and contains(., "Removed from")]`)))
	<-dialogs
	if text := mainText(); !strings.Contains(text, "Removed from the whitelist list.") || strings.Contains(text, "gone@rcpt.example.net") {
		t.Fatalf("after the confirmed removal: %q", text)
	}
	run("reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("main")))
	if text := mainText(); strings.Contains(text, "Removed from") {
		t.Errorf("a reload shows the notice again: %q", text)
	}
	// Bulk removal: a ticked box belongs to the form after the table
	// (form="bulk-remove"), which asks first.
	answers <- true
	run("tick and remove selected",
		chromedp.Navigate(e.URL+"/domains/shop.example.com/suppressions?type=bounce"),
		chromedp.Click(chromedp.CSS(`input[aria-label="Select gone@rcpt.example.net"]`)),
		chromedp.Click(chromedp.CSS(`#bulk-remove button.danger`)), chromedp.WaitVisible(chromedp.ID("notice")))
	if msg := <-dialogs; !strings.Contains(msg, "Remove the selected entries from the bounce list?") {
		t.Errorf("the bulk removal asked %q", msg)
	}
	if text := mainText(); !strings.Contains(text, "Removed 1 entry from the bounce list.") || strings.Contains(text, "gone@rcpt.example.net") {
		t.Fatalf("after removing the ticked entry: %q", text)
	}

	resp := e.send(t, basicParts("ann@rcpt.example.net"), nil)
	msgID := resp.JSON["data"].(map[string]any)["message_ids"].([]any)[0].(string)
	if _, err := e.sink.WaitForMessages(ctxTimeout(t, 15*time.Second), 1); err != nil {
		t.Fatal(err)
	}
	var text string
	deadline := time.Now().Add(10 * time.Second)
	for {
		run("the log", chromedp.Navigate(e.URL+"/domains/shop.example.com/log"), chromedp.WaitVisible(chromedp.CSS("table")))
		if text = mainText(); strings.Contains(text, "delivered") || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !strings.Contains(text, "ann@rcpt.example.net") || !strings.Contains(text, "delivered") {
		t.Fatalf("log page: %q", text)
	}
	shoot(ctx, t, shots, "log")

	// The live tail: a message sent through the API appears within 2 s;
	// paused, new entries wait and appear on resume.
	run("start the live tail", chromedp.Click(chromedp.ID("tail-toggle")),
		chromedp.WaitVisible(chromedp.Search(`//span[@id="tail-status" and text()="live"]`)))
	sent := time.Now()
	e.send(t, basicParts("tail@rcpt.example.net"), nil)
	tailCtx, cancelTail := context.WithTimeout(ctx, 2*time.Second)
	err := chromedp.Do(tailCtx, chromedp.WaitVisible(chromedp.Search(`//tbody[@id="tail-rows"]/tr/td[text()="tail@rcpt.example.net"]`)))
	cancelTail()
	if err != nil {
		t.Fatalf("the message sent through the API was not in the live tail within 2 s: %v", err)
	}
	t.Logf("in the live tail %v after the send", time.Since(sent).Round(10*time.Millisecond))
	shoot(ctx, t, shots, "live-tail")
	run("pause", chromedp.Click(chromedp.ID("tail-toggle")))
	e.send(t, basicParts("paused@rcpt.example.net"), nil)
	run("entries wait while paused", chromedp.WaitVisible(chromedp.Search(`//span[@id="tail-status" and contains(text(), "new")]`)))
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#tail-rows td').length`)); n == 0 {
		t.Fatal("the tail lost its rows")
	}
	if shown, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById('tail-rows').textContent.includes('paused@')`)); shown {
		t.Error("an entry was shown while paused")
	}
	run("resume", chromedp.Click(chromedp.ID("tail-toggle")),
		chromedp.WaitVisible(chromedp.Search(`//tbody[@id="tail-rows"]/tr/td[text()="paused@rcpt.example.net"]`)))

	run("open the chain",
		chromedp.Click(chromedp.CSS(`a[href$="/messages/`+msgID+`"]`)),
		chromedp.WaitVisible(chromedp.Search(`//td[text()="delivered"]`)))
	if text := mainText(); !strings.Contains(text, "queued") || !strings.Contains(text, "SMTP code\n250") {
		t.Fatalf("chain page: %q", text)
	}
	shoot(ctx, t, shots, "chain")
	// "Send a test message" (issue 32): the button lands on the message's
	// page, which shows it delivered once the sink has it.
	run("send a test message", chromedp.Navigate(e.URL+"/domains/shop.example.com"),
		chromedp.SendKeys(chromedp.ID("test-to"), "tried@rcpt.example.net"),
		chromedp.Click(chromedp.CSS(`#test-message button`)), chromedp.WaitVisible(chromedp.Search(`//td[text()="queued"]`)))
	testPage, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil || !strings.Contains(testPage, "/domains/shop.example.com/messages/") {
		t.Fatalf("the test message's button landed on %q (%v)", testPage, err)
	}
	waitFor(t, "the test message delivered on its page", func() bool {
		run("reload the test message's page", chromedp.Navigate(testPage), chromedp.WaitVisible(chromedp.CSS("main")))
		return strings.Contains(mainText(), "delivered")
	})
	run("analytics", chromedp.Navigate(e.URL+"/analytics"), chromedp.WaitVisible(chromedp.CSS("svg.outcomes")))
	shoot(ctx, t, shots, "analytics")
	checkDarkMode(ctx, t, e.URL)
	// List cleaning: upload 1,000 lines, wait for the job, download the results.
	e.DNS.AddMX("acme-mail.com", 10, "mx.acme-mail.com")
	e.DNS.AddA("mx.acme-mail.com", "192.0.2.10")
	list, _ := listCSV(1000)
	listFile := filepath.Join(t.TempDir(), "list.csv")
	if err := os.WriteFile(listFile, []byte(list), 0o600); err != nil {
		t.Fatal(err)
	}
	run("upload a list",
		chromedp.Navigate(e.URL+"/validation"),
		chromedp.SetUploadFiles(chromedp.ID("v-file"), []string{listFile}),
		chromedp.Submit(chromedp.ID("v-file")),
		chromedp.WaitVisible(chromedp.ID("job-download")))
	jobCtx, cancelJob := context.WithTimeout(ctx, 60*time.Second)
	err = chromedp.Do(jobCtx, chromedp.WaitVisible(chromedp.Search(`//p[@role="status" and starts-with(text(), "done: 1,000 of 1,000")]`)))
	cancelJob()
	if err != nil {
		t.Fatalf("the uploaded list was not done within a minute: %v", err)
	}
	shoot(ctx, t, shots, "list-done")
	csvText, err := chromedp.Run(ctx, chromedp.Evaluate[string](`fetch(document.getElementById('job-download').href).then(r => r.text())`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(csvText), "\n"); len(lines) != 1001 || !strings.HasPrefix(lines[0], "email,status") ||
		!strings.HasPrefix(lines[1], "not-an-address-0,invalid") {
		t.Fatalf("downloaded results: %d lines, starting %q", len(lines), lines[:min(3, len(lines))])
	}

	if err := e.App.Accounts.SetAdmin(context.Background(), e.user.Login, true); err != nil { // the operator page too
		t.Fatal(err)
	}
	// A new key is shown once, with a copy button; a reload makes no other.
	run("create a key", chromedp.Navigate(e.URL+"/keys"), chromedp.SendKeys(chromedp.ID("key-name"), "ci"),
		chromedp.Click(chromedp.CSS(`form[action="/keys"] button[type=submit]`)), chromedp.WaitVisible(chromedp.ID("new-key")),
		chromedp.WaitVisible(chromedp.CSS(`#new-key + button.copy`)))
	run("reload the keys", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("table")))
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`Array.prototype.filter.call(document.querySelectorAll('tbody tr td:first-child'), function (td) { return td.textContent === "ci"; }).length`)); n != 1 {
		t.Errorf("after a reload there are %d keys named ci, want 1", n)
	}
	if shown, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById('new-key') !== null`)); shown {
		t.Error("a reload shows the new key again")
	}
	for _, p := range []string{"/keys", "/validation?email=jane%40gmail.con", "/domains", "/admin"} {
		run("page "+p, chromedp.Navigate(e.URL+p), chromedp.WaitVisible(chromedp.CSS("main")))
		shoot(ctx, t, shots, strings.Trim(strings.SplitN(p, "?", 2)[0], "/"))
	}

	run("sign out", chromedp.Click(chromedp.CSS(".signout button")), chromedp.WaitVisible(chromedp.ID("login")))
	run("a page after sign-out", chromedp.Navigate(e.URL+"/domains"), chromedp.WaitVisible(chromedp.ID("login")))
	h1, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('h1').textContent`))
	if err != nil || h1 != "Sign in" {
		t.Fatalf("after sign-out /domains shows %q (%v), want the sign-in form", h1, err)
	}
}

// axeSource is axe-core, pinned in testdata/js (npm ci), read once.
var axeSource = sync.OnceValues(func() ([]byte, error) {
	return os.ReadFile("../../testdata/js/node_modules/axe-core/axe.min.js")
})

// axeViolation is what the test reports of one of axe's findings.
type axeViolation struct {
	ID     string   `json:"id"`
	Impact string   `json:"impact"`
	Help   string   `json:"help"`
	Nodes  []string `json:"nodes"`
}

// checkAccessibility runs axe-core's automated accessibility check (issue
// 32) on the current page: a serious or critical violation fails the
// test. Without axe-core installed it says so, and fails under CI=true.
func checkAccessibility(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	src, err := axeSource()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Errorf("axe-core is not installed (cd testdata/js && npm ci): %v", err)
		} else {
			t.Logf("axe-core is not installed (cd testdata/js && npm ci): no accessibility check of %s", name)
		}
		return
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](string(src))); err != nil {
		t.Fatalf("loading axe-core into %s: %v", name, err)
	}
	found, err := chromedp.Run(ctx, chromedp.Evaluate[[]axeViolation](`axe.run(document, {resultTypes: ["violations"]}).then(function (r) {
  return r.violations.filter(function (v) { return v.impact === "serious" || v.impact === "critical"; }).map(function (v) {
    return {id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 5).map(function (n) { return n.target.join(" "); })};
  });
})`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("axe-core on %s: %v", name, err)
	}
	for _, v := range found {
		t.Errorf("%s: accessibility (axe-core %s, %s): %s at %v", name, v.ID, v.Impact, v.Help, v.Nodes)
	}
}

// checkDarkMode: with the system in dark mode the console is dark (it
// follows prefers-color-scheme) and axe-core finds no serious or critical
// violation, contrast included, on a few pages; the test goes on in light.
func checkDarkMode(ctx context.Context, t *testing.T, base string) {
	t.Helper()
	scheme := func(v string) {
		t.Helper()
		if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: v}}}); err != nil {
			t.Fatalf("emulating prefers-color-scheme %s: %v", v, err)
		}
	}
	scheme("dark")
	defer scheme("light")
	for _, p := range []string{"/", "/analytics", "/domains/shop.example.com", "/domains/shop.example.com/log"} {
		if err := chromedp.Do(ctx, chromedp.Navigate(base+p), chromedp.WaitVisible(chromedp.CSS("main"))); err != nil {
			t.Fatalf("dark %s: %v", p, err)
		}
		bg, err := chromedp.Run(ctx, chromedp.Evaluate[string](`getComputedStyle(document.body).backgroundColor`))
		if err != nil || bg != "rgb(15, 20, 25)" {
			t.Errorf("dark %s: the page's background is %q (%v), want the dark scheme's rgb(15, 20, 25)", p, bg, err)
		}
		checkAccessibility(ctx, t, "dark "+p)
	}
}
