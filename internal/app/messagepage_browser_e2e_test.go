package app_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/store"
)

// TestSentHTMLInABrowser: a sent message's page, opened in Chromium,
// shows its HTML in a sandboxed frame that loads but reaches nothing:
// neither its remote image (a loopback server standing for a remote
// host, which the same browser reaches when asked to) nor its script's
// request arrives.
func TestSentHTMLInABrowser(t *testing.T) {
	t.Parallel()
	ctx, stop := browserContext(t)
	defer stop()
	var hits atomic.Int64
	remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/favicon.ico" {
			hits.Add(1)
		}
	}))
	defer remote.Close()
	e := startSend(t, store.SQLite, false, nil)
	html := fmt.Sprintf(`<p id="greeting">Hello Ann</p><img src="%s/pixel.gif"><script>fetch("%s/script")</script>`, remote.URL, remote.URL)
	resp := e.send(t, append(basicParts("ann@rcpt.example.net"), part{name: "html", value: html}), nil)
	if resp.StatusCode != 202 {
		t.Fatalf("send: %d %s", resp.StatusCode, resp.Body)
	}
	id := resp.JSON["data"].(map[string]any)["message_ids"].([]any)[0].(string)
	waitFor(t, "the delivered entry", func() bool { return len(e.entries(t, "ann@rcpt.example.net", event.Delivered)) == 1 })
	run := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	run("the remote host is reachable", chromedp.Navigate(remote.URL+"/control"))
	if hits.Load() != 1 {
		t.Fatalf("the browser did not reach the remote host: %d", hits.Load())
	}
	run("sign in", chromedp.Navigate(e.URL+"/"), chromedp.WaitVisible(chromedp.ID("login")),
		chromedp.SendKeys(chromedp.ID("login"), "alice"), chromedp.SendKeys(chromedp.ID("secret"), e.user.Key),
		chromedp.Submit(chromedp.ID("secret")), chromedp.WaitVisible(chromedp.CSS("table")))
	page := e.URL + "/domains/shop.example.com/messages/" + id
	run("the message", chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS("iframe.mailhtml[sandbox]")))
	// Chromium runs the sandboxed frame (an origin of its own) as a target
	// of its own: its URL says the document loaded.
	frame := ""
	for deadline := time.Now().Add(10 * time.Second); frame == "" && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		targets, err := chromedp.CallBrowser(ctx, target.GetTargets, target.GetTargetsParams{})
		if err != nil {
			t.Fatal(err)
		}
		for _, ti := range targets.TargetInfos {
			if ti.Type == "iframe" {
				frame = ti.URL
			}
		}
	}
	if want := page + "/html?recipient=ann%40rcpt.example.net"; frame != want {
		t.Fatalf("the frame's document: %q, want %q", frame, want)
	}
	time.Sleep(time.Second) // what would load has had its chance
	if n := hits.Load(); n != 1 {
		t.Errorf("the remote host got %d requests from the message page, want none", n-1)
	}
}
