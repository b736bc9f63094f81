package app_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/postline/postline/internal/store"
)

// On a phone the operator page's listing by site stacks each row into
// its cells, each led by its column's name, and nothing is wider than
// the screen; on a desktop the table keeps its header and no labels.
func TestConsoleSitesOnAPhone(t *testing.T) {
	t.Parallel()
	ctx, stop := browserContext(t)
	defer stop()
	e, _ := startShapedQueue(t, store.SQLite)
	e.suspend(t, map[string]any{"site": "mx.rcpt.example.net", "reason": "421 storm from a provider with a long reply text"})
	e.sendFrom(t, "shop.example.com", "a@rcpt.example.net")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		groups, _ := e.admin("GET", "/api/admin/queue?by=site", nil).JSON["data"].(map[string]any)["groups"].([]any)
		if len(groups) == 1 && groups[0].(map[string]any)["held"] == 1.0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the delivery was not held for its site: %v", groups)
		}
	}
	run := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	run("sign in", chromedp.Navigate(e.URL+"/"), chromedp.WaitVisible(chromedp.ID("login")),
		chromedp.SendKeys(chromedp.ID("login"), "operator"), chromedp.SendKeys(chromedp.ID("secret"), e.op.Key),
		chromedp.Submit(chromedp.ID("secret")), chromedp.WaitVisible(chromedp.CSS(".signout")))
	run("the listing by site", chromedp.Navigate(e.URL+"/admin?by=site"), chromedp.WaitVisible(chromedp.CSS("table.sites")))
	look := func(width, height int64) (label, header string, wide bool) {
		t.Helper()
		run("viewport", chromedp.EmulateViewport(width, height))
		var err error
		if label, err = chromedp.Run(ctx, chromedp.Evaluate[string](
			`getComputedStyle(document.querySelector('table.sites td[data-label="Held"]'), '::before').content`)); err != nil {
			t.Fatal(err)
		}
		if header, err = chromedp.Run(ctx, chromedp.Evaluate[string](`getComputedStyle(document.querySelector('table.sites thead')).position`)); err != nil {
			t.Fatal(err)
		}
		if wide, err = chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth`)); err != nil {
			t.Fatal(err)
		}
		return label, header, wide
	}
	if label, header, wide := look(390, 844); label != `"Held: "` || header != "absolute" || wide {
		t.Errorf("on a phone: the Held cell's label %s, the header's position %s, wider than the screen %v; "+
			`want "Held: ", the header moved away, not wider`, label, header, wide)
	}
	if label, header, _ := look(1440, 900); label != "none" || header == "absolute" {
		t.Errorf("on a desktop: the Held cell's label %s, the header's position %s; want no label, the header in place", label, header)
	}

	// Tables whose cells the page does not label (the keys page) are
	// labelled by console.js from their headings.
	run("the keys page", chromedp.EmulateViewport(390, 844), chromedp.Navigate(e.URL+"/keys"), chromedp.WaitVisible(chromedp.CSS("table")))
	labels, err := chromedp.Run(ctx, chromedp.Evaluate[string](`Array.prototype.map.call(document.querySelector('table tbody tr').cells,
		function (td) { return getComputedStyle(td, '::before').content; }).join("|")`))
	if err != nil {
		t.Fatal(err)
	}
	if want := `"Name: "|"Starts with: "|"Scopes: "|"Domains: "|"Created: "|"Last used: "|"Expires: "|"State: "|"Actions: "`; labels != want {
		t.Errorf("the keys table's cells on a phone are led by %s\nwant %s", labels, want)
	}
}
