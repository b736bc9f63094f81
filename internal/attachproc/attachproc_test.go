package attachproc

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/png"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/attach"
)

func TestMain(m *testing.M) {
	if IsChild() {
		os.Exit(ChildMain())
	}
	os.Exit(m.Run())
}

func runner(t *testing.T, mem int64) Runner {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Runner{Exe: exe, Memory: mem, Timeout: 20 * time.Second}
}

func pngOf(t *testing.T, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(&b, image.NewNRGBA(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestChildWatermarks(t *testing.T) {
	t.Parallel()
	files := []attach.File{{Name: "a.png", ContentType: "image/png", Data: pngOf(t, 300, 200)}}
	opts := attach.Options{Watermark: attach.Watermark{Enabled: true, Text: "DRAFT"}}
	res, err := runner(t, 1<<30).Process(context.Background(), files, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Watermarked != 1 || len(res.Files) != 1 || bytes.Equal(res.Files[0].Data, files[0].Data) {
		t.Fatalf("result %+v: want the one image watermarked", res.Watermarked)
	}
}

// TestBombKillsOnlyTheChild: an image that decodes to far more than the
// child's memory limit ends the child, and the caller gets ErrFailed
// naming the limit.
func TestBombKillsOnlyTheChild(t *testing.T) {
	t.Parallel()
	bomb := pngOf(t, 4900, 4900) // 24 MP of transparent pixels (under the 25 MP limit): a few hundred KiB, ~96 MiB decoded
	files := []attach.File{{Name: "bomb.png", ContentType: "image/png", Data: bomb}}
	opts := attach.Options{Watermark: attach.Watermark{Enabled: true, Text: "DRAFT"}}
	_, err := runner(t, 64<<20).Process(context.Background(), files, opts)
	if !errors.Is(err, ErrFailed) || !strings.Contains(err.Error(), "64 MiB") {
		t.Fatalf("a %d-byte decompression bomb under a 64 MiB limit: %v, want ErrFailed naming the limit", len(bomb), err)
	}
}
