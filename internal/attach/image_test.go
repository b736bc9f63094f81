package attach

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"strings"
	"testing"

	"github.com/postline/postline/internal/apperr"
)

// regions of a w×h image: a box of 30 % per side in each corner, and the
// centre.
func regions(w, h int) map[string]image.Rectangle {
	cw, ch := w*30/100, h*30/100
	return map[string]image.Rectangle{
		PositionTopLeft:     image.Rect(0, 0, cw, ch),
		PositionTopRight:    image.Rect(w-cw, 0, w, ch),
		PositionBottomLeft:  image.Rect(0, h-ch, cw, h),
		PositionBottomRight: image.Rect(w-cw, h-ch, w, h),
		PositionCenter:      image.Rect(w*40/100, h*40/100, w*60/100, h*60/100),
	}
}

// untouched lists the regions that must not change for each position.
var untouched = map[string][]string{
	PositionCenter:      {PositionTopLeft, PositionTopRight, PositionBottomLeft, PositionBottomRight},
	PositionTopLeft:     {PositionBottomRight, PositionTopRight, PositionBottomLeft},
	PositionTopRight:    {PositionBottomLeft, PositionTopLeft, PositionBottomRight},
	PositionBottomLeft:  {PositionTopRight, PositionTopLeft, PositionBottomRight},
	PositionBottomRight: {PositionTopLeft, PositionTopRight, PositionBottomLeft},
	PositionDiagonal:    {PositionTopLeft, PositionBottomRight},
}

func TestWatermarkImagePositions(t *testing.T) {
	t.Parallel()
	const w, h = 400, 300
	src := solid(w, h, color.NRGBA{60, 120, 180, 255})
	for _, format := range []string{"png", "jpeg"} {
		data, tolerance := encodePNG(t, src), 0
		if format == "jpeg" {
			data, tolerance = encodeJPEG(t, src), 6 // re-encoding a flat JPEG moves little
		}
		orig, _, err := image.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		for _, pos := range Positions {
			t.Run(format+"/"+pos, func(t *testing.T) {
				t.Parallel()
				res, err := Process(context.Background(), []File{{Name: "photo." + format, Data: data}},
					Options{Watermark: Watermark{Enabled: true, Text: "CONFIDENTIAL", Position: pos}})
				if err != nil || res.Watermarked != 1 {
					t.Fatalf("Process = %d, %v", res.Watermarked, err)
				}
				out, got, err := image.Decode(bytes.NewReader(res.Files[0].Data))
				if err != nil || got != format || out.Bounds() != orig.Bounds() {
					t.Fatalf("output decodes as %s %v, %v; want %s %v", got, out.Bounds(), err, format, orig.Bounds())
				}
				r := regions(w, h)
				expect := r[pos]
				if pos == PositionDiagonal {
					expect = r[PositionCenter]
				}
				if d := maxDiff(orig, out, expect); d < 40 {
					t.Errorf("%s region %v: max change %d; want a visible watermark", pos, expect, d)
				}
				for _, o := range untouched[pos] {
					if d := maxDiff(orig, out, r[o]); d > tolerance {
						t.Errorf("%s: region %s %v changed by %d (tolerance %d)", pos, o, r[o], d, tolerance)
					}
				}
			})
		}
	}
}

func TestWatermarkImageKinds(t *testing.T) {
	t.Parallel()
	gray := image.NewGray(image.Rect(0, 0, 120, 80))
	pal := image.NewPaletted(image.Rect(0, 0, 120, 80), color.Palette{color.Black, color.White})
	clear := image.NewNRGBA(image.Rect(0, 0, 120, 80)) // fully transparent
	tests := []struct {
		name string
		data []byte
	}{
		{"gray.jpg", encodeJPEG(t, gray)},
		{"gray.png", encodePNG(t, gray)},
		{"palette.png", encodePNG(t, pal)},
		{"transparent.png", encodePNG(t, clear)},
		{"rgba64.png", encodePNG(t, image.NewRGBA64(image.Rect(0, 0, 120, 80)))},
		{"tiny.png", encodePNG(t, solid(1, 1, white))},
		{"thin.jpg", encodeJPEG(t, solid(3000, 4, white))},
	}
	for _, tt := range tests {
		res, err := Process(context.Background(), []File{{Name: tt.name, Data: tt.data}},
			Options{Watermark: Watermark{Enabled: true, Text: "Draft Ω", Position: PositionDiagonal}})
		if err != nil || res.Watermarked != 1 {
			t.Errorf("Process(%s) = %d, %v", tt.name, res.Watermarked, err)
			continue
		}
		in, _, _ := image.Decode(bytes.NewReader(tt.data))
		out, _, err := image.Decode(bytes.NewReader(res.Files[0].Data))
		if err != nil {
			t.Errorf("%s: output does not decode: %v", tt.name, err)
		} else if in.Bounds().Dx() > 10 && maxDiff(in, out, in.Bounds()) < 20 {
			t.Errorf("%s: no visible watermark", tt.name)
		}
	}
}

// exifTIFF is a big-endian TIFF with IFD0 holding one Orientation entry and
// a link to an IFD1 (thumbnail) at offset 26.
func exifTIFF(orientation uint16) []byte {
	t := []byte("MM\x00\x2a\x00\x00\x00\x08\x00\x01")
	t = binary.BigEndian.AppendUint16(t, 0x0112)
	t = binary.BigEndian.AppendUint16(t, 3)
	t = binary.BigEndian.AppendUint32(t, 1)
	t = binary.BigEndian.AppendUint16(t, orientation)
	t = append(t, 0, 0)
	t = binary.BigEndian.AppendUint32(t, 26) // next IFD
	return append(t, 0, 0, 0, 0, 0, 0)       // an empty IFD1
}

func jpegWithSegments(jpg []byte, segs ...[]byte) []byte {
	out := append([]byte{}, jpg[:2]...)
	for _, s := range segs {
		out = append(out, s...)
	}
	return append(out, jpg[2:]...)
}

func segment(marker byte, payload []byte) []byte {
	s := []byte{0xFF, marker}
	s = binary.BigEndian.AppendUint16(s, uint16(len(payload)+2))
	return append(s, payload...)
}

func pngChunk(typ string, data []byte) []byte {
	c := binary.BigEndian.AppendUint32(nil, uint32(len(data)))
	c = append(append(c, typ...), data...)
	return binary.BigEndian.AppendUint32(c, crc32.ChecksumIEEE(c[4:]))
}

// TestWatermarkFollowsOrientation stores a 300×400 picture shown as 400×300
// (EXIF 6: rotate 90° clockwise to display). The displayed top-left is the
// stored bottom-left.
func TestWatermarkFollowsOrientation(t *testing.T) {
	t.Parallel()
	src := solid(300, 400, color.NRGBA{200, 60, 60, 255})
	icc := segment(0xE2, []byte("ICC_PROFILE\x00\x01\x01fake-profile"))
	data := jpegWithSegments(encodeJPEG(t, src), segment(0xE1, append([]byte("Exif\x00\x00"), exifTIFF(6)...)), icc)
	res, err := Process(context.Background(), []File{{Name: "phone.jpg", Data: data}},
		Options{Watermark: Watermark{Enabled: true, Text: "CONFIDENTIAL", Position: PositionTopLeft}})
	if err != nil {
		t.Fatal(err)
	}
	outData := res.Files[0].Data
	orig, _, _ := image.Decode(bytes.NewReader(data))
	out, _, err := image.Decode(bytes.NewReader(outData))
	if err != nil {
		t.Fatal(err)
	}
	r := regions(300, 400)
	if d := maxDiff(orig, out, r[PositionBottomLeft]); d < 40 {
		t.Errorf("stored bottom-left changed by %d; want the watermark there", d)
	}
	for _, o := range []string{PositionTopLeft, PositionTopRight, PositionBottomRight} {
		if d := maxDiff(orig, out, r[o]); d > 6 {
			t.Errorf("stored %s changed by %d; want untouched", o, d)
		}
	}
	m := jpegMeta(outData)
	if m.orientation != 6 || len(m.blocks) != 2 || !bytes.Equal(m.blocks[1], icc) {
		t.Fatalf("output metadata: orientation %d, %d blocks; want 6 and EXIF + ICC kept", m.orientation, len(m.blocks))
	}
	if tiff := m.blocks[0][10:]; !bytes.Equal(tiff[22:26], []byte{0, 0, 0, 0}) {
		t.Errorf("EXIF still links the thumbnail IFD: % x", tiff[22:26])
	}
}

func TestPNGMetadataKept(t *testing.T) {
	t.Parallel()
	p := encodePNG(t, solid(200, 100, color.NRGBA{10, 200, 10, 255}))
	gama := pngChunk("gAMA", []byte{0, 0, 0xB1, 0x8F})
	phys := pngChunk("pHYs", []byte{0, 0, 0x0B, 0x13, 0, 0, 0x0B, 0x13, 1})
	exif := pngChunk("eXIf", exifTIFF(3)) // shown rotated by 180°
	data := append(append(append(append(append([]byte{}, p[:33]...), gama...), phys...), exif...), p[33:]...)
	res, err := Process(context.Background(), []File{{Name: "x.png", Data: data}},
		Options{Watermark: Watermark{Enabled: true, Text: "COPY", Position: PositionTopLeft}})
	if err != nil {
		t.Fatal(err)
	}
	out := res.Files[0].Data
	m := pngMeta(out)
	if m.orientation != 3 || len(m.blocks) != 3 || !bytes.Equal(m.blocks[0], gama) || !bytes.Equal(m.blocks[1], phys) {
		t.Errorf("output PNG metadata: orientation %d, %d chunks; want 3 and gAMA, pHYs, eXIf", m.orientation, len(m.blocks))
	}
	orig, _, _ := image.Decode(bytes.NewReader(data))
	img, _, err := image.Decode(bytes.NewReader(out))
	if err != nil {
		t.Fatalf("output with kept chunks does not decode: %v", err)
	}
	r := regions(200, 100)
	if maxDiff(orig, img, r[PositionBottomRight]) < 40 || maxDiff(orig, img, r[PositionTopLeft]) != 0 {
		t.Error("with orientation 3 the displayed top-left must be the stored bottom-right")
	}
}

func TestImageProblems(t *testing.T) {
	t.Parallel()
	p := encodePNG(t, solid(10, 10, white))
	huge := append([]byte{}, p...) // IHDR claims 10000×10000
	binary.BigEndian.PutUint32(huge[16:], 10000)
	binary.BigEndian.PutUint32(huge[20:], 10000)
	binary.BigEndian.PutUint32(huge[29:], crc32.ChecksumIEEE(huge[12:29]))
	opts := Options{Watermark: Watermark{Enabled: true, Text: "x"}}
	tests := []struct {
		f    File
		want string
	}{
		{File{Name: "huge.png", Data: huge}, "is too large to watermark"},
		{File{Name: "garbage.png", Data: []byte("GIF89a not really")}, "is not a valid PNG or JPEG image"},
		{File{Name: "x", ContentType: "image/jpeg", Data: []byte{0xFF, 0xD8, 0xFF}}, "is not a valid PNG or JPEG image"},
		{File{Name: "empty.jpg"}, "is not a valid PNG or JPEG image"},
	}
	for _, tt := range tests {
		for _, err := range []error{Validate([]File{tt.f}, opts), processErr(tt.f, opts)} {
			e, ok := apperr.As(err)
			if !ok || e.Code != apperr.Invalid || !strings.Contains(strings.Join(e.Fields["attachments"], ";"), tt.want) {
				t.Errorf("%s: %v; want %q", tt.f.Name, err, tt.want)
			}
		}
	}
	// A header that decodes with data that does not: Validate passes, Process fails.
	cut := File{Name: "cut.png", Data: p[:50]}
	if err := Validate([]File{cut}, opts); err != nil {
		t.Errorf("Validate(cut.png) = %v; only the header is checked", err)
	}
	if err := processErr(cut, opts); !strings.Contains(err.Error(), "is not a valid PNG or JPEG image") {
		t.Errorf("Process(cut.png) = %v", err)
	}
}

func processErr(f File, opts Options) error {
	_, err := Process(context.Background(), []File{f}, opts)
	return err
}
