package attach

import (
	"image"
	"image/color"
	"image/draw"
)

// Layer opacities, out of 255: a 30 % black shadow under a 55 % white fill.
const (
	shadowOpacity = 77
	fillOpacity   = 140
)

// orient maps an overlay laid out on the displayed image (w×h) onto the
// stored pixels of an image with EXIF orientation o (1..8; see
// storedPoint), so that the watermark reads upright where the viewer shows
// the picture.
func (ov overlay) orient(o, w, h int) overlay {
	if o < 2 || o > 8 {
		return ov
	}
	return overlay{orientPlane(ov.shadow, o, w, h), orientPlane(ov.fill, o, w, h)}
}

func orientPlane(a *image.Alpha, o, w, h int) *image.Alpha {
	r := a.Rect
	p, q := storedPoint(o, r.Min.X, r.Min.Y, w, h), storedPoint(o, r.Max.X-1, r.Max.Y-1, w, h)
	sr := image.Rectangle{p, q}.Canon()
	sr.Max = sr.Max.Add(image.Pt(1, 1))
	out := image.NewAlpha(sr)
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			s := storedPoint(o, x, y, w, h)
			out.Pix[out.PixOffset(s.X, s.Y)] = a.Pix[a.PixOffset(x, y)]
		}
	}
	return out
}

// storedPoint maps display pixel (x, y) of a w×h display to the stored
// pixel, for EXIF orientation o (TIFF 6.0 tag 274: where the stored 0th row
// and 0th column appear on the display).
func storedPoint(o, x, y, w, h int) image.Point {
	switch o {
	case 2: // row 0 top, column 0 right
		return image.Pt(w-1-x, y)
	case 3: // bottom, right
		return image.Pt(w-1-x, h-1-y)
	case 4: // bottom, left
		return image.Pt(x, h-1-y)
	case 5: // left, top
		return image.Pt(y, x)
	case 6: // right, top
		return image.Pt(y, w-1-x)
	case 7: // right, bottom
		return image.Pt(h-1-y, w-1-x)
	case 8: // left, bottom
		return image.Pt(h-1-y, x)
	}
	return image.Pt(x, y)
}

// composite draws the overlay onto img, which must be one of the types
// editable returns.
func composite(img image.Image, ov overlay) {
	r := ov.fill.Rect.Intersect(img.Bounds())
	alphas := func(x, y int) (uint32, uint32) {
		i := ov.fill.PixOffset(x, y)
		return uint32(ov.shadow.Pix[i]) * shadowOpacity / 255, uint32(ov.fill.Pix[i]) * fillOpacity / 255
	}
	switch m := img.(type) {
	case *image.YCbCr:
		hs, vs := subsampling(m.SubsampleRatio)
		for y := r.Min.Y; y < r.Max.Y; y++ {
			for x := r.Min.X; x < r.Max.X; x++ {
				a1, a2 := alphas(x, y)
				if a1|a2 == 0 {
					continue
				}
				i := m.YOffset(x, y)
				m.Y[i] = mix(m.Y[i], a1, a2)
				// Each chroma sample once, at the first pixel that uses it;
				// both layers are grey, so chroma moves towards neutral.
				if (x%hs == 0 || x == r.Min.X) && (y%vs == 0 || y == r.Min.Y) {
					c := m.COffset(x, y)
					m.Cb[c], m.Cr[c] = neutral(m.Cb[c], a1, a2), neutral(m.Cr[c], a1, a2)
				}
			}
		}
	case *image.Gray:
		for y := r.Min.Y; y < r.Max.Y; y++ {
			for x := r.Min.X; x < r.Max.X; x++ {
				a1, a2 := alphas(x, y)
				i := m.PixOffset(x, y)
				m.Pix[i] = mix(m.Pix[i], a1, a2)
			}
		}
	case *image.NRGBA:
		for y := r.Min.Y; y < r.Max.Y; y++ {
			for x := r.Min.X; x < r.Max.X; x++ {
				a1, a2 := alphas(x, y)
				p := m.Pix[m.PixOffset(x, y):][:4:4]
				p[0], p[1], p[2], p[3] = over(p[0], p[1], p[2], p[3], 0, a1)
				p[0], p[1], p[2], p[3] = over(p[0], p[1], p[2], p[3], 255, a2)
			}
		}
	case draw.Image: // *image.RGBA (fast path in image/draw) and 16-bit types
		draw.DrawMask(m, r, image.NewUniform(color.NRGBA{0, 0, 0, shadowOpacity}), image.Point{}, ov.shadow, r.Min, draw.Over)
		draw.DrawMask(m, r, image.NewUniform(color.NRGBA{255, 255, 255, fillOpacity}), image.Point{}, ov.fill, r.Min, draw.Over)
	}
}

// mix puts black at a1 then white at a2 (out of 255) over an opaque value.
func mix(v uint8, a1, a2 uint32) uint8 {
	u := (uint32(v)*(255-a1) + 127) / 255
	return uint8((u*(255-a2) + 255*a2 + 127) / 255)
}

// neutral moves a chroma sample towards 128 for both layers.
func neutral(c uint8, a1, a2 uint32) uint8 {
	v := int32(c)
	v += ((128 - v) * int32(a1)) / 255
	v += ((128 - v) * int32(a2)) / 255
	return uint8(v)
}

// over composites the grey s at alpha sa over a non-premultiplied pixel.
func over(r, g, b, a uint8, s uint8, sa uint32) (uint8, uint8, uint8, uint8) {
	if sa == 0 {
		return r, g, b, a
	}
	da := uint32(a) * (255 - sa) // destination weight, scaled by 255
	oa := sa*255 + da            // output alpha, scaled by 255
	ch := func(c uint8) uint8 { return uint8((uint32(s)*sa*255 + uint32(c)*da + oa/2) / oa) }
	return ch(r), ch(g), ch(b), uint8((oa + 127) / 255)
}

func subsampling(r image.YCbCrSubsampleRatio) (h, v int) {
	switch r {
	case image.YCbCrSubsampleRatio422:
		return 2, 1
	case image.YCbCrSubsampleRatio420:
		return 2, 2
	case image.YCbCrSubsampleRatio440:
		return 1, 2
	case image.YCbCrSubsampleRatio411:
		return 4, 1
	case image.YCbCrSubsampleRatio410:
		return 4, 2
	}
	return 1, 1
}
