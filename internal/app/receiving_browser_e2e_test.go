package app_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/postline/postline/internal/store"
)

// TestReceivedHTMLInABrowser: a received message's HTML, opened in the
// console in Chromium, loads in its frame but reaches nothing: neither
// its remote image nor its script's request arrives at the tracker,
// which the same browser reaches when asked to; opened alone, its script
// does not run.
func TestReceivedHTMLInABrowser(t *testing.T) {
	t.Parallel()
	ctx, stop := browserContext(t)
	defer stop()
	var hits atomic.Int64
	var mu sync.Mutex
	var paths []string
	tracker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/favicon.ico" {
			return // the browser's own, after the control page
		}
		hits.Add(1)
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
	}))
	seen := func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), paths...) }
	defer tracker.Close()
	r := startInbound(t, store.SQLite, nil)
	r.route(t, r.user, 0, "catch_all()", "store()")
	html := fmt.Sprintf(`<p id="greeting">Hello from the frame</p><img src="%s/pixel.gif">`+
		`<script>fetch("%s/script"); document.getElementById("greeting").textContent = "script ran";</script>`, tracker.URL, tracker.URL)
	msg := crlfText("From: ann@sender.example\nTo: hi@shop.example.com\nSubject: tracked\nMIME-Version: 1.0\n" +
		"Content-Type: text/html; charset=utf-8\n\n" + html + "\n")
	if res := deliver(t, r.addr, "ann@sender.example", []string{"hi@shop.example.com"}, msg); res.data != nil {
		t.Fatalf("deliver: %v %v", res.rcpt, res.data)
	}
	id := jsonList(r.get(t, r.user, "/api/domains/shop.example.com/inbound"))[0]["id"].(string)
	run := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	run("the tracker is reachable", chromedp.Navigate(tracker.URL+"/control"))
	if hits.Load() != 1 {
		t.Fatalf("the browser did not reach the tracker: %d", hits.Load())
	}
	run("sign in", chromedp.Navigate(r.URL+"/"), chromedp.WaitVisible(chromedp.ID("login")),
		chromedp.SendKeys(chromedp.ID("login"), "alice"), chromedp.SendKeys(chromedp.ID("secret"), r.user.Key),
		chromedp.Submit(chromedp.ID("secret")), chromedp.WaitVisible(chromedp.CSS("table")))
	run("the message", chromedp.Navigate(r.URL+"/domains/shop.example.com/inbound/"+id), chromedp.WaitVisible(chromedp.CSS("iframe.mailhtml")))
	// The frame loaded its document (a refused one would be an error
	// page): it is another origin, so the page's own DOM cannot read it.
	// Chromium runs the sandboxed frame in a process of its own, as a
	// target of its own: its URL says the document loaded (a refused one
	// would be an error page).
	frame := ""
	deadline := time.Now().Add(10 * time.Second)
	for frame == "" && time.Now().Before(deadline) {
		targets, err := chromedp.CallBrowser(ctx, target.GetTargets, target.GetTargetsParams{})
		if err != nil {
			t.Fatal(err)
		}
		for _, ti := range targets.TargetInfos {
			if ti.Type == "iframe" {
				frame = ti.URL
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if frame != r.URL+"/domains/shop.example.com/inbound/"+id+"/html" {
		t.Fatalf("the frame's document: %q", frame)
	}
	time.Sleep(time.Second) // what would load has had its chance
	if n := hits.Load(); n != 1 {
		t.Errorf("the tracker got %d requests from the message page (%q), want none", n-1, seen())
	}
	// The frame's document alone, opened as a page: its own policy keeps
	// the script from running and the image from loading there too.
	run("the HTML alone", chromedp.Navigate(r.URL+"/domains/shop.example.com/inbound/"+id+"/html"), chromedp.WaitVisible(chromedp.ID("greeting")))
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("greeting")))
	if err != nil || text != "Hello from the frame" {
		t.Errorf("the HTML reads %q (%v): its script ran", text, err)
	}
	time.Sleep(time.Second)
	if n := hits.Load(); n != 1 {
		t.Errorf("the tracker got %d requests from the HTML (%q), want none", n-1, seen())
	}
}
