package app_test

import (
	"bytes"
	"context"
	"net/http"
	"net/mail"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/app"
	"github.com/postline/postline/internal/store"
)

// TestRebuiltCopyIsTheSentOne: with tracking on, the copy the API
// rebuilds has what the recipient got (Message-ID, Date, subject, the
// same click, open and unsubscribe URLs: the tokens are deterministic)
// but no DKIM signature; the console's frame leaves the open pixel out.
// After the log's retention pruned the content, the copy is gone but the
// message's click links still redirect where they did.
func TestRebuiltCopyIsTheSentOne(t *testing.T) {
	t.Parallel()
	clock := &testClock{}
	e := startSendWith(t, store.SQLite, false, nil, app.Options{Now: clock.now})
	if r := e.Do(apitest.Request{Method: "PUT", Path: "/api/domains/shop.example.com/tracking", Auth: e.user.Auth(),
		Body: map[string]bool{"opens": true, "clicks": true, "unsubscribe": true}}); r.StatusCode != 200 {
		t.Fatalf("tracking on: %d %s", r.StatusCode, r.Body)
	}
	html := `<html><body><p>Hi</p><a href="https://landing.example/one">One</a> <a href="https://landing.example/two">Two</a></body></html>`
	resp := e.send(t, append(basicParts("ann@rcpt.example.net"), part{name: "html", value: html}), nil)
	if resp.StatusCode != 202 {
		t.Fatalf("send: %d %s", resp.StatusCode, resp.Body)
	}
	id := resp.JSON["data"].(map[string]any)["message_ids"].([]any)[0].(string)
	msgs, err := e.sink.WaitForMessages(ctxTimeout(t, 15*time.Second), 1)
	if err != nil {
		t.Fatal(err)
	}
	sent := readReceived(t, msgs[0].Data)
	ar := e.Do(apitest.Request{Method: "GET", Path: "/api/domains/shop.example.com/messages/" + id + "/raw", Auth: e.user.Auth()})
	if ar.StatusCode != 200 {
		t.Fatalf("raw: %d %s", ar.StatusCode, ar.Body)
	}
	rebuilt := readReceived(t, ar.Body)
	if len(sent.clicks) != 2 || strings.Join(rebuilt.clicks, " ") != strings.Join(sent.clicks, " ") || rebuilt.pixel == "" ||
		rebuilt.pixel != sent.pixel || rebuilt.listUnsub != sent.listUnsub || rebuilt.text != sent.text {
		t.Errorf("the copy's tracking differs from the sent message's:\nsent %+v\ncopy %+v", sent, rebuilt)
	}
	sh, ch := header(t, msgs[0].Data), header(t, ar.Body)
	for _, f := range []string{"Message-Id", "Date", "Subject", "From", "To"} {
		if sh.Get(f) == "" || sh.Get(f) != ch.Get(f) {
			t.Errorf("%s: sent %q, copy %q", f, sh.Get(f), ch.Get(f))
		}
	}
	if sh.Get("DKIM-Signature") == "" || ch.Get("DKIM-Signature") != "" {
		t.Errorf("DKIM-Signature: sent %q, copy %q; want the copy unsigned", sh.Get("DKIM-Signature"), ch.Get("DKIM-Signature"))
	}
	b := &browser{t: t, base: e.URL}
	b.signIn("alice", e.user.Key, "/")
	if r, body := b.do("GET", "/domains/shop.example.com/messages/"+id+"/html", nil, nil); r.StatusCode != 200 ||
		strings.Contains(body, "/t/o/") || !strings.Contains(body, "/t/c/") {
		t.Errorf("the frame's HTML: %d, want tracked links and no open pixel\n%s", r.StatusCode, body)
	}

	clock.advance(31 * 24 * time.Hour)
	if _, err := e.App.PruneLog(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r := e.Do(apitest.Request{Method: "GET", Path: "/api/domains/shop.example.com/messages/" + id + "/raw", Auth: e.user.Auth()}); r.StatusCode != 404 {
		t.Errorf("raw after pruning: %d %s", r.StatusCode, r.Body)
	}
	for i, want := range []string{"https://landing.example/one", "https://landing.example/two"} {
		if r := e.hit(t, "GET", sent.clicks[i], "curl/8.5.0", ""); r.StatusCode != http.StatusFound || r.Header.Get("Location") != want {
			t.Errorf("click %d after pruning: %d Location %q, want %s", i, r.StatusCode, r.Header.Get("Location"), want)
		}
	}
}

func header(t *testing.T, raw []byte) mail.Header {
	t.Helper()
	m, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	return m.Header
}
