package attach

import (
	"fmt"
	"image"
	"math"
	"sync"

	"golang.org/x/image/font"
	"golang.org/x/image/font/gofont/gobold"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/font/sfnt"
	"golang.org/x/image/math/fixed"
)

// goBold is the embedded image watermark font, parsed once. sfnt.Font
// methods are safe for concurrent use.
var goBold = sync.OnceValues(func() (*sfnt.Font, error) { return opentype.Parse(gobold.TTF) })

// drawable reports whether the image font has a glyph for every rune of text.
func drawable(text string) bool {
	f, err := goBold()
	if err != nil {
		return false
	}
	var buf sfnt.Buffer
	for _, r := range text {
		if i, err := f.GlyphIndex(&buf, r); err != nil || (i == 0 && r != ' ') {
			return false
		}
	}
	return true
}

// overlay is a rendered watermark: the coverage of a dark shadow and of a
// light fill over the same rectangle of the destination image. The two
// layers keep the text readable on light and on dark backgrounds.
type overlay struct{ shadow, fill *image.Alpha }

// layout renders text for a displayed image of w×h pixels at pos, in display
// coordinates (origin top-left).
func layout(text, pos string, w, h int) (overlay, error) {
	f, err := goBold()
	if err != nil {
		return overlay{}, fmt.Errorf("attach: watermark font: %w", err)
	}
	// Advances scale linearly without hinting: measure at 100 px, then size.
	const ref = 100
	adv, err := advance(f, text, ref)
	if err != nil {
		return overlay{}, err
	}
	size := fontSize(float64(adv)/64, pos, float64(w), float64(h))
	face, err := opentype.NewFace(f, &opentype.FaceOptions{Size: size, DPI: 72, Hinting: font.HintingNone})
	if err != nil {
		return overlay{}, fmt.Errorf("attach: watermark face: %w", err)
	}
	defer face.Close()
	m := face.Metrics()
	asc := m.Ascent.Ceil()
	fill := image.NewAlpha(image.Rect(0, 0, font.MeasureString(face, text).Ceil()+2, asc+m.Descent.Ceil()+2))
	(&font.Drawer{Dst: fill, Src: image.Opaque, Face: face, Dot: fixed.P(1, 1+asc)}).DrawString(text)
	if pos == PositionDiagonal {
		// From the bottom-left corner towards the top-right one.
		fill = rotate(fill, math.Atan2(float64(h), float64(w)))
	}
	// The shadow falls to the bottom right as displayed, whatever the angle.
	ov := withShadow(fill, max(1, int(size/24)))
	ov.place(pos, w, h)
	return ov, nil
}

// withShadow returns fill and its copy shifted by (d, d) on a canvas grown
// by d to the right and bottom.
func withShadow(fill *image.Alpha, d int) overlay {
	r := fill.Rect
	r.Max = r.Max.Add(image.Pt(d, d))
	ov := overlay{shadow: image.NewAlpha(r), fill: image.NewAlpha(r)}
	for y := range fill.Rect.Dy() {
		row := fill.Pix[y*fill.Stride:][:fill.Rect.Dx()]
		copy(ov.fill.Pix[y*ov.fill.Stride:], row)
		copy(ov.shadow.Pix[(y+d)*ov.shadow.Stride+d:], row)
	}
	return ov
}

func advance(f *sfnt.Font, text string, size float64) (fixed.Int26_6, error) {
	face, err := opentype.NewFace(f, &opentype.FaceOptions{Size: size, DPI: 72, Hinting: font.HintingNone})
	if err != nil {
		return 0, fmt.Errorf("attach: watermark face: %w", err)
	}
	defer face.Close()
	return font.MeasureString(face, text), nil
}

// fontSize scales the text to the image: 60 % of the width in the centre,
// 70 % of the diagonal along it, 30 % of the width in a corner, with the
// size also capped by the height so that short wide text stays modest.
func fontSize(adv100 float64, pos string, w, h float64) float64 {
	target, limit := 0.3*w, 0.08*h
	switch pos {
	case PositionCenter:
		target, limit = 0.6*w, 0.2*h
	case PositionDiagonal:
		target, limit = 0.7*math.Hypot(w, h), 0.2*min(w, h)
	}
	size := limit
	if adv100 > 0 {
		size = min(size, target*100/adv100)
	}
	return max(size, 6)
}

// place moves the overlay to its position on a w×h display, with a margin
// of 3 % of the shorter side in the corners.
func (ov overlay) place(pos string, w, h int) {
	mw, mh := ov.fill.Rect.Dx(), ov.fill.Rect.Dy()
	m := max(2, min(w, h)*3/100)
	p := image.Pt((w-mw)/2, (h-mh)/2)
	switch pos {
	case PositionTopLeft:
		p = image.Pt(m, m)
	case PositionTopRight:
		p = image.Pt(w-mw-m, m)
	case PositionBottomLeft:
		p = image.Pt(m, h-mh-m)
	case PositionBottomRight:
		p = image.Pt(w-mw-m, h-mh-m)
	}
	ov.fill.Rect = ov.fill.Rect.Sub(ov.fill.Rect.Min).Add(p)
	ov.shadow.Rect = ov.fill.Rect
}

// rotate turns a counter-clockwise (as displayed) by theta (0 to π/2)
// radians about its centre, sampling bilinearly, into a new mask that holds
// the whole result. Each row only visits the span that can hit a's pixels.
func rotate(a *image.Alpha, theta float64) *image.Alpha {
	sw, sh := float64(a.Rect.Dx()), float64(a.Rect.Dy())
	c, s := math.Cos(theta), math.Sin(theta)
	nw, nh := int(math.Ceil(sw*c+sh*s)), int(math.Ceil(sw*s+sh*c))
	dst := image.NewAlpha(image.Rect(0, 0, nw, nh))
	for y := range nh {
		dy := float64(y) + 0.5 - float64(nh)/2
		// Inverse rotation into a's pixel space (y grows downwards):
		// sx = c·x + bx, sy = s·x + by for the destination column x.
		bx := (0.5-float64(nw)/2)*c - dy*s + sw/2 - 0.5
		by := (0.5-float64(nw)/2)*s + dy*c + sh/2 - 0.5
		lo, hi := span(c, bx, sw, 0, nw)
		lo, hi = span(s, by, sh, lo, hi)
		for x := lo; x < hi; x++ {
			dst.Pix[y*dst.Stride+x] = bilinear(a, c*float64(x)+bx, s*float64(x)+by)
		}
	}
	return dst
}

// span narrows [lo, hi) to the integers x with -1 < k·x + b < n, where
// bilinear sampling can see a pixel.
func span(k, b, n float64, lo, hi int) (int, int) {
	if k == 0 {
		if b <= -1 || b >= n {
			return lo, lo
		}
		return lo, hi
	}
	x0, x1 := (-1-b)/k, (n-b)/k
	if k < 0 {
		x0, x1 = x1, x0
	}
	return max(lo, int(math.Max(math.Floor(x0), -1))), min(hi, int(math.Min(math.Ceil(x1)+1, float64(hi))))
}

func bilinear(a *image.Alpha, fx, fy float64) uint8 {
	x0, y0 := int(math.Floor(fx)), int(math.Floor(fy))
	tx, ty := fx-float64(x0), fy-float64(y0)
	w, h := a.Rect.Dx(), a.Rect.Dy()
	var p [4]float64 // (x0,y0), (x0+1,y0), (x0,y0+1), (x0+1,y0+1); outside is 0
	for i := range p {
		x, y := x0+i&1, y0+i>>1
		if x >= 0 && y >= 0 && x < w && y < h {
			p[i] = float64(a.Pix[y*a.Stride+x])
		}
	}
	v := (p[0]*(1-tx)+p[1]*tx)*(1-ty) + (p[2]*(1-tx)+p[3]*tx)*ty
	return uint8(min(255, v+0.5))
}
