package attach

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/postline/postline/internal/apperr"
	"github.com/postline/postline/internal/testutil/testpdf"
)

func TestWatermarkPDFPositions(t *testing.T) {
	t.Parallel()
	in := makePDF(3)
	// Where the stamp's origin (e, f of the matrix) lies on a 612×792 page.
	checks := map[string]func(m [6]float64) bool{
		PositionCenter:      func(m [6]float64) bool { return m[4] > 100 && m[4] < 306 && m[5] > 300 && m[5] < 450 && m[1] == 0 },
		PositionTopLeft:     func(m [6]float64) bool { return m[4] < 60 && m[5] > 600 && m[1] == 0 },
		PositionTopRight:    func(m [6]float64) bool { return m[4] > 306 && m[5] > 600 && m[1] == 0 },
		PositionBottomLeft:  func(m [6]float64) bool { return m[4] < 60 && m[5] < 100 && m[1] == 0 },
		PositionBottomRight: func(m [6]float64) bool { return m[4] > 306 && m[5] < 100 && m[1] == 0 },
		PositionDiagonal:    func(m [6]float64) bool { return m[1] > 0.5 && m[1] < 0.9 && m[0] > 0.5 }, // rotated ~52°
	}
	for _, pos := range Positions {
		t.Run(pos, func(t *testing.T) {
			t.Parallel()
			text := "Confidential – “ACME” €"
			res, err := Process(context.Background(), []File{{Name: "r.pdf", ContentType: "application/pdf", Data: in}},
				Options{Watermark: Watermark{Enabled: true, Text: text, Position: pos}})
			if err != nil {
				t.Fatal(err)
			}
			if res.Watermarked != 1 || len(res.Files) != 1 || res.Archived {
				t.Fatalf("result = %d watermarked, %d files, archived %v", res.Watermarked, len(res.Files), res.Archived)
			}
			out := res.Files[0].Data
			if ok, err := api.HasWatermarks(bytes.NewReader(out), pdfConfig()); err != nil || !ok {
				t.Errorf("HasWatermarks = %v, %v; want true", ok, err)
			}
			streams := pdfStreams(t, out)
			want, _ := winAnsi(text) // pdfcpu writes WinAnsi bytes
			var enc []byte
			for _, r := range want {
				enc = append(enc, byte(r))
			}
			found := false
			for _, s := range streams {
				found = found || bytes.Contains(s, append(append([]byte("("), enc...), ')'))
			}
			if !found {
				t.Errorf("watermark text %q not found in any content stream", text)
			}
			if m := stampPlacement(t, streams); !checks[pos](m) {
				t.Errorf("stamp matrix %v is not at %s", m, pos)
			}
			pages, err := api.PageCount(bytes.NewReader(out), pdfConfig())
			if err != nil || pages != 3 {
				t.Errorf("page count = %d, %v; want 3", pages, err)
			}
		})
	}
}

func TestPDFProblems(t *testing.T) {
	t.Parallel()
	pdf := makePDF(1)
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"locked.pdf", encryptPDF(t, pdf, "user-secret"), "is an encrypted PDF"},
		{"owner-only.pdf", encryptPDF(t, pdf, ""), "is an encrypted PDF"},
		{"garbage.pdf", []byte("this is not a PDF at all, just text"), "is not a valid PDF"},
		{"empty.pdf", nil, "is not a valid PDF"},
		{"truncated.pdf", pdf[:60], "is not a valid PDF"},
		{"header-only.pdf", []byte("%PDF-1.7\n%%EOF\n"), "is not a valid PDF"},
		{"nested.pdf", []byte("%PDF-1.4\n1 0 obj\n" + strings.Repeat("[", 100000) + "\nendobj\ntrailer << /Root 1 0 R >>\n%%EOF"), "is not a valid PDF"},
	}
	opts := Options{Watermark: Watermark{Enabled: true, Text: "Draft"}}
	for _, tt := range tests {
		f := File{Name: tt.name, ContentType: "application/pdf", Data: tt.data}
		err := Validate([]File{f}, opts)
		e, ok := apperr.As(err)
		if !ok || e.Code != apperr.Invalid || len(e.Fields["attachments"]) != 1 ||
			!strings.Contains(e.Fields["attachments"][0], `"`+tt.name+`" `+tt.want) {
			t.Errorf("Validate(%s) = %v; want an attachments problem %q", tt.name, err, tt.want)
		}
		_, err = Process(context.Background(), []File{f}, opts)
		if e, ok := apperr.As(err); !ok || e.Code != apperr.Invalid || !strings.Contains(e.Fields["attachments"][0], tt.want) {
			t.Errorf("Process(%s) = %v; want %q", tt.name, err, tt.want)
		}
		// Without a watermark the file is not inspected at all.
		if err := Validate([]File{f}, Options{Compress: true}); err != nil {
			t.Errorf("Validate(%s) without watermark = %v", tt.name, err)
		}
	}
}

func TestPDFTextMustBeWinAnsi(t *testing.T) {
	t.Parallel()
	f := File{Name: "a.pdf", Data: makePDF(1)}
	err := Validate([]File{f}, Options{Watermark: Watermark{Enabled: true, Text: "Секретно"}})
	if e, ok := apperr.As(err); !ok || len(e.Fields["attachment_options.watermark.text"]) != 1 {
		t.Errorf("Validate with Cyrillic text on a PDF = %v; want a text problem", err)
	}
	// The same text is fine on an image (Go Bold covers Cyrillic).
	img := File{Name: "a.png", Data: encodePNG(t, solid(50, 50, white))}
	if err := Validate([]File{img}, Options{Watermark: Watermark{Enabled: true, Text: "Секретно"}}); err != nil {
		t.Errorf("Validate with Cyrillic text on a PNG = %v", err)
	}
}

func TestSafelyRecovers(t *testing.T) {
	t.Parallel()
	err := safely(func() error {
		var m map[string]int
		m["boom"]++ // a runtime panic, not pdfcpu's own kind
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "pdfcpu panic") {
		t.Errorf("safely = %v; want the panic as an error", err)
	}
}

// A PDF whose page content decompresses past MaxPDFContentBytes is refused
// at intake, and by the worker, instead of being decoded into gigabytes.
func TestPDFContentBomb(t *testing.T) {
	t.Parallel()
	opts := Options{Watermark: Watermark{Enabled: true, Text: "x", Position: PositionCenter}}
	small, bomb := testpdf.Bomb(1<<20), testpdf.Bomb(MaxPDFContentBytes+(4<<20))
	if err := Validate([]File{{Name: "small.pdf", Data: small}}, opts); err != nil {
		t.Fatalf("1 MiB of content: %v", err)
	}
	err := Validate([]File{{Name: "bomb.pdf", Data: bomb}}, opts)
	if !strings.Contains(fmt.Sprint(err), "decompresses to more than") {
		t.Fatalf("%d KiB bomb: %v, want refused for its decompressed size", len(bomb)>>10, err)
	}
	if _, err := watermarkPDF(bomb, opts.Watermark); err == nil {
		t.Error("the worker watermarked the bomb")
	}
}
