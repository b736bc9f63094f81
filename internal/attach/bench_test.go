package attach

import (
	"bytes"
	"context"
	"image"
	"math/rand/v2"
	"testing"
)

// photo is a w×h JPEG with gradients and noise, so that it compresses like
// a photograph rather than a flat test card.
func photo(b *testing.B, w, h int) []byte {
	m := image.NewYCbCr(image.Rect(0, 0, w, h), image.YCbCrSubsampleRatio420)
	rng := rand.New(rand.NewPCG(1, 2))
	for y := range h {
		for x := range w {
			m.Y[m.YOffset(x, y)] = uint8((x*255/w+y*255/h)/2) + uint8(rng.IntN(16))
		}
	}
	for i := range m.Cb {
		m.Cb[i], m.Cr[i] = uint8(96+i%64), uint8(160-i%48)
	}
	return encodeJPEG(b, m)
}

func benchProcess(b *testing.B, files []File, opts Options) {
	b.Helper()
	n := 0
	for _, f := range files {
		n += len(f.Data)
	}
	b.SetBytes(int64(n))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := Process(context.Background(), files, opts); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWatermarkPDF10Pages(b *testing.B) {
	files := []File{{Name: "report.pdf", Data: makePDF(10)}}
	benchProcess(b, files, Options{Watermark: Watermark{Enabled: true, Text: "CONFIDENTIAL", Position: PositionDiagonal}})
}

func BenchmarkWatermarkJPEG4000x3000(b *testing.B) {
	files := []File{{Name: "photo.jpg", Data: photo(b, 4000, 3000)}}
	for _, pos := range []string{PositionBottomRight, PositionDiagonal} {
		b.Run(pos, func(b *testing.B) {
			benchProcess(b, files, Options{Watermark: Watermark{Enabled: true, Text: "CONFIDENTIAL", Position: pos}})
		})
	}
}

func BenchmarkAESZip20MiB(b *testing.B) {
	random := make([]byte, 20<<20)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	text := bytes.Repeat([]byte("Invoice 2026-11 line item, quantity 3, total 42.00 EUR\n"), 20<<20/55)
	b.Run("incompressible", func(b *testing.B) {
		benchProcess(b, []File{{Name: "data.bin", Data: random}}, Options{Password: "correct horse battery"})
	})
	b.Run("text", func(b *testing.B) {
		benchProcess(b, []File{{Name: "data.csv", Data: text}}, Options{Password: "correct horse battery"})
	})
}
