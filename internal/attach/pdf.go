package attach

import (
	"bytes"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/filter"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
)

// Problems reported for PDFs; the messages are shown to clients.
var (
	errPDFEncrypted = errors.New("is an encrypted PDF; watermarking needs an unprotected PDF")
	errPDFInvalid   = errors.New("is not a valid PDF")
	errPDFFailed    = errors.New("could not be watermarked")
)

// disableConfigDir keeps pdfcpu from creating a configuration directory under
// the user's home; it only sets a pdfcpu global, once.
var disableConfigDir = sync.OnceFunc(api.DisableConfigDir)

// pdfConfig is pdfcpu's default configuration, offline, with resource
// limits tightened to what a 10 MiB attachment can reasonably need.
func pdfConfig() *model.Configuration {
	disableConfigDir()
	conf := model.NewDefaultConfiguration()
	conf.Offline = true
	conf.ValidationMode = model.ValidationRelaxed
	const mb = 1 << 20
	l := &conf.Limits
	l.MaxStreamBytes = min(l.MaxStreamBytes, 64*mb)
	l.MaxDecodeBytes = min(l.MaxDecodeBytes, 128*mb)
	l.MaxImagePixels = min(l.MaxImagePixels, MaxWatermarkPixels)
	l.MaxImageBytes = min(l.MaxImageBytes, 256*mb)
	l.MaxObjectCount = min(l.MaxObjectCount, 1_000_000)
	l.MaxXRefEntries = min(l.MaxXRefEntries, 1_000_000)
	l.MaxObjectStreamCount = min(l.MaxObjectStreamCount, 100_000)
	return conf
}

// safely runs fn and turns a panic inside pdfcpu (a large parser fed with
// user input) into an error. pdfcpu only recovers its own panic type.
func safely(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("attach: pdfcpu panic: %v\n%s", r, debug.Stack())
		}
	}()
	return fn()
}

// readPDF parses and validates data, refusing encrypted documents (even
// those that open without a password: watermarking would have to drop or
// re-apply their protection). The returned error wraps one of the errPDF
// problems and pdfcpu's cause.
func readPDF(data []byte, conf *model.Configuration) (*model.Context, error) {
	var ctx *model.Context
	err := safely(func() (err error) {
		ctx, err = api.ReadValidateAndOptimize(bytes.NewReader(data), conf)
		return err
	})
	switch {
	case err != nil && errors.Is(err, pdfcpu.ErrWrongPassword):
		return nil, errors.Join(errPDFEncrypted, err)
	case err != nil:
		return nil, errors.Join(errPDFInvalid, err)
	case ctx.Encrypt != nil:
		return nil, errPDFEncrypted
	}
	return ctx, nil
}

// MaxPDFContentBytes bounds what the page content streams of a PDF may
// decompress to, all pages together. Watermarking decodes every page's
// content, and pdfcpu's own limit there is 512 MiB per stream: a few
// hundred kilobytes of deflated spaces per page would otherwise take
// gigabytes. Real documents stay far below it (text and vector drawing;
// scanned pages are images, which are not decoded).
const MaxPDFContentBytes = 64 << 20

var errPDFTooLarge = fmt.Errorf("has page content that decompresses to more than %d MiB; it cannot be watermarked", MaxPDFContentBytes>>20)

// checkPDF is Validate's check: the PDF must parse, must not be encrypted,
// and its page content must decompress within MaxPDFContentBytes.
func checkPDF(data []byte) error {
	conf := pdfConfig()
	conf.Cmd = model.VALIDATE
	conf.Optimize = false
	ctx, err := readPDF(data, conf)
	if err != nil {
		return err
	}
	return checkContentSize(ctx)
}

// checkContentSize decodes every page's content streams with what is left
// of the MaxPDFContentBytes budget as the limit, so a bomb stops at the
// budget instead of at pdfcpu's per-stream default.
func checkContentSize(ctx *model.Context) error {
	left := int64(MaxPDFContentBytes)
	return safely(func() error {
		for page := 1; page <= ctx.PageCount; page++ {
			d, _, _, err := ctx.PageDict(page, false)
			if err != nil || d == nil {
				return errors.Join(errPDFInvalid, err)
			}
			obj, found := d.Find("Contents")
			if !found {
				continue
			}
			if obj, err = ctx.Dereference(obj); err != nil {
				return errors.Join(errPDFInvalid, err)
			}
			parts := []types.Object{obj}
			if arr, ok := obj.(types.Array); ok {
				parts = arr
			}
			for _, part := range parts {
				sd, _, err := ctx.DereferenceStreamDict(part)
				if err != nil || sd == nil {
					continue // not a stream: pdfcpu will complain, or skip it, when stamping
				}
				raw := sd.Content
				if err := sd.DecodeWithLimit(left); errors.Is(err, filter.ErrDecodeLimitExceeded) {
					return errPDFTooLarge
				} else if err != nil {
					return errors.Join(errPDFInvalid, err)
				}
				left -= int64(len(sd.Content))
				sd.Content = raw // do not keep the decoded copy
				if left <= 0 {
					return errPDFTooLarge
				}
			}
		}
		return nil
	})
}

// pdfWatermarkDesc is the pdfcpu description per position: Helvetica-Bold
// grey at 35 % opacity, stamped on top of the content (a watermark behind
// it would disappear under scanned, opaque pages).
var pdfWatermarkDesc = map[string]string{
	PositionCenter:      "pos:c, rot:0, scale:0.6 rel",
	PositionTopLeft:     "pos:tl, rot:0, scale:0.3 rel, offset:18 -18",
	PositionTopRight:    "pos:tr, rot:0, scale:0.3 rel, offset:-18 -18",
	PositionBottomLeft:  "pos:bl, rot:0, scale:0.3 rel, offset:18 18",
	PositionBottomRight: "pos:br, rot:0, scale:0.3 rel, offset:-18 18",
	PositionDiagonal:    "pos:c, diagonal:1, scale:0.8 rel",
}

// watermarkPDF stamps w.Text on every page of data.
func watermarkPDF(data []byte, w Watermark) ([]byte, error) {
	text, ok := winAnsi(w.Text)
	desc, known := pdfWatermarkDesc[w.Position]
	if !ok || !known {
		return nil, fmt.Errorf("attach: watermark text or position not usable for PDF")
	}
	conf := pdfConfig()
	conf.Cmd = model.ADDWATERMARKS
	ctx, err := readPDF(data, conf)
	if err != nil {
		return nil, err
	}
	if err := checkContentSize(ctx); err != nil { // again: the worker may get a file that skipped intake's check
		return nil, err
	}
	var out bytes.Buffer
	err = safely(func() error {
		wm, err := api.TextWatermark(text, "font:Helvetica-Bold, points:48, opacity:0.35, fillcolor:#808080, "+desc,
			true, false, types.POINTS)
		if err != nil {
			return err
		}
		pages, err := api.PagesForPageSelection(ctx.PageCount, nil, true, true)
		if err != nil {
			return err
		}
		if err := pdfcpu.AddWatermarks(ctx, pages, wm); err != nil {
			return err
		}
		return api.Write(ctx, &out, conf)
	})
	if err != nil {
		return nil, errors.Join(errPDFFailed, err)
	}
	return out.Bytes(), nil
}

// winAnsi maps text to the runes pdfcpu turns into single WinAnsiEncoding
// bytes for its core fonts (it writes a rune r <= 0xFF as byte(r) and any
// other rune as a space). ok is false when a character has no WinAnsi code.
func winAnsi(text string) (string, bool) {
	ok := true
	mapped := strings.Map(func(r rune) rune {
		switch {
		case r >= 0x20 && r <= 0x7E, r >= 0xA0 && r <= 0xFF:
			return r
		}
		for i, c := range winAnsi80 {
			if c == r && c != 0 {
				return rune(0x80 + i)
			}
		}
		ok = false
		return -1
	}, text)
	return mapped, ok
}

// winAnsi80 is WinAnsiEncoding 0x80..0x9F (0 where the code is unused).
var winAnsi80 = [32]rune{
	'€', 0, '‚', 'ƒ', '„', '…', '†', '‡', 'ˆ', '‰', 'Š', '‹', 'Œ', 0, 'Ž', 0,
	0, '‘', '’', '“', '”', '•', '–', '—', '˜', '™', 'š', '›', 'œ', 0, 'ž', 'Ÿ',
}
