package attach

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
)

// imageMeta is what Go's decoders drop but a re-encoded image must keep:
// colour profiles, EXIF (with its orientation) and XMP.
type imageMeta struct {
	orientation int      // EXIF orientation 1..8; 1 when absent
	blocks      [][]byte // raw JPEG segments or PNG chunks, markers included
}

const pngSignature = "\x89PNG\r\n\x1a\n"

// jpegMeta collects the APP1 (EXIF, XMP) and APP2 (ICC profile) segments
// that precede the first scan. Other APPn segments are dropped on purpose:
// APP0 is rewritten by nobody and meaningless here, and Adobe's APP14 would
// describe a colour transform that the re-encoded file no longer uses.
func jpegMeta(b []byte) imageMeta {
	m := imageMeta{orientation: 1}
	if len(b) < 4 || b[0] != 0xFF || b[1] != 0xD8 {
		return m
	}
	for i := 2; i+4 <= len(b) && b[i] == 0xFF; {
		mk := b[i+1]
		switch {
		case mk == 0xFF: // fill byte
			i++
			continue
		case mk == 0xDA || mk == 0xD9: // start of scan, end of image
			return m
		case mk == 0x01 || mk >= 0xD0 && mk <= 0xD7: // no length
			i += 2
			continue
		}
		n := int(binary.BigEndian.Uint16(b[i+2:]))
		if n < 2 || n > len(b)-i-2 {
			return m
		}
		seg := b[i : i+2+n]
		switch {
		case mk == 0xE1 && bytes.HasPrefix(seg[4:], []byte("Exif\x00\x00")):
			seg = bytes.Clone(seg)
			m.orientation = fixExif(seg[10:])
			m.blocks = append(m.blocks, seg)
		case mk == 0xE1 || mk == 0xE2:
			m.blocks = append(m.blocks, seg)
		}
		i += 2 + n
	}
	return m
}

// pngMeta collects the colour chunks (sRGB, gAMA, cHRM, iCCP), pHYs and
// eXIf that precede the image data.
func pngMeta(b []byte) imageMeta {
	m := imageMeta{orientation: 1}
	if !bytes.HasPrefix(b, []byte(pngSignature)) {
		return m
	}
	colorType := -1
	for i := len(pngSignature); i+12 <= len(b); {
		n := int(binary.BigEndian.Uint32(b[i:]))
		if n < 0 || n > len(b)-i-12 {
			return m
		}
		chunk := b[i : i+12+n]
		switch string(chunk[4:8]) {
		case "IHDR":
			if n >= 13 {
				colorType = int(chunk[8+9])
			}
		case "IDAT", "IEND":
			return m
		case "sRGB", "gAMA", "cHRM", "pHYs":
			m.blocks = append(m.blocks, chunk)
		case "iCCP":
			// Grey+alpha decodes to NRGBA and is written as colour, which a
			// grey profile would not describe.
			if colorType != 4 {
				m.blocks = append(m.blocks, chunk)
			}
		case "eXIf":
			chunk = bytes.Clone(chunk)
			m.orientation = fixExif(chunk[8 : 8+n])
			binary.BigEndian.PutUint32(chunk[8+n:], crc32.ChecksumIEEE(chunk[4:8+n]))
			m.blocks = append(m.blocks, chunk)
		}
		i += 12 + n
	}
	return m
}

// fixExif returns the orientation in the TIFF structure t and unlinks IFD1,
// the embedded thumbnail, which would still show the picture without its
// watermark. t is modified in place.
func fixExif(t []byte) int {
	if len(t) < 8 {
		return 1
	}
	var bo binary.ByteOrder = binary.BigEndian
	switch string(t[:2]) {
	case "II":
		bo = binary.LittleEndian
	case "MM":
	default:
		return 1
	}
	ifd := uint64(bo.Uint32(t[4:]))
	if bo.Uint16(t[2:]) != 42 || ifd < 8 || ifd+2 > uint64(len(t)) {
		return 1
	}
	end := int(ifd) + 2 + 12*int(bo.Uint16(t[ifd:]))
	if end > len(t) {
		return 1
	}
	o := 1
	for e := int(ifd) + 2; e < end; e += 12 {
		if bo.Uint16(t[e:]) == 0x0112 && bo.Uint16(t[e+2:]) == 3 { // Orientation, SHORT
			if v := int(bo.Uint16(t[e+8:])); v >= 1 && v <= 8 {
				o = v
			}
		}
	}
	if end+4 <= len(t) {
		clear(t[end : end+4])
	}
	return o
}

// insert returns encoded with the blocks inserted at offset at (after the
// JPEG SOI marker or the PNG IHDR chunk).
func (m imageMeta) insert(encoded []byte, at int) []byte {
	if len(m.blocks) == 0 || at > len(encoded) {
		return encoded
	}
	n := len(encoded)
	for _, b := range m.blocks {
		n += len(b)
	}
	out := make([]byte, 0, n)
	out = append(out, encoded[:at]...)
	for _, b := range m.blocks {
		out = append(out, b...)
	}
	return append(out, encoded[at:]...)
}
