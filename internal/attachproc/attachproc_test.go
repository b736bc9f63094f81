package attachproc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/attach"
	"github.com/postline/postline/internal/testutil/testpdf"
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
	_, err := runner(t, 32<<20).Process(context.Background(), files, opts)
	if !errors.Is(err, ErrFailed) || !strings.Contains(err.Error(), "32 MiB") {
		t.Fatalf("a %d-byte decompression bomb under a 32 MiB limit: %v, want ErrFailed naming the limit", len(bomb), err)
	}
}

// TestCheckInChild: the checks before acceptance, run in a child, refuse
// what attach.Validate refuses in process, with the same fields and
// messages; a child that dies checking is a refusal naming the limit.
func TestCheckInChild(t *testing.T) {
	t.Parallel()
	opts := attach.Options{Watermark: attach.Watermark{Enabled: true, Text: "DRAFT", Position: attach.PositionCenter}}
	files := []attach.File{{Name: "small.pdf", ContentType: "application/pdf", Data: testpdf.Bomb(1 << 20)},
		{Name: "bomb.pdf", ContentType: "application/pdf", Data: testpdf.Bomb(attach.MaxPDFContentBytes + (4 << 20))},
		{Name: "junk.pdf", ContentType: "application/pdf", Data: []byte("%PDF-1.7 not really")}}
	want := attach.Validate(files, opts)
	got := runner(t, 1<<30).Check(context.Background(), files, opts)
	we, _ := apperr.As(want)
	ge, ok := apperr.As(got)
	if !ok || we == nil || ge.Code != apperr.Invalid || fmt.Sprint(ge.Fields) != fmt.Sprint(we.Fields) || ge.Message != we.Message {
		t.Fatalf("in a child: %v\nin process: %v", got, want)
	}
	if err := runner(t, 1<<30).Check(context.Background(), files[:1], opts); err != nil {
		t.Errorf("a small PDF: %v", err)
	}
	bomb := []attach.File{{Name: "bomb.png", ContentType: "image/png", Data: pngOf(t, 4900, 4900)}}
	opts.Watermark.Text = "DRAFT"
	if err := runner(t, 1<<30).Check(context.Background(), bomb, opts); err != nil {
		t.Errorf("the image's header is all the check reads: %v", err)
	}
	r := runner(t, 1<<30)
	r.Timeout = time.Nanosecond
	err := r.Check(context.Background(), files[:1], opts)
	if e, ok := apperr.As(err); !ok || e.Code != apperr.Invalid || !strings.Contains(fmt.Sprint(e.Fields["attachments"]), "could not be checked") {
		t.Errorf("a child out of time: %v, want a refusal of the attachments", err)
	}
}
