package app_test

import (
	"bytes"
	"context"
	"fmt"
	"github.com/postline/postline/internal/app"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-message/mail"
	"github.com/emersion/go-msgauth/dkim"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/domain"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/smtptest"
	"github.com/postline/postline/internal/store"
)

// sendEnv is a running server, a sink that stands for every receiving
// server (recipients' MX records point at it) and a relay domain.
type sendEnv struct {
	*apitest.Env
	sink *smtptest.Sink
	user apitest.User
	dom  domain.Domain
}

func startSend(t *testing.T, d store.Dialect, relay bool, edit func(*config.Config)) *sendEnv {
	t.Helper()
	return startSendWith(t, d, relay, edit, app.Options{})
}

func startSendWith(t *testing.T, d store.Dialect, relay bool, edit func(*config.Config), opts app.Options) *sendEnv {
	t.Helper()
	return startSendSink(t, d, relay, edit, opts, smtptest.Config{})
}

// startSendSink is startSendWith with the sink's configuration (its AUTH
// is set for a relay).
func startSendSink(t *testing.T, d store.Dialect, relay bool, edit func(*config.Config), opts app.Options, sinkCfg smtptest.Config) *sendEnv {
	t.Helper()
	if relay {
		sinkCfg.Auth = &smtptest.Credentials{User: "relayuser", Password: "relaypass"}
	}
	sink := smtptest.New(t, sinkCfg)
	env := apitest.StartWith(t, d, func(c *config.Config) {
		c.MXPort = sink.Port()
		c.RetrySchedule = []time.Duration{300 * time.Millisecond}
		c.DeliveryLease = 5 * time.Second
		if edit != nil {
			edit(c)
		}
	}, opts)
	for _, rd := range []string{"rcpt.example.net", "other-rcpt.net"} {
		env.DNS.AddMX(rd, 10, "mx."+rd)
		env.DNS.AddA("mx."+rd, "127.0.0.1")
	}
	u := env.NewUser("alice")
	ctx := context.Background()
	del := domain.Delivery{Mode: domain.ModeDirect}
	if relay {
		del = domain.Delivery{Mode: domain.ModeSMTP, Host: "127.0.0.1", Port: sink.Port(), User: "relayuser", Password: "relaypass", TLS: domain.TLSNone}
	}
	dom, err := env.App.Domains.Add(ctx, domain.AddParams{AccountID: u.ID, Name: "shop.example.com", Delivery: del, Trusted: true})
	if err != nil {
		t.Fatal(err)
	}
	if dom, _, err = env.App.Domains.Verify(ctx, dom, true); err != nil {
		t.Fatal(err)
	}
	env.DNS.AddTXT(dom.DKIMSelector+"._domainkey.shop.example.com", dom.DKIMRecordValue())
	return &sendEnv{Env: env, sink: sink, user: u, dom: dom}
}

type part struct {
	name, value, filename, contentType string
	// disposition, when set, is the part's Content-Disposition as written
	// (for malformed ones).
	disposition string
}

func (e *sendEnv) send(t *testing.T, parts []part, header http.Header) *apitest.Response {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, p := range parts {
		if p.disposition != "" {
			w, _ := mw.CreatePart(map[string][]string{"Content-Disposition": {p.disposition}, "Content-Type": {"text/plain"}})
			io.WriteString(w, p.value)
			continue
		}
		if p.filename == "" {
			mw.WriteField(p.name, p.value)
			continue
		}
		h := make(map[string][]string)
		h["Content-Disposition"] = []string{fmt.Sprintf(`form-data; name=%q; filename=%q`, p.name, p.filename)}
		h["Content-Type"] = []string{p.contentType}
		w, _ := mw.CreatePart(h)
		io.WriteString(w, p.value)
	}
	mw.Close()
	if header == nil {
		header = http.Header{}
	}
	header.Set("Content-Type", mw.FormDataContentType())
	return e.Do(apitest.Request{Method: "POST", Path: "/api/domains/shop.example.com/message", Auth: e.user.Auth(), Body: buf.Bytes(), Header: header})
}

// chain waits until recipient's log entries end with a final type and
// returns their types in recording order.
func (e *sendEnv) chain(t *testing.T, recipient string, final ...event.Type) []string {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		pg, err := e.App.Events.List(context.Background(), event.Filter{DomainID: e.dom.ID, Recipient: recipient, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		var types []string
		for i := len(pg.Entries) - 1; i >= 0; i-- { // the list is newest first
			types = append(types, string(pg.Entries[i].Type))
		}
		if n := len(types); n > 0 {
			for _, f := range final {
				if types[n-1] == string(f) {
					return types
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: log %v never reached %v", recipient, types, final)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func basicParts(to ...string) []part {
	ps := []part{{name: "from", value: "orders@shop.example.com"}, {name: "subject", value: "Your order"}, {name: "text", value: "Thanks!"}}
	for _, r := range to {
		ps = append(ps, part{name: "to", value: r})
	}
	return ps
}

func TestSendThroughRelay(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d store.Dialect) {
		e := startSend(t, d, true, nil)
		resp := e.send(t, []part{
			{name: "from", value: "orders@shop.example.com"},
			{name: "from_name", value: "Zoë's Shop"},
			{name: "to[]", value: "ann@rcpt.example.net"},
			{name: "to[]", value: "bob@other-rcpt.net"},
			{name: "subject", value: "Ihre Bestellung 🎉 ist unterwegs"},
			{name: "text", value: "Line one\nLine two"},
			{name: "html", value: "<p>Hello <b>there</b></p>"},
			{name: "headers", value: `{"X-Campaign":"autumn"}`},
			{name: "reply_to", value: "help@support.shop.example.com"},
			{name: "tags", value: "orders"},
			{name: "attachments", filename: "invoice.txt", contentType: "text/plain", value: "INVOICE 42"},
		}, nil)
		if resp.StatusCode != 202 || resp.JSON["success"] != true {
			t.Fatalf("send: %d %s", resp.StatusCode, resp.Body)
		}
		if !strings.Contains(resp.JSON["message"].(string), "2 recipient(s) as 2 job(s) with 1 attachment(s)") {
			t.Errorf("message %q", resp.JSON["message"])
		}
		ids := resp.JSON["data"].(map[string]any)["message_ids"].([]any)
		if len(ids) != 2 || resp.Header.Get("X-RateLimit-Remaining") == "" {
			t.Fatalf("message_ids %v, headers %v", ids, resp.Header)
		}
		msgs, err := e.sink.WaitForMessages(ctxTimeout(t, 15*time.Second), 2)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, m := range msgs {
			if len(m.To) != 1 || m.AuthUser != "relayuser" || m.From != "orders@shop.example.com" {
				t.Fatalf("envelope %+v: want one recipient, authenticated, MAIL FROM the sender", m)
			}
			seen[m.To[0]] = true
			checkMIME(t, e, m.To[0], m.Data)
		}
		if !seen["ann@rcpt.example.net"] || !seen["bob@other-rcpt.net"] {
			t.Fatalf("recipients %v", seen)
		}
		want := "queued send delivered"
		for _, r := range []string{"ann@rcpt.example.net", "bob@other-rcpt.net"} {
			if got := strings.Join(e.chain(t, r, event.Delivered), " "); got != want {
				t.Errorf("%s: log %q, want %q", r, got, want)
			}
		}
	})
}

// checkMIME parses a received message and verifies its DKIM signature
// against the local DNS server.
func checkMIME(t *testing.T, e *sendEnv, to string, data []byte) {
	t.Helper()
	mr, err := mail.CreateReader(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: not a MIME message: %v", to, err)
	}
	h := mr.Header
	subject, _ := h.Subject()
	from, _ := h.AddressList("From")
	rcpts, _ := h.AddressList("To")
	if subject != "Ihre Bestellung 🎉 ist unterwegs" || len(from) != 1 || from[0].Name != "Zoë's Shop" ||
		len(rcpts) != 1 || rcpts[0].Address != to || h.Get("X-Campaign") != "autumn" || h.Get("Message-Id") == "" {
		t.Errorf("%s: headers subject=%q from=%v to=%v campaign=%q", to, subject, from, rcpts, h.Get("X-Campaign"))
	}
	var texts, files []string
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(p.Body)
		switch ph := p.Header.(type) {
		case *mail.InlineHeader:
			ct, _, _ := ph.ContentType()
			texts = append(texts, ct+":"+string(body))
		case *mail.AttachmentHeader:
			name, _ := ph.Filename()
			files = append(files, name+":"+string(body))
		}
	}
	if strings.Join(texts, "|") != "text/plain:Line one\r\nLine two|text/html:<p>Hello <b>there</b></p>" ||
		strings.Join(files, "|") != "invoice.txt:INVOICE 42" {
		t.Errorf("%s: parts %q, attachments %q", to, texts, files)
	}
	verifs, err := dkim.VerifyWithOptions(bytes.NewReader(data), &dkim.VerifyOptions{LookupTXT: func(name string) ([]string, error) {
		return e.App.Resolver.LookupTXT(context.Background(), name)
	}})
	if err != nil || len(verifs) != 1 || verifs[0].Err != nil || verifs[0].Domain != "shop.example.com" {
		t.Errorf("%s: DKIM %+v, %v; want one passing signature by shop.example.com", to, verifs, err)
	}
}

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
