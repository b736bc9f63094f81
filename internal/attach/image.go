package attach

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/draw"
	"image/jpeg"
	"image/png"
)

// MaxWatermarkPixels bounds the images that are watermarked (width ×
// height); larger ones are refused, because decoding them needs several
// bytes of memory per pixel.
const MaxWatermarkPixels = 50_000_000

// JPEGQuality is the quality watermarked JPEGs are re-encoded with.
const JPEGQuality = 92

// Problems reported for images; the messages are shown to clients.
var (
	errImageInvalid  = errors.New("is not a valid PNG or JPEG image")
	errImageTooLarge = fmt.Errorf("is too large to watermark (the limit is %d megapixels)", MaxWatermarkPixels/1_000_000)
	errImageFailed   = errors.New("could not be watermarked")
)

// checkImage is Validate's check: the header must decode as PNG or JPEG
// (other registered decoders, such as TIFF pulled in by pdfcpu, do not
// count) with a size within MaxWatermarkPixels.
func checkImage(data []byte) (format string, err error) {
	cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
	switch {
	case err != nil || (format != "png" && format != "jpeg") || cfg.Width <= 0 || cfg.Height <= 0:
		return "", errImageInvalid
	case int64(cfg.Width)*int64(cfg.Height) > MaxWatermarkPixels:
		return "", errImageTooLarge
	}
	return format, nil
}

// watermarkImage draws w onto a PNG or JPEG and re-encodes it in the same
// format, keeping its colour profile, EXIF (minus the thumbnail) and XMP.
func watermarkImage(data []byte, w Watermark) ([]byte, error) {
	format, err := checkImage(data)
	if err != nil {
		return nil, err
	}
	img, got, err := image.Decode(bytes.NewReader(data))
	if err != nil || got != format {
		return nil, errors.Join(errImageInvalid, err)
	}
	meta, at := jpegMeta(data), 2
	if format == "png" {
		meta, at = pngMeta(data), len(pngSignature)+25 // after IHDR
	}
	img = editable(img, format)
	b := img.Bounds()
	dw, dh := b.Dx(), b.Dy()
	if meta.orientation >= 5 { // displayed rotated by a quarter turn
		dw, dh = dh, dw
	}
	ov, err := layout(w.Text, w.Position, dw, dh)
	if err != nil {
		return nil, errors.Join(errImageFailed, err)
	}
	ov = ov.orient(meta.orientation, dw, dh)
	ov.fill.Rect, ov.shadow.Rect = ov.fill.Rect.Add(b.Min), ov.shadow.Rect.Add(b.Min)
	composite(img, ov)

	var buf bytes.Buffer
	buf.Grow(len(data) + len(data)/4)
	if format == "png" {
		err = (&png.Encoder{CompressionLevel: png.DefaultCompression}).Encode(&buf, img)
	} else {
		err = jpeg.Encode(&buf, img, &jpeg.Options{Quality: JPEGQuality})
	}
	if err != nil {
		return nil, errors.Join(errImageFailed, err)
	}
	return meta.insert(buf.Bytes(), at), nil
}

// editable returns img itself when composite can edit it in place and the
// encoder has a fast path for it, else a converted copy: NRGBA for PNG (it
// keeps transparency), RGBA for JPEG (CMYK input).
func editable(img image.Image, format string) image.Image {
	switch m := img.(type) {
	case *image.YCbCr:
		if m.Rect.Min == (image.Point{}) {
			return m
		}
	case *image.Gray, *image.NRGBA, *image.RGBA:
		return m
	case *image.RGBA64, *image.NRGBA64, *image.Gray16:
		if format == "png" {
			return m
		}
	}
	b := img.Bounds()
	var dst draw.Image = image.NewRGBA(b)
	if format == "png" {
		dst = image.NewNRGBA(b)
	}
	draw.Draw(dst, b, img, b.Min, draw.Src)
	return dst
}
