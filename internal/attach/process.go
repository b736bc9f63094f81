package attach

import (
	"context"
	"errors"
	"time"

	"github.com/postline/postline/internal/apperr"
)

// Result is what Process produced.
type Result struct {
	// Files are the attachments to send: the inputs with sanitised names
	// (watermarked where applicable, else sharing the input's Data), or the
	// one archive.
	Files []File
	// Watermarked counts the files that received a watermark.
	Watermarked int
	// Archived is true when Files is the one ArchiveName archive.
	Archived bool
}

// Process applies opts to files: first the watermark on each PDF, PNG and
// JPEG (other files pass unchanged), then, with Compress or a Password, one
// ZIP archive of everything (AES-256 encrypted with a Password). It checks
// ctx between files. Problems with a file give an apperr.Invalid error like
// Validate's; cancellation gives an apperr.Unavailable error wrapping
// ctx.Err(). The password is neither logged nor kept.
func Process(ctx context.Context, files []File, opts Options) (Result, error) {
	fe := apperr.FieldErrors{}
	opts.check(fe)
	if err := fe.ErrMessage("Invalid attachments"); err != nil {
		return Result{}, err
	}
	if opts.Watermark.Position == "" {
		opts.Watermark.Position = PositionCenter
	}
	res := Result{Files: make([]File, 0, len(files))}
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return Result{}, cancelled(err)
		}
		out := File{Name: SanitizeName(f.Name), ContentType: f.ContentType, Data: f.Data}
		if opts.Watermark.Enabled {
			k := kindOf(f)
			if checkText(fe, opts.Watermark.Text, []kind{k}); len(fe) > 0 {
				return Result{}, fe.ErrMessage("Invalid attachments")
			}
			var err error
			switch k {
			case kindPDF:
				out.Data, err = watermarkPDF(f.Data, opts.Watermark)
			case kindImage:
				out.Data, err = watermarkImage(f.Data, opts.Watermark)
			}
			if err != nil {
				return Result{}, &apperr.Error{Code: apperr.Invalid, Message: "Invalid attachments", Err: err,
					Fields: map[string][]string{"attachments": {fileProblem(f.Name, err)}}}
			}
			if k != kindOther {
				res.Watermarked++
			}
		}
		res.Files = append(res.Files, out)
	}
	if !opts.Archive() || len(res.Files) == 0 {
		return res, nil
	}
	zip, err := buildArchive(ctx, res.Files, opts.Password, time.Now())
	switch {
	case ctx.Err() != nil:
		return Result{}, cancelled(ctx.Err())
	case err != nil:
		return Result{}, apperr.Wrap(apperr.Internal, err, "could not build the attachment archive")
	}
	res.Files = []File{{Name: ArchiveName, ContentType: ArchiveContentType, Data: zip}}
	res.Archived = true
	return res, nil
}

func cancelled(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return apperr.Wrap(apperr.Unavailable, err, "attachment processing timed out")
	}
	return apperr.Wrap(apperr.Unavailable, err, "attachment processing was cancelled")
}
