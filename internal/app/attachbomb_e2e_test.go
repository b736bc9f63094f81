package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/png"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/apitest"
	"github.com/postline/postline/internal/config"
	"github.com/postline/postline/internal/event"
	"github.com/postline/postline/internal/store"
)

// TestDecompressionBombKillsOnlyTheChild: an image of a few hundred KiB
// that decodes to ~96 MiB, to be watermarked under a 64 MiB limit, ends
// the attachment child process; the send fails with
// attachment_processing_failed, the server answers throughout, and the
// next send's attachments are processed.
func TestDecompressionBombKillsOnlyTheChild(t *testing.T) {
	t.Parallel()
	e := startSend(t, store.SQLite, false, func(c *config.Config) { c.AttachMemoryMiB = 64 })
	var bomb bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(&bomb, image.NewNRGBA(image.Rect(0, 0, 4900, 4900))); err != nil {
		t.Fatal(err)
	}
	watermark := part{name: "attachment_options", value: `{"watermark":{"enabled":true,"text":"DRAFT"}}`}
	resp := e.send(t, append(basicParts("bomb@rcpt.example.net"),
		part{name: "attachments", filename: "bomb.png", contentType: "image/png", value: bomb.String()}, watermark), nil)
	if resp.StatusCode != 202 {
		t.Fatalf("send: %d %s", resp.StatusCode, resp.Body)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if r := e.Do(apitest.Request{Method: "GET", Path: "/healthz"}); r.StatusCode != 200 {
			t.Fatalf("healthz while the bomb was processed: %d", r.StatusCode)
		}
		if failed := e.entries(t, "bomb@rcpt.example.net", event.Failed); len(failed) > 0 {
			var d map[string]any
			json.Unmarshal(failed[0].Details, &d)
			if d["reason"] != "attachment_processing_failed" || !strings.Contains(d["error"].(string), "64 MiB") {
				t.Fatalf("the bomb's failed entry: %v, want reason attachment_processing_failed naming the limit", d)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the bomb's send never failed")
		}
		time.Sleep(50 * time.Millisecond)
	}

	var small bytes.Buffer
	png.Encode(&small, image.NewNRGBA(image.Rect(0, 0, 300, 200)))
	resp = e.send(t, append(basicParts("next@rcpt.example.net"),
		part{name: "attachments", filename: "photo.png", contentType: "image/png", value: small.String()}, watermark), nil)
	if resp.StatusCode != 202 {
		t.Fatalf("next send: %d %s", resp.StatusCode, resp.Body)
	}
	msgs, err := e.sink.WaitForMessages(ctxTimeout(t, 30*time.Second), 1)
	if err != nil {
		pg, _ := e.App.Events.List(context.Background(), event.Filter{DomainID: e.dom.ID, Recipient: "next@rcpt.example.net", Limit: 20})
		for _, en := range pg.Entries {
			t.Logf("next@: %s %s", en.Type, en.Details)
		}
		t.Fatal(err)
	}
	name, data := onlyAttachment(t, msgs[0].Data)
	if name != "photo.png" || bytes.Equal(data, small.Bytes()) {
		t.Fatalf("the next send's attachment %q was not watermarked", name)
	}
}
