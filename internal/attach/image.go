package attach

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/jpeg"
	"image/png"
)

// MaxWatermarkPixels bounds the images that are watermarked (width ×
// height); larger ones are refused, because decoding them needs several
// bytes of memory per pixel. Images with 16 bits per channel count double.
const MaxWatermarkPixels = 25_000_000

// JPEGQuality is the quality watermarked JPEGs are re-encoded with.
const JPEGQuality = 92

// Problems reported for images; the messages are shown to clients.
var (
	errImageInvalid  = errors.New("is not a valid PNG or JPEG image")
	errImageTooLarge = fmt.Errorf("is too large to watermark (the limit is %d megapixels)", MaxWatermarkPixels/1_000_000)
	errImageFailed   = errors.New("could not be watermarked")
)

// checkImage is Validate's check: the data must start as a PNG or a JPEG
// and its header decode as one, with a size within MaxWatermarkPixels.
// Only the PNG and JPEG decoders are ever called: image.DecodeConfig would
// pick any registered decoder by the leading bytes, and the TIFF decoder
// that pdfcpu registers allocates what a forged header asks for (gigabytes
// from a dozen bytes) before reading any pixel.
func checkImage(data []byte) (format string, err error) {
	var cfg image.Config
	switch {
	case bytes.HasPrefix(data, []byte(pngSignature)):
		format = "png"
		cfg, err = png.DecodeConfig(bytes.NewReader(data))
	case bytes.HasPrefix(data, []byte{0xFF, 0xD8, 0xFF}):
		format = "jpeg"
		cfg, err = jpeg.DecodeConfig(bytes.NewReader(data))
	default:
		return "", errImageInvalid
	}
	if err != nil || cfg.Width <= 0 || cfg.Height <= 0 {
		return "", errImageInvalid
	}
	pixels := int64(cfg.Width) * int64(cfg.Height)
	if deep(cfg.ColorModel) {
		pixels *= 2
	}
	if pixels > MaxWatermarkPixels {
		return "", errImageTooLarge
	}
	return format, nil
}

// deep reports 16 bits per channel, which takes twice the memory.
func deep(m color.Model) bool {
	return m == color.RGBA64Model || m == color.NRGBA64Model || m == color.Gray16Model
}

// watermarkImage draws w onto a PNG or JPEG and re-encodes it in the same
// format, keeping its colour profile, EXIF (minus the thumbnail) and XMP.
func watermarkImage(data []byte, w Watermark) ([]byte, error) {
	format, err := checkImage(data)
	if err != nil {
		return nil, err
	}
	var img image.Image
	if format == "png" {
		img, err = png.Decode(bytes.NewReader(data))
	} else {
		img, err = jpeg.Decode(bytes.NewReader(data))
	}
	if err != nil {
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
