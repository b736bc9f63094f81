package attach

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/postline/postline/internal/apperr"
)

// archiveFiles is a mix: compressible text, incompressible bytes (stored),
// an empty file, duplicate and hostile names.
func archiveFiles() []File {
	random := make([]byte, 100_000)
	rand.Read(random)
	return []File{
		{Name: "report.txt", ContentType: "text/plain", Data: []byte(strings.Repeat("quarterly numbers\n", 5000))},
		{Name: "../../secret/report.txt", Data: []byte("second report")},
		{Name: "REPORT.TXT", Data: []byte("third report")},
		{Name: "random.bin", Data: random},
		{Name: "empty", Data: nil},
		{Name: "Überweisung\u202e.pdf", Data: []byte("%PDF-ish")},
	}
}

var archiveNames = []string{"report.txt", "report (2).txt", "REPORT (3).TXT", "random.bin", "empty", "Überweisung.pdf"}

func processArchive(t *testing.T, files []File, opts Options) *zip.Reader {
	t.Helper()
	res, err := Process(context.Background(), files, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Archived || len(res.Files) != 1 || res.Files[0].Name != ArchiveName || res.Files[0].ContentType != "application/zip" {
		t.Fatalf("result: archived %v, %d files, %+v", res.Archived, len(res.Files), res.Files[0].Name)
	}
	zr, err := zip.NewReader(bytes.NewReader(res.Files[0].Data), int64(len(res.Files[0].Data)))
	if err != nil {
		t.Fatalf("archive does not open: %v", err)
	}
	if len(zr.File) != len(files) {
		t.Fatalf("archive has %d entries; want %d", len(zr.File), len(files))
	}
	for i, f := range zr.File {
		if f.Name != archiveNames[i] {
			t.Errorf("entry %d is named %q; want %q", i, f.Name, archiveNames[i])
		}
	}
	return zr
}

func TestCompressArchive(t *testing.T) {
	t.Parallel()
	files := archiveFiles()
	zr := processArchive(t, files, Options{Compress: true})
	for i, f := range zr.File {
		rc, err := f.Open() // checks the CRC-32 at EOF
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rc)
		if err != nil || !bytes.Equal(got, files[i].Data) {
			t.Errorf("%s: %d bytes, %v; want the input's %d bytes", f.Name, len(got), err, len(files[i].Data))
		}
	}
	if m := zr.File[0].Method; m != zip.Deflate {
		t.Errorf("text entry method %d; want deflate", m)
	}
	if m := zr.File[3].Method; m != zip.Store {
		t.Errorf("random entry method %d; want store (deflate cannot shrink it)", m)
	}
	if zr.File[0].CompressedSize64 >= zr.File[0].UncompressedSize64/10 {
		t.Errorf("text entry not compressed: %d of %d", zr.File[0].CompressedSize64, zr.File[0].UncompressedSize64)
	}
}

func TestPasswordArchive(t *testing.T) {
	t.Parallel()
	const password = "correct horse battery"
	files := archiveFiles()
	zr := processArchive(t, files, Options{Password: password})
	for i, f := range zr.File {
		got, err := readAESEntry(f, password)
		if err != nil || !bytes.Equal(got, files[i].Data) {
			t.Errorf("%s: %d bytes, %v; want the input's %d bytes", f.Name, len(got), err, len(files[i].Data))
		}
		if _, err := readAESEntry(f, "wrong horse battery"); !errors.Is(err, errBadPassword) {
			t.Errorf("%s with a wrong password: %v; want %v", f.Name, err, errBadPassword)
		}
		if _, err := f.Open(); err == nil {
			t.Errorf("%s opens without decryption", f.Name)
		}
	}
	// The password is nowhere in the archive, and each entry has its own salt.
	res, _ := Process(context.Background(), files[:1], Options{Password: password})
	if bytes.Contains(res.Files[0].Data, []byte(password)) {
		t.Error("archive contains the password")
	}
	res2, _ := Process(context.Background(), files[:1], Options{Password: password})
	if bytes.Equal(res.Files[0].Data, res2.Files[0].Data) {
		t.Error("two encryptions of the same file are identical; the salt must be random")
	}
	if files[0].Data[0] != 'q' {
		t.Error("Process modified the input")
	}
}

func TestNoArchiveWithoutFiles(t *testing.T) {
	t.Parallel()
	res, err := Process(context.Background(), nil, Options{Compress: true, Password: "12345678"})
	if err != nil || len(res.Files) != 0 || res.Archived {
		t.Errorf("Process(no files) = %+v, %v; want nothing", res, err)
	}
}

func TestProcessCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Process(ctx, archiveFiles(), Options{Compress: true})
	if !errors.Is(err, context.Canceled) || apperr.CodeOf(err) != apperr.Unavailable {
		t.Errorf("Process(cancelled) = %v; want Unavailable wrapping context.Canceled", err)
	}
}

func TestProcessPassesOtherFiles(t *testing.T) {
	t.Parallel()
	in := []File{{Name: "dir/notes.txt", ContentType: "text/plain", Data: []byte("hello")}}
	res, err := Process(context.Background(), in, Options{Watermark: Watermark{Enabled: true, Text: "x"}})
	if err != nil || res.Watermarked != 0 || res.Archived || len(res.Files) != 1 {
		t.Fatalf("Process = %+v, %v", res, err)
	}
	if f := res.Files[0]; f.Name != "notes.txt" || f.ContentType != "text/plain" || string(f.Data) != "hello" {
		t.Errorf("file = %+v; want it unchanged but for the sanitised name", f)
	}
}

func TestWorthDeflating(t *testing.T) {
	t.Parallel()
	random := make([]byte, 1<<20)
	rand.Read(random)
	if worthDeflating(random) {
		t.Error("worthDeflating(1 MiB of random bytes) = true")
	}
	if !worthDeflating(bytes.Repeat([]byte("text "), 1<<18)) {
		t.Error("worthDeflating(repetitive text) = false")
	}
}
