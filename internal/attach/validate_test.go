package attach

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"runtime"
	"strings"
	"testing"

	"github.com/postline/postline/internal/apperr"
)

func TestKindOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		f    File
		want kind
	}{
		{File{Name: "a.pdf"}, kindPDF},
		{File{Name: "a.bin", ContentType: "application/pdf"}, kindPDF},
		{File{Name: "a", ContentType: "Application/PDF; name=a"}, kindPDF},
		{File{Name: "A.JPG"}, kindImage},
		{File{Name: "a", ContentType: "image/png"}, kindImage},
		{File{Name: "scan", ContentType: "application/octet-stream", Data: []byte("%PDF-1.7")}, kindPDF},
		{File{Name: "scan", Data: []byte("\xff\xd8\xff\xe0")}, kindImage},
		{File{Name: "scan", ContentType: "text/plain", Data: []byte("%PDF-1.7")}, kindOther},
		{File{Name: "a.gif", ContentType: "image/gif"}, kindOther},
		{File{Name: "a.docx"}, kindOther},
	}
	for _, tt := range tests {
		if got := kindOf(tt.f); got != tt.want {
			t.Errorf("kindOf(%q, %q) = %d; want %d", tt.f.Name, tt.f.ContentType, got, tt.want)
		}
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	t.Parallel()
	files := []File{
		{Name: "ok.pdf", Data: makePDF(1)},
		{Name: "bad.pdf", Data: []byte("nope")},
		{Name: "ok.png", Data: encodePNG(t, solid(20, 20, white))},
		{Name: "bad.jpg", Data: []byte("nope")},
		{Name: "notes.txt", Data: []byte("nope")},
	}
	err := Validate(files, Options{Watermark: Watermark{Enabled: true, Text: "Draft"}})
	e, ok := apperr.As(err)
	if !ok || e.Code != apperr.Invalid || len(e.Fields) != 1 || len(e.Fields["attachments"]) != 2 {
		t.Fatalf("Validate = %v; want two attachments problems", err)
	}
	got := strings.Join(e.Fields["attachments"], "\n")
	if !strings.Contains(got, `"bad.pdf" is not a valid PDF`) || !strings.Contains(got, `"bad.jpg" is not a valid PNG or JPEG image`) {
		t.Errorf("problems = %q", got)
	}
	if strings.Contains(err.Error(), "xref") {
		t.Errorf("pdfcpu's cause leaks into the client message: %v", err)
	}
}

func TestValidateChecksOptions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		opts  Options
		field string
	}{
		{Options{Password: "short"}, "attachment_options.password"},
		{Options{Watermark: Watermark{Enabled: true}}, "attachment_options.watermark.text"},
		{Options{Watermark: Watermark{Enabled: true, Text: "x", Position: "middle"}}, "attachment_options.watermark.position"},
	}
	for _, tt := range tests {
		for _, err := range []error{Validate(nil, tt.opts), processErr(File{Name: "a.txt"}, tt.opts)} {
			if e, ok := apperr.As(err); !ok || len(e.Fields[tt.field]) == 0 {
				t.Errorf("%v: %v; want a problem for %s", tt.opts, err, tt.field)
			}
		}
	}
	if err := Validate(nil, Options{}); err != nil {
		t.Errorf("Validate(zero) = %v", err)
	}
}

// FuzzValidate feeds arbitrary bytes as PDFs and images: errors are fine,
// panics are not.
func FuzzValidate(f *testing.F) {
	f.Add(makePDF(1), "a.pdf")
	f.Add(encodePNG(f, solid(8, 8, white)), "a.png")
	f.Add(encodeJPEG(f, solid(8, 8, white)), "a.jpg")
	f.Add([]byte("%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj"), "b.pdf")
	opts := Options{Watermark: Watermark{Enabled: true, Text: "Fuzz", Position: PositionDiagonal}}
	f.Fuzz(func(t *testing.T, data []byte, name string) {
		files := []File{{Name: name, Data: data}}
		if err := Validate(files, opts); err != nil {
			if apperr.CodeOf(err) != apperr.Invalid {
				t.Fatalf("Validate error %v is not Invalid", err)
			}
			return
		}
		if _, err := Process(context.Background(), files, opts); err != nil && apperr.CodeOf(err) != apperr.Invalid {
			t.Fatalf("Process error %v is not Invalid", err)
		}
	})
}

// A file declared as PNG that starts like a TIFF is refused from its
// first bytes: no decoder but PNG's and JPEG's ever runs, so a forged TIFF
// header cannot make the server allocate gigabytes. 16-bit images count
// double against the pixel limit.
func TestValidateImageHeadersCheaply(t *testing.T) { // not parallel: it measures allocation
	opts := Options{Watermark: Watermark{Enabled: true, Text: "x", Position: "center"}}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for _, data := range []string{"II*\x00\xf0\xff\xff\xff\x00\x00\x00\x00", "MM\x00*\xff\xff\xff\xf0\x00\x00\x00\x00", "GIF89a"} {
		err := Validate([]File{{Name: "a.png", ContentType: "image/png", Data: []byte(data)}}, opts)
		if !strings.Contains(fmt.Sprint(err), "is not a valid PNG or JPEG image") {
			t.Errorf("%q: %v", data, err)
		}
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Errorf("checking three tiny files allocated %d MiB", grew>>20)
	}
	var deep bytes.Buffer
	png.Encode(&deep, image.NewRGBA64(image.Rect(0, 0, 4000, 3500))) // 14 MP, 28 MP counted
	if err := Validate([]File{{Name: "d.png", Data: deep.Bytes()}}, opts); !strings.Contains(fmt.Sprint(err), "too large") {
		t.Errorf("a 14 MP 16-bit PNG: %v, want too large", err)
	}
}
