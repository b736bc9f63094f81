package app_test

import (
	"archive/zip"
	"bytes"
	"context"
	"image"
	"image/draw"
	pngenc "image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-message/mail"
	"github.com/emersion/go-msgauth/dkim"

	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/sending"
	"github.com/postline/postline/internal/store"
)

// With an authentication domain, DKIM signs with d= that domain and the
// envelope sender is a per-delivery bounce address under it; removing it
// reverts both.
func TestSendWithAuthenticationDomain(t *testing.T) {
	t.Parallel()
	e := startSend(t, store.SQLite, false, nil)
	ctx := context.Background()
	dom, err := e.App.Domains.SetAuth(ctx, e.dom, "mail.shop.example.com")
	if err != nil {
		t.Fatal(err)
	}
	e.DNS.AddTXT(dom.DKIMSelector+"._domainkey.mail.shop.example.com", dom.DKIMRecordValue())
	e.send(t, basicParts("ann@rcpt.example.net"), nil)
	msgs, err := e.sink.WaitForMessages(ctxTimeout(t, 15*time.Second), 1)
	if err != nil {
		t.Fatal(err)
	}
	if from := msgs[0].From; !strings.HasPrefix(from, "bounce+") || !strings.HasSuffix(from, "@mail.shop.example.com") {
		t.Errorf("MAIL FROM %q, want a bounce address under the authentication domain", from)
	}
	if got := dkimDomain(t, e, msgs[0].Data); got != "mail.shop.example.com" {
		t.Errorf("DKIM d=%q, want the authentication domain", got)
	}

	if _, err := e.App.Domains.SetAuth(ctx, dom, ""); err != nil {
		t.Fatal(err)
	}
	e.send(t, basicParts("bob@rcpt.example.net"), nil)
	msgs, err = e.sink.WaitForMessages(ctxTimeout(t, 15*time.Second), 2)
	if err != nil {
		t.Fatal(err)
	}
	if msgs[1].From != "orders@shop.example.com" || dkimDomain(t, e, msgs[1].Data) != "shop.example.com" {
		t.Errorf("after removal: MAIL FROM %q, DKIM %q; want the from address and d=shop.example.com", msgs[1].From, dkimDomain(t, e, msgs[1].Data))
	}
}

func dkimDomain(t *testing.T, e *sendEnv, data []byte) string {
	t.Helper()
	return dkimVerify(t, e, data).Domain
}

// dkimVerify checks the message's one DKIM signature against the local DNS
// server and returns it.
func dkimVerify(t *testing.T, e *sendEnv, data []byte) *dkim.Verification {
	t.Helper()
	v, err := dkim.VerifyWithOptions(bytes.NewReader(data), &dkim.VerifyOptions{LookupTXT: func(name string) ([]string, error) {
		return e.App.Resolver.LookupTXT(context.Background(), name)
	}})
	if err != nil || len(v) != 1 || v[0].Err != nil {
		t.Fatalf("DKIM verification: %+v, %v", v, err)
	}
	return v[0]
}

func TestVERPRoundTrip(t *testing.T) {
	t.Parallel()
	key := []byte("k")
	addr := sending.VERPAddress(key, 42, "bounce.example.com")
	if id, ok := sending.ParseVERP(key, addr); !ok || id != 42 {
		t.Fatalf("ParseVERP(%q) = %d, %v", addr, id, ok)
	}
	for _, bad := range []string{strings.Replace(addr, "42", "43", 1), "bounce+42-0000@bounce.example.com", "someone@bounce.example.com"} {
		if _, ok := sending.ParseVERP(key, bad); ok {
			t.Errorf("ParseVERP accepted %q", bad)
		}
	}
}

// The per-domain rate is taken at the point of sending: over budget, a
// delivery waits for the next window without counting an attempt.
func TestSendDomainRate(t *testing.T) {
	t.Parallel()
	e := startSend(t, store.SQLite, false, func(c *config.Config) { c.DomainSendRate = 2 })
	e.send(t, basicParts("a@rcpt.example.net", "b@rcpt.example.net", "c@rcpt.example.net", "d@rcpt.example.net"), nil)
	if _, err := e.sink.WaitForMessages(ctxTimeout(t, 10*time.Second), 2); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if n := len(e.sink.Messages()); n != 2 && time.Now().Second() > 2 {
		t.Fatalf("%d messages within the minute, want 2 (rate 2/min)", n)
	}
	pg, _ := e.App.Events.List(context.Background(), event.Filter{DomainID: e.dom.ID, Type: event.Send, Limit: 10})
	if len(pg.Entries) > 4 {
		t.Errorf("%d send entries: rate-limited deliveries must not count as attempts", len(pg.Entries))
	}
}

// Attachment options run in the job: the recipient gets one encrypted
// archive that 7-Zip opens with the password, and compress-only gives a
// plain ZIP with the original files.
func TestSendWithAttachmentOptions(t *testing.T) {
	t.Parallel()
	e := startSend(t, store.SQLite, false, nil)
	files := []part{
		{name: "attachments", filename: "a.txt", contentType: "text/plain", value: "alpha"},
		{name: "attachments", filename: "../../b.txt", contentType: "text/plain", value: "beta"},
	}
	resp := e.send(t, append(append(basicParts("zip@rcpt.example.net"), files...), part{name: "attachment_options", value: `{"compress":true}`}), nil)
	if resp.StatusCode != 202 {
		t.Fatalf("send: %d %s", resp.StatusCode, resp.Body)
	}
	resp = e.send(t, append(append(basicParts("secret@rcpt.example.net"), files...), part{name: "attachment_options", value: `{"password":"correct horse"}`}), nil)
	if resp.StatusCode != 202 {
		t.Fatalf("send: %d %s", resp.StatusCode, resp.Body)
	}
	msgs, err := e.sink.WaitForMessages(ctxTimeout(t, 15*time.Second), 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		name, data := onlyAttachment(t, m.Data)
		if name != "attachments.zip" {
			t.Fatalf("%s: attachment %q, want attachments.zip", m.To[0], name)
		}
		if m.To[0] == "zip@rcpt.example.net" {
			zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, f := range zr.File {
				rc, _ := f.Open()
				b, _ := io.ReadAll(rc)
				got[f.Name] = string(b)
			}
			if got["a.txt"] != "alpha" || got["b.txt"] != "beta" || len(got) != 2 {
				t.Errorf("zip contents %v", got)
			}
			continue
		}
		check7z(t, data, "correct horse")
	}
	var leaked int
	if err := e.App.DB.Reader().QueryRowContext(context.Background(),
		`SELECT COUNT(*) FROM sends WHERE options LIKE '%correct horse%'`).Scan(&leaked); err != nil || leaked != 0 {
		t.Errorf("the password is still stored after the job (%d rows, %v)", leaked, err)
	}
}

func onlyAttachment(t *testing.T, raw []byte) (string, []byte) {
	t.Helper()
	mr, err := mail.CreateReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	var name string
	var data []byte
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return name, data
		}
		if err != nil {
			t.Fatal(err)
		}
		if h, ok := p.Header.(*mail.AttachmentHeader); ok {
			if name != "" {
				t.Fatalf("more than one attachment")
			}
			name, _ = h.Filename()
			data, _ = io.ReadAll(p.Body)
		}
	}
}

func check7z(t *testing.T, data []byte, password string) {
	t.Helper()
	if _, err := exec.LookPath("7z"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("7z is required in CI (p7zip-full)")
		}
		t.Skip("7z not installed")
	}
	path := filepath.Join(t.TempDir(), "a.zip")
	os.WriteFile(path, data, 0o600)
	if out, err := exec.Command("7z", "t", "-p"+password, path).CombinedOutput(); err != nil {
		t.Fatalf("7z t with the password: %v\n%s", err, out)
	}
	if err := exec.Command("7z", "t", "-pwrong-password", path).Run(); err == nil {
		t.Fatal("7z accepted a wrong password")
	}
}

// A watermark applies to PDF, PNG and JPEG only; the answer says how many,
// and the PNG arrives changed while the text file arrives as sent.
func TestSendWithWatermark(t *testing.T) {
	t.Parallel()
	e := startSend(t, store.SQLite, false, nil)
	var png bytes.Buffer
	img := image.NewRGBA(image.Rect(0, 0, 400, 300))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	if err := pngenc.Encode(&png, img); err != nil {
		t.Fatal(err)
	}
	resp := e.send(t, append(basicParts("wm@rcpt.example.net"),
		part{name: "attachments", filename: "photo.png", contentType: "image/png", value: png.String()},
		part{name: "attachments", filename: "notes.txt", contentType: "text/plain", value: "plain"},
		part{name: "attachment_options", value: `{"watermark":{"enabled":true,"text":"CONFIDENTIAL","position":"center"}}`}), nil)
	if resp.StatusCode != 202 || !strings.Contains(resp.JSON["message"].(string), "1 attachment(s) will be watermarked") {
		t.Fatalf("send: %d %s", resp.StatusCode, resp.Body)
	}
	msgs, err := e.sink.WaitForMessages(ctxTimeout(t, 15*time.Second), 1)
	if err != nil {
		t.Fatal(err)
	}
	mr, _ := mail.CreateReader(bytes.NewReader(msgs[0].Data))
	got := map[string][]byte{}
	for {
		p, err := mr.NextPart()
		if err != nil {
			break
		}
		if h, ok := p.Header.(*mail.AttachmentHeader); ok {
			name, _ := h.Filename()
			got[name], _ = io.ReadAll(p.Body)
		}
	}
	if string(got["notes.txt"]) != "plain" {
		t.Errorf("text attachment changed: %q", got["notes.txt"])
	}
	out, err := pngenc.Decode(bytes.NewReader(got["photo.png"]))
	if err != nil {
		t.Fatalf("received PNG: %v", err)
	}
	changed := false
	for x := 150; x < 250 && !changed; x++ {
		if r, g, b, _ := out.At(x, 150).RGBA(); r != 0xffff || g != 0xffff || b != 0xffff {
			changed = true
		}
	}
	if !changed {
		t.Error("the centre of the received PNG is untouched: no watermark")
	}
}
