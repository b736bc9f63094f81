package attach

import (
	"bytes"
	"errors"
	"fmt"
	"mime"
	"path"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/postline/postline/internal/apperr"
)

// File is one attachment. Data is never modified by this package.
type File struct {
	Name        string
	ContentType string
	Data        []byte
}

// kind is what watermarking does with a file.
type kind int

const (
	kindOther kind = iota // passes unchanged
	kindPDF
	kindImage // PNG or JPEG; the real format comes from the data
)

// kindOf classifies f by its declared media type, then by its name's
// extension, and, when the type is missing or application/octet-stream, by
// its leading bytes.
func kindOf(f File) kind {
	mt, _, _ := mime.ParseMediaType(f.ContentType)
	switch strings.ToLower(mt) {
	case "application/pdf", "application/x-pdf":
		return kindPDF
	case "image/png", "image/x-png", "image/jpeg", "image/jpg", "image/pjpeg":
		return kindImage
	}
	switch strings.ToLower(path.Ext(SanitizeName(f.Name))) {
	case ".pdf":
		return kindPDF
	case ".png", ".jpg", ".jpeg", ".jpe", ".jfif":
		return kindImage
	}
	if mt != "" && !strings.EqualFold(mt, "application/octet-stream") {
		return kindOther
	}
	switch {
	case bytes.HasPrefix(f.Data, []byte("%PDF-")):
		return kindPDF
	case bytes.HasPrefix(f.Data, []byte(pngSignature)), bytes.HasPrefix(f.Data, []byte{0xFF, 0xD8, 0xFF}):
		return kindImage
	}
	return kindOther
}

// Validate runs the checks the HTTP layer makes before accepting a send: the
// options themselves (for Options not made by ParseOptions) and, when
// watermarking, that every PDF parses and is not encrypted, that every image
// header decodes as PNG or JPEG within MaxWatermarkPixels, and that the text
// can be drawn on the file types present. It returns an apperr.Invalid error
// listing every problem; file problems are under "attachments" and name the
// file. It never panics, whatever the bytes.
func Validate(files []File, opts Options) error {
	fe := apperr.FieldErrors{}
	opts.check(fe)
	if !opts.Watermark.Enabled || len(fe) > 0 {
		return fe.ErrMessage("Invalid attachments")
	}
	kinds := make([]kind, len(files))
	for i, f := range files {
		kinds[i] = kindOf(f)
		var err error
		switch kinds[i] {
		case kindPDF:
			err = checkPDF(f.Data)
		case kindImage:
			_, err = checkImage(f.Data)
		}
		if err != nil {
			fe.Add("attachments", fileProblem(f.Name, err))
		}
	}
	checkText(fe, opts.Watermark.Text, kinds)
	return fe.ErrMessage("Invalid attachments")
}

// check adds the semantic problems of o to fe, skipping fields that already
// have a (type) problem. ParseOptions runs it; Validate runs it again for
// Options built by hand.
func (o Options) check(fe apperr.FieldErrors) {
	const pw, text, pos = "attachment_options.password", "attachment_options.watermark.text", "attachment_options.watermark.position"
	if n := utf8.RuneCountInString(o.Password); o.Password != "" && (n < MinPasswordLen || n > MaxPasswordLen) && fe[pw] == nil {
		fe.Add(pw, fmt.Sprintf("must be %d to %d characters long", MinPasswordLen, MaxPasswordLen))
	} else if strings.ContainsFunc(o.Password, unicode.IsControl) && fe[pw] == nil {
		// Nobody can type one at an unzip prompt: a control character is a
		// client's encoding mistake, and the archive would never open.
		fe.Add(pw, "must not contain control characters such as line breaks or tabs")
	}
	if p := o.Watermark.Position; p != "" && !slices.Contains(Positions, p) && fe[pos] == nil {
		fe.Add(pos, "must be one of "+strings.Join(Positions, ", "))
	}
	t := o.Watermark.Text
	switch {
	case fe[text] != nil:
	case utf8.RuneCountInString(t) > MaxWatermarkLen:
		fe.Add(text, fmt.Sprintf("must be at most %d characters", MaxWatermarkLen))
	case strings.ContainsFunc(t, unicode.IsControl):
		fe.Add(text, "must not contain control characters such as line breaks")
	case o.Watermark.Enabled && !strings.ContainsFunc(t, visible):
		fe.Add(text, "is required when the watermark is enabled")
	}
}

func visible(r rune) bool { return unicode.IsGraphic(r) && !unicode.IsSpace(r) }

// checkText reports text that the watermark cannot draw on the kinds
// present: PDFs use a standard 14 font (WinAnsiEncoding), images Go Bold.
func checkText(fe apperr.FieldErrors, text string, kinds []kind) {
	const f = "attachment_options.watermark.text"
	if _, ok := winAnsi(text); !ok && slices.Contains(kinds, kindPDF) {
		fe.Add(f, "contains characters that cannot be drawn on PDF attachments (Western European characters only)")
	}
	if slices.Contains(kinds, kindImage) && !drawable(text) {
		fe.Add(f, "contains characters that cannot be drawn on image attachments (Latin, Greek and Cyrillic only)")
	}
}

// fileProblem is the client-facing message for err about the file name:
// the sanitised name, quoted, then the first line of err (one of the
// package's problem sentinels; causes from pdfcpu or the decoders follow it
// and are not shown).
func fileProblem(name string, err error) string {
	msg := err.Error()
	for _, p := range []error{errPDFEncrypted, errPDFInvalid, errPDFFailed, errImageInvalid, errImageTooLarge, errImageFailed} {
		if errors.Is(err, p) {
			msg = p.Error()
			break
		}
	}
	return fmt.Sprintf("%q %s", SanitizeName(name), msg)
}

// Watermarkable counts the files a watermark applies to (PDF, PNG, JPEG),
// so that the API can say how many will be watermarked before the job runs.
func Watermarkable(files []File) int {
	n := 0
	for _, f := range files {
		if kindOf(f) != kindOther {
			n++
		}
	}
	return n
}
