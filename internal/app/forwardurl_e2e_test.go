package app_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/store"
)

// postToken is the form of a post's token.
var postToken = regexp.MustCompile(`^[0-9a-f]{64}$`)

// capture is a web app on 127.0.0.1 that keeps every post it gets and
// answers each with the next of its statuses (200 once they run out).
type capture struct {
	*httptest.Server
	mu       sync.Mutex
	statuses []int
	posts    []capturedPost
}

type capturedPost struct {
	path   string
	header http.Header
	body   []byte
	status int
}

func newCapture(t *testing.T, statuses ...int) *capture {
	c := &capture{statuses: statuses}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		status := http.StatusOK
		if len(c.statuses) > 0 {
			status, c.statuses = c.statuses[0], c.statuses[1:]
		}
		c.posts = append(c.posts, capturedPost{path: r.URL.Path, header: r.Header.Clone(), body: body, status: status})
		c.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(c.Close)
	return c
}

func (c *capture) got() []capturedPost {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]capturedPost(nil), c.posts...)
}

// form parses a Mailgun-format post: its fields and its files' parts.
func (p capturedPost) form(t *testing.T) (url.Values, map[string]*multipart.Part, map[string][]byte) {
	t.Helper()
	ct, params, _ := mime.ParseMediaType(p.header.Get("Content-Type"))
	if ct == "application/x-www-form-urlencoded" {
		v, err := url.ParseQuery(string(p.body))
		if err != nil {
			t.Fatal(err)
		}
		return v, nil, nil
	}
	if ct != "multipart/form-data" {
		t.Fatalf("post content type %q", p.header.Get("Content-Type"))
	}
	v, parts, files := url.Values{}, map[string]*multipart.Part{}, map[string][]byte{}
	mr := multipart.NewReader(bytes.NewReader(p.body), params["boundary"])
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(part)
		if part.FileName() != "" {
			parts[part.FormName()], files[part.FormName()] = part, b
			continue
		}
		v.Add(part.FormName(), string(b))
	}
	return v, parts, files
}

// mailgunSigned checks a post's signature as Mailgun documents it: the hex
// HMAC-SHA256 of timestamp+token under the webhook signing key.
func mailgunSigned(key string, v url.Values) bool {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(v.Get("timestamp") + v.Get("token")))
	return hmac.Equal([]byte(hex.EncodeToString(m.Sum(nil))), []byte(v.Get("signature")))
}

// waitPost waits for the recipient's n-th post log entry and returns them.
func (r *inboundRig) waitPost(t *testing.T, rcpt string, n int) []event.Entry {
	t.Helper()
	var got []event.Entry
	waitFor(t, fmt.Sprintf("%d post entries of %s", n, rcpt), func() bool {
		got = r.entries(t, rcpt, event.Post)
		return len(got) >= n
	})
	return got
}

var (
	pngBytes = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR inline logo \x00\xff")
	binBytes = []byte("binary \x00\x01\x02\xfe\xff attachment")
)

// reply is a reply with a quote and a signature, an inline image the HTML
// shows by its Content-ID, and a binary attachment.
func reply(to, subject string) string {
	b64 := func(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
	return crlfText("From: Ann Sender <ann@sender.example>\nTo: " + to + "\nCc: Bob <bob+desk@sender.example>\nSubject: " + subject + "\n" +
		"Message-ID: <reply-1@sender.example>\nDate: Mon, 23 Nov 2026 10:00:00 +0000\nMIME-Version: 1.0\n" +
		"Content-Type: multipart/mixed; boundary=m\n\n--m\nContent-Type: multipart/related; boundary=r\n\n" +
		"--r\nContent-Type: multipart/alternative; boundary=a\n\n" +
		"--a\nContent-Type: text/plain; charset=utf-8\n\nThanks, it works now.\n\n-- \nAnn\n\n" +
		"On Mon, Nov 23, 2026 at 09:00 AM Shop <help@shop.example.com>\nwrote:\n> Did it work?\n" +
		"--a\nContent-Type: text/html; charset=utf-8\n\n<p>Thanks, it works now.<img src=\"cid:logo@sender.example\"></p>" +
		"<div class=\"gmail_quote\">On Mon, Shop wrote:<blockquote>Did it work?</blockquote></div>\n--a--\n" +
		"--r\nContent-Type: image/png\nContent-ID: <logo@sender.example>\nContent-Disposition: inline; filename=\"logo.png\"\n" +
		"Content-Transfer-Encoding: base64\n\n" + b64(pngBytes) + "\n--r--\n" +
		"--m\nContent-Type: application/octet-stream\nContent-Disposition: attachment; filename=\"data.bin\"\n" +
		"Content-Transfer-Encoding: base64\n\n" + b64(binBytes) + "\n--m--\n")
}

// TestForwardURL: forward(URL) posts Mailgun's fields to the URL the
// route's captures made, signed as Mailgun signs (checked with its
// documented algorithm and the account's signing key): the text stripped
// of quote and signature, the headers, the attachment and the inline image
// as files with their bytes intact and the content-id-map naming the
// image's; a message without attachments is form-urlencoded; the received
// entry shows the forward queued with its token, and a post entry the
// outcome under the same message id; store(notify=URL) posts the same with
// message-url, which reads the stored message.
func TestForwardURL(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		r := startInbound(t, d, nil)
		app := newCapture(t)
		r.route(t, r.user, 1, `match_recipient("^(?P<box>[a-z]+)@shop\.example\.com$")`, `forward("`+app.URL+`/in/\g<box>")`,
			`store(notify="`+app.URL+`/stored")`)
		key, err := r.App.Webhooks.SigningKey(context.Background(), r.user.ID)
		if err != nil || key == "" {
			t.Fatalf("signing key %q, %v", key, err)
		}
		msg := reply("help@shop.example.com", "Re: your order")
		if res := deliver(t, r.addr, "bounce@sender.example", []string{"help@shop.example.com"}, msg); res.data != nil {
			t.Fatalf("DATA: %v", res.data)
		}
		entries := r.waitPost(t, "help@shop.example.com", 2)
		posts := app.got()
		if len(posts) != 2 {
			t.Fatalf("%d posts; want the forward and the notification", len(posts))
		}
		byPath := map[string]capturedPost{}
		for _, p := range posts {
			byPath[p.path] = p
		}
		fw, ok := byPath["/in/help"]
		if !ok {
			t.Fatalf("posts went to %v; want /in/help (the capture) and /stored", byPath)
		}
		v, parts, files := fw.form(t)
		if !mailgunSigned(key, v) || !postToken.MatchString(v.Get("token")) {
			t.Errorf("signature %q of timestamp %q, token %q does not verify with the account's key", v.Get("signature"), v.Get("timestamp"), v.Get("token"))
		}
		for field, want := range map[string]string{"recipient": "help@shop.example.com", "sender": "bounce@sender.example",
			"from": "Ann Sender <ann@sender.example>", "subject": "Re: your order", "stripped-text": "Thanks, it works now.",
			"stripped-signature": "Ann", "stripped-html": `<p>Thanks, it works now.<img src="cid:logo@sender.example"></p>`,
			"attachment-count": "2", "content-id-map": `{"<logo@sender.example>":"attachment-1"}`} {
			if got := v.Get(field); got != want {
				t.Errorf("%s = %q; want %q", field, got, want)
			}
		}
		if !strings.HasPrefix(v.Get("body-plain"), "Thanks, it works now.\r\n\r\n-- \r\nAnn") || !strings.Contains(v.Get("body-plain"), "> Did it work?") ||
			!strings.Contains(v.Get("body-html"), "gmail_quote") {
			t.Errorf("bodies: %q / %q; want them whole", v.Get("body-plain"), v.Get("body-html"))
		}
		var headers [][2]string
		if err := json.Unmarshal([]byte(v.Get("message-headers")), &headers); err != nil || len(headers) < 8 || headers[0][0] != "Authentication-Results" {
			t.Errorf("message-headers %s: %v; want [name, value] pairs, ours first", v.Get("message-headers"), err)
		}
		if !bytes.Equal(files["attachment-1"], pngBytes) || parts["attachment-1"].FileName() != "logo.png" ||
			parts["attachment-1"].Header.Get("Content-Type") != "image/png" {
			t.Errorf("attachment-1: %q %v; want the inline image intact", files["attachment-1"], parts["attachment-1"].Header)
		}
		if !bytes.Equal(files["attachment-2"], binBytes) || parts["attachment-2"].FileName() != "data.bin" ||
			parts["attachment-2"].Header.Get("Content-Type") != "application/octet-stream" {
			t.Errorf("attachment-2: %q; want the attachment intact", files["attachment-2"])
		}

		// The notification: the same fields and message-url, which reads it.
		nv, _, _ := byPath["/stored"].form(t)
		if !mailgunSigned(key, nv) || nv.Get("subject") != "Re: your order" || nv.Get("token") == v.Get("token") {
			t.Errorf("notification: %v", nv)
		}
		mu, err := url.Parse(nv.Get("message-url"))
		if err != nil || !strings.HasPrefix(mu.Path, "/api/domains/shop.example.com/inbound/") {
			t.Fatalf("message-url %q", nv.Get("message-url"))
		}
		if got := r.get(t, r.user, mu.Path); got.StatusCode != 200 || got.JSON["data"].(map[string]any)["subject"] != "Re: your order" {
			t.Errorf("GET message-url: %d %s", got.StatusCode, got.Body)
		}

		// The log: queued in the received entry, then the post entries.
		rec := r.entries(t, "help@shop.example.com", event.Received)
		var rd struct {
			Actions []map[string]any `json:"actions"`
		}
		json.Unmarshal(rec[0].Details, &rd)
		if len(rd.Actions) != 2 || rd.Actions[0]["outcome"] != "queued" || rd.Actions[0]["post"] != v.Get("token") ||
			rd.Actions[1]["notify_outcome"] != "queued" || rd.Actions[1]["post"] != nv.Get("token") {
			t.Errorf("received entry's actions: %s", rec[0].Details)
		}
		for _, e := range entries {
			pd := det(e)
			if e.MessageID != "reply-1@sender.example" || e.Subject != "Re: your order" || pd("outcome") != "posted" || pd("status") != 200.0 ||
				pd("attempts") != 1.0 || (pd("post") != v.Get("token") && pd("post") != nv.Get("token")) {
				t.Errorf("post entry: %+v %s", e, e.Details)
			}
		}

		// Without attachments: form-urlencoded.
		plain := crlfText("From: ann@sender.example\nTo: sales@shop.example.com\nSubject: plain\nMessage-ID: <plain-1@sender.example>\n\nJust text.\n")
		deliver(t, r.addr, "ann@sender.example", []string{"sales@shop.example.com"}, plain)
		r.waitPost(t, "sales@shop.example.com", 2)
		for _, p := range app.got() {
			if p.path != "/in/sales" {
				continue
			}
			pv, _, _ := p.form(t)
			if p.header.Get("Content-Type") != "application/x-www-form-urlencoded" || pv.Get("body-plain") != "Just text.\r\n" ||
				pv.Get("attachment-count") != "0" || pv.Get("content-id-map") != "{}" || !mailgunSigned(key, pv) {
				t.Errorf("plain forward: %s %v", p.header.Get("Content-Type"), pv)
			}
		}
	})
}

// formatRoute creates a route of the given format over the API.
func (r *inboundRig) formatRoute(t *testing.T, expression, action, format string) {
	t.Helper()
	resp := r.Do(apitest.Request{Method: "POST", Path: "/api/routes", Auth: r.user.Auth(),
		Body: map[string]any{"expression": expression, "actions": []string{action}, "format": format}})
	if resp.StatusCode != 201 || resp.JSON["data"].(map[string]any)["format"] != format {
		t.Fatalf("route of format %s: %d %s", format, resp.StatusCode, resp.Body)
	}
}

// TestForwardURLFormats: a route of format json posts Postmark's inbound
// JSON (addresses split, MailboxHash, the stripped reply, headers,
// attachments in base64 with their Content-ID); one of format raw posts
// the message as received (our fields on top) as message/rfc822. Both
// carry the signature in headers.
func TestForwardURLFormats(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		r := startInbound(t, d, nil)
		app := newCapture(t)
		r.formatRoute(t, `match_recipient("^desk\+(.*)@shop\.example\.com$")`, `forward("`+app.URL+`/json")`, "json")
		r.formatRoute(t, `match_recipient("^raw@shop\.example\.com$")`, `forward("`+app.URL+`/raw")`, "raw")
		key, _ := r.App.Webhooks.SigningKey(context.Background(), r.user.ID)
		msg := reply("Desk <desk+t42@shop.example.com>", "=?utf-8?q?Caf=C3=A9_order?=")
		deliver(t, r.addr, "bounce@sender.example", []string{"desk+t42@shop.example.com"}, msg)
		deliver(t, r.addr, "bounce@sender.example", []string{"raw@shop.example.com"}, msg)
		r.waitPost(t, "desk+t42@shop.example.com", 1)
		r.waitPost(t, "raw@shop.example.com", 1)
		byPath := map[string]capturedPost{}
		for _, p := range app.got() {
			byPath[p.path] = p
		}

		js := byPath["/json"]
		var pm struct {
			From, FromName, To, Cc, Subject, MessageID, Date, TextBody, HtmlBody, StrippedTextReply, MailboxHash, OriginalRecipient string
			FromFull                                                                                                                struct{ Email, Name, MailboxHash string }
			ToFull, CcFull                                                                                                          []struct{ Email, Name, MailboxHash string }
			Headers                                                                                                                 []struct{ Name, Value string }
			Attachments                                                                                                             []struct {
				Name, Content, ContentType, ContentID string
				ContentLength                         int
			}
		}
		if err := json.Unmarshal(js.body, &pm); err != nil || js.header.Get("Content-Type") != "application/json" {
			t.Fatalf("json post: %v %s %s", err, js.header.Get("Content-Type"), js.body)
		}
		if pm.From != "ann@sender.example" || pm.FromName != "Ann Sender" || pm.FromFull.Email != "ann@sender.example" ||
			len(pm.ToFull) != 1 || pm.ToFull[0].Email != "desk+t42@shop.example.com" || pm.ToFull[0].MailboxHash != "t42" ||
			len(pm.CcFull) != 1 || pm.CcFull[0].Name != "Bob" || pm.CcFull[0].MailboxHash != "desk" || pm.MailboxHash != "t42" ||
			pm.OriginalRecipient != "desk+t42@shop.example.com" || pm.Subject != "Café order" || pm.MessageID != "reply-1@sender.example" ||
			pm.Date != "Mon, 23 Nov 2026 10:00:00 +0000" || pm.StrippedTextReply != "Thanks, it works now." ||
			!strings.Contains(pm.TextBody, "> Did it work?") || !strings.Contains(pm.HtmlBody, "gmail_quote") {
			t.Errorf("json fields: %+v", pm)
		}
		if len(pm.Headers) < 8 || pm.Headers[0].Name != "Authentication-Results" {
			t.Errorf("json headers: %+v", pm.Headers)
		}
		if len(pm.Attachments) != 2 {
			t.Fatalf("json attachments: %+v", pm.Attachments)
		}
		img, _ := base64.StdEncoding.DecodeString(pm.Attachments[0].Content)
		bin, _ := base64.StdEncoding.DecodeString(pm.Attachments[1].Content)
		if !bytes.Equal(img, pngBytes) || pm.Attachments[0].Name != "logo.png" || pm.Attachments[0].ContentType != "image/png" ||
			pm.Attachments[0].ContentID != "logo@sender.example" || pm.Attachments[0].ContentLength != len(pngBytes) ||
			!bytes.Equal(bin, binBytes) || pm.Attachments[1].Name != "data.bin" || pm.Attachments[1].ContentID != "" {
			t.Errorf("json attachments: %+v", pm.Attachments)
		}
		for _, p := range []capturedPost{js, byPath["/raw"]} {
			h := p.header
			if !mailgunSigned(key, url.Values{"timestamp": {h.Get("Postline-Timestamp")}, "token": {h.Get("Postline-Token")},
				"signature": {h.Get("Postline-Signature")}}) || !postToken.MatchString(h.Get("Postline-Token")) {
				t.Errorf("%s: signature headers %v do not verify", p.path, h)
			}
		}

		raw := byPath["/raw"]
		if raw.header.Get("Content-Type") != "message/rfc822" || !bytes.HasPrefix(raw.body, []byte("Authentication-Results: "+mxHost+";")) ||
			!bytes.HasSuffix(raw.body, []byte(msg)) {
			t.Errorf("raw post: %s\n%q\nwant it to end with\n%q", raw.header.Get("Content-Type"), raw.body, msg)
		}
	})
}

// TestForwardURLRetries: a 500 is retried (the same token) and the post
// then arrives; 406 (Mailgun's "do not retry"), 403 (Postmark's) and
// another 4xx stop at once, failed with the status in the log; metrics
// count each outcome.
func TestForwardURLRetries(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		r := startInbound(t, d, func(c *config.Config) { c.InboundPostFirstRetry = 100 * time.Millisecond })
		flaky, refusing := newCapture(t, 500, 503), newCapture(t, 406)
		postmark, gone := newCapture(t, 403), newCapture(t, 404)
		r.route(t, r.user, 1, `match_recipient("^flaky@")`, `forward("`+flaky.URL+`/")`)
		r.route(t, r.user, 1, `match_recipient("^refuse@")`, `forward("`+refusing.URL+`/")`)
		r.formatRoute(t, `match_recipient("^pm@")`, `forward("`+postmark.URL+`/")`, "json")
		r.route(t, r.user, 1, `match_recipient("^gone@")`, `forward("`+gone.URL+`/")`)
		for _, to := range []string{"flaky", "refuse", "pm", "gone"} {
			msg := crlfText("From: ann@sender.example\nTo: " + to + "@shop.example.com\nSubject: " + to + "\nMessage-ID: <" + to + "@sender.example>\n\nHi\n")
			if res := deliver(t, r.addr, "ann@sender.example", []string{to + "@shop.example.com"}, msg); res.data != nil {
				t.Fatalf("DATA to %s: %v", to, res.data)
			}
		}
		e := det(r.waitPost(t, "flaky@shop.example.com", 1)[0])
		got := flaky.got()
		if e("outcome") != "posted" || e("attempts") != 3.0 || len(got) != 3 || got[0].status != 500 || got[1].status != 503 || got[2].status != 200 {
			t.Fatalf("flaky: entry %v %v, %d posts; want posted on the third", e("outcome"), e("attempts"), len(got))
		}
		v0, _, _ := got[0].form(t)
		v2, _, _ := got[2].form(t)
		if v0.Get("token") != v2.Get("token") || v0.Get("token") == "" {
			t.Errorf("the retry's token %q differs from the first's %q", v2.Get("token"), v0.Get("token"))
		}
		for _, c := range []struct {
			rcpt   string
			app    *capture
			status float64
		}{{"refuse@shop.example.com", refusing, 406}, {"pm@shop.example.com", postmark, 403}, {"gone@shop.example.com", gone, 404}} {
			e := det(r.waitPost(t, c.rcpt, 1)[0])
			if e("outcome") != "failed" || e("status") != c.status || !strings.Contains(fmt.Sprint(e("error")), "not retried") || len(c.app.got()) != 1 {
				t.Errorf("%s: outcome %v, status %v, error %v, %d posts; want failed at once with %v", c.rcpt, e("outcome"), e("status"), e("error"),
					len(c.app.got()), c.status)
			}
		}
		metrics := string(r.Do(apitest.Request{Method: "GET", Path: "/metrics"}).Body)
		for _, want := range []string{`postline_inbound_posts_total{outcome="posted"} 1`, `postline_inbound_posts_total{outcome="retried"} 2`,
			`postline_inbound_posts_total{outcome="failed"} 3`} {
			if !strings.Contains(metrics, want) {
				t.Errorf("metrics lack %s", want)
			}
		}
	})
}

// TestForwardURLGuard: without --webhook-allow-private a route's forward
// to a loopback URL is refused (the webhooks' guard): nothing reaches it,
// and the post entry says why.
func TestForwardURLGuard(t *testing.T) {
	t.Parallel()
	r := startInbound(t, store.SQLite, func(c *config.Config) { c.WebhookAllowPrivate = false })
	app := newCapture(t)
	r.route(t, r.user, 1, `match_recipient("^help@")`, `forward("`+app.URL+`/in")`)
	deliver(t, r.addr, "ann@sender.example", []string{"help@shop.example.com"},
		crlfText("From: ann@sender.example\nSubject: x\nMessage-ID: <g@sender.example>\n\nHi\n"))
	e := det(r.waitPost(t, "help@shop.example.com", 1)[0])
	if e("outcome") != "failed" || !strings.Contains(fmt.Sprint(e("error")), "--webhook-allow-private") || len(app.got()) != 0 {
		t.Fatalf("guarded forward: outcome %v, error %v, %d posts reached the app", e("outcome"), e("error"), len(app.got()))
	}
}

// TestForwardURLRefusedMessage: a message refused after its forward was
// queued (its store() is past the account's bound: 452) is not posted,
// while a message accepted after it is.
func TestForwardURLRefusedMessage(t *testing.T) {
	t.Parallel()
	r := startInbound(t, store.SQLite, func(c *config.Config) { c.InboundStoreBytesPerAccount = 64 << 10 })
	app := newCapture(t)
	r.route(t, r.user, 1, `match_recipient("^help@")`, `forward("`+app.URL+`/in")`, "store()")
	big := crlfText("From: ann@sender.example\nSubject: big\nMessage-ID: <big@sender.example>\n\n" + strings.Repeat(strings.Repeat("x", 70)+"\n", 1024))
	if res := deliver(t, r.addr, "ann@sender.example", []string{"help@shop.example.com"}, big); smtpCode(res.data) != 452 {
		t.Fatalf("DATA of a message past the store's bound: %v; want 452", res.data)
	}
	// Two messages accepted after it, the second once the first is
	// posted: by then the refused one's post has been looked at in more
	// than one round.
	for i, subject := range []string{"small", "later"} {
		msg := crlfText("From: ann@sender.example\nSubject: " + subject + "\nMessage-ID: <" + subject + "@sender.example>\n\nHi\n")
		if res := deliver(t, r.addr, "ann@sender.example", []string{"help@shop.example.com"}, msg); res.data != nil {
			t.Fatalf("DATA: %v", res.data)
		}
		r.waitPost(t, "help@shop.example.com", i+1)
	}
	var subjects []string
	for _, p := range app.got() {
		v, _, _ := p.form(t)
		subjects = append(subjects, v.Get("subject"))
	}
	if fmt.Sprint(subjects) != "[small later]" {
		t.Fatalf("posted %v; want the accepted messages, never the refused one", subjects)
	}
	var queued int
	r.App.DB.Reader().QueryRowContext(context.Background(), `SELECT COUNT(*) FROM inbound_posts WHERE state = 'pending'`).Scan(&queued)
	if queued != 1 {
		t.Fatalf("%d posts pending; want the refused message's, waiting for a receipt that never comes", queued)
	}
}
