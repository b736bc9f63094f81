package attach

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"regexp"
	"strconv"
	"testing"

	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
)

// makePDF builds a valid PDF of n Letter pages by hand, each with a line of
// Helvetica text, with an exact cross-reference table.
func makePDF(n int) []byte {
	var b bytes.Buffer
	var offs []int
	obj := func(format string, args ...any) {
		offs = append(offs, b.Len())
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", len(offs), fmt.Sprintf(format, args...))
	}
	b.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	obj("<< /Type /Catalog /Pages 2 0 R >>")
	var kids bytes.Buffer
	for i := range n {
		fmt.Fprintf(&kids, "%d 0 R ", 4+2*i)
	}
	obj("<< /Type /Pages /Kids [%s] /Count %d >>", kids.String(), n)
	obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
	for i := range n {
		obj("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>", 5+2*i)
		s := fmt.Sprintf("BT /F1 24 Tf 72 700 Td (Quarterly report, page %d) Tj ET", i+1)
		obj("<< /Length %d >>\nstream\n%s\nendstream", len(s), s)
	}
	x := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(offs)+1)
	for _, o := range offs {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(offs)+1, x)
	return b.Bytes()
}

// encryptPDF encrypts pdf with AES-256 via pdfcpu.
func encryptPDF(t testing.TB, pdf []byte, userPW string) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := api.Encrypt(bytes.NewReader(pdf), &out, model.NewAESConfiguration(userPW, "owner-secret", 256)); err != nil {
		t.Fatalf("encrypt PDF: %v", err)
	}
	return out.Bytes()
}

// pdfStreams returns the decoded content of every stream of a valid PDF.
func pdfStreams(t testing.TB, pdf []byte) [][]byte {
	t.Helper()
	ctx, err := api.ReadContext(bytes.NewReader(pdf), pdfConfig())
	if err != nil {
		t.Fatalf("output is not a readable PDF: %v", err)
	}
	if err := api.ValidateContext(ctx); err != nil {
		t.Fatalf("output PDF does not validate: %v", err)
	}
	var out [][]byte
	for _, e := range ctx.Table {
		if sd, ok := e.Object.(types.StreamDict); ok {
			if err := sd.Decode(); err == nil {
				out = append(out, sd.Content)
			}
		}
	}
	return out
}

// stampMatrix is the transformation pdfcpu places a stamp's form with.
var stampMatrix = regexp.MustCompile(`([-\d.]+) ([-\d.]+) ([-\d.]+) ([-\d.]+) ([-\d.]+) ([-\d.]+) cm /GS\d+ gs /Fm\d+ Do`)

// stampPlacement finds the first stamp's matrix in the page contents.
func stampPlacement(t testing.TB, streams [][]byte) (m [6]float64) {
	t.Helper()
	for _, s := range streams {
		if g := stampMatrix.FindSubmatch(s); g != nil {
			for i := range m {
				m[i], _ = strconv.ParseFloat(string(g[i+1]), 64)
			}
			return m
		}
	}
	t.Fatal("no stamp placement in the page contents")
	return m
}

// solid is a w×h opaque image of c.
func solid(w, h int, c color.NRGBA) *image.NRGBA {
	m := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := 0; i < len(m.Pix); i += 4 {
		m.Pix[i], m.Pix[i+1], m.Pix[i+2], m.Pix[i+3] = c.R, c.G, c.B, c.A
	}
	return m
}

func encodePNG(t testing.TB, m image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, m); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func encodeJPEG(t testing.TB, m image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := jpeg.Encode(&b, m, &jpeg.Options{Quality: 95}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// maxDiff is the largest channel difference between a and b in r.
func maxDiff(a, b image.Image, r image.Rectangle) int {
	d := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			r1, g1, b1, a1 := a.At(x, y).RGBA()
			r2, g2, b2, a2 := b.At(x, y).RGBA()
			for _, p := range [][2]uint32{{r1, r2}, {g1, g2}, {b1, b2}, {a1, a2}} {
				d = max(d, abs(int(p[0]>>8)-int(p[1]>>8)))
			}
		}
	}
	return d
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

var white = color.NRGBA{255, 255, 255, 255}
