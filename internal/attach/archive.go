package attach

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"context"
	"hash/crc32"
	"time"
)

// ArchiveName and ArchiveContentType describe the one archive Process makes.
const (
	ArchiveName        = "attachments.zip"
	ArchiveContentType = "application/zip"
)

// buildArchive writes files into one ZIP: deflated (stored when deflate
// does not shrink an entry, as with JPEGs), names made unique, and with a
// password every entry AES-256 encrypted (WinZip AE-2).
func buildArchive(ctx context.Context, files []File, password string, now time.Time) ([]byte, error) {
	total := 0
	for _, f := range files {
		total += len(f.Data)
	}
	var out bytes.Buffer
	out.Grow(total + total/16 + 1024)
	zw := zip.NewWriter(&out)
	names := namer{}
	var deflated bytes.Buffer
	fw, _ := flate.NewWriter(&deflated, flate.DefaultCompression) // the level is valid
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		method, payload := zip.Store, f.Data
		if worthDeflating(f.Data) {
			deflated.Reset()
			fw.Reset(&deflated)
			fw.Write(f.Data) // writes to a bytes.Buffer do not fail
			fw.Close()
			if deflated.Len() < len(f.Data) {
				method, payload = zip.Deflate, deflated.Bytes()
			}
		}
		fh := &zip.FileHeader{
			Name:               names.unique(SanitizeName(f.Name)),
			Method:             method,
			CRC32:              crc32.ChecksumIEEE(f.Data),
			UncompressedSize64: uint64(len(f.Data)),
			CompressedSize64:   uint64(len(payload)),
		}
		// Deprecated, but CreateRaw only writes the MS-DOS fields it sets.
		fh.SetModTime(now)
		if !ascii(fh.Name) {
			fh.Flags |= 0x800 // UTF-8 name; CreateRaw does not set it
		}
		if err := writeEntry(zw, fh, payload, password); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// writeEntry writes one raw entry, AES encrypted when password is set.
func writeEntry(zw *zip.Writer, fh *zip.FileHeader, payload []byte, password string) error {
	if password != "" {
		fh.Extra = aesExtra(fh.Method)
		fh.Method = methodAES
		fh.Flags |= 0x1 // encrypted
		fh.CRC32 = 0    // AE-2: the HMAC authenticates instead
		fh.CompressedSize64 = uint64(aesSize(len(payload)))
	}
	w, err := zw.CreateRaw(fh)
	if err != nil {
		return err
	}
	if password != "" {
		return writeAES(w, password, payload)
	}
	_, err = w.Write(payload)
	return err
}

// worthDeflating guesses from a 128 KiB sample in the middle whether
// deflate shrinks data, so that already-compressed files (JPEG, ZIP-based
// documents, video) do not cost a full deflate pass for nothing.
func worthDeflating(data []byte) bool {
	const sample = 128 << 10
	if len(data) < 4*sample {
		return true
	}
	var n countWriter
	fw, _ := flate.NewWriter(&n, flate.BestSpeed)
	fw.Write(data[len(data)/2:][:sample])
	fw.Close()
	return n < sample*97/100
}

type countWriter int

func (c *countWriter) Write(p []byte) (int, error) { *c += countWriter(len(p)); return len(p), nil }

func ascii(s string) bool {
	for i := range len(s) {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
