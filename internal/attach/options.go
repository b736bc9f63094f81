package attach

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"

	"github.com/postline/postline/internal/apperr"
)

// Limits of attachment_options, documented in doc.go.
const (
	MinPasswordLen  = 8   // characters
	MaxPasswordLen  = 128 // characters
	MaxWatermarkLen = 200 // characters
)

// Watermark positions. PositionCenter is the default.
const (
	PositionCenter      = "center"
	PositionTopLeft     = "top-left"
	PositionTopRight    = "top-right"
	PositionBottomLeft  = "bottom-left"
	PositionBottomRight = "bottom-right"
	PositionDiagonal    = "diagonal"
)

// Positions lists the accepted watermark positions, default first.
var Positions = []string{PositionCenter, PositionTopLeft, PositionTopRight,
	PositionBottomLeft, PositionBottomRight, PositionDiagonal}

// Watermark is the watermark part of attachment_options. Text is trimmed.
// An empty Position means PositionCenter; ParseOptions fills it in when the
// watermark is enabled.
type Watermark struct {
	Enabled  bool
	Text     string
	Position string
}

// Options are the parsed attachment_options. Password is secret: String and
// LogValue redact it, and no error of this package contains it.
type Options struct {
	Compress  bool
	Password  string
	Watermark Watermark
}

// Archive reports whether Process puts all files into one ZIP archive.
func (o Options) Archive() bool { return o.Compress || o.Password != "" }

// String describes o without the password.
func (o Options) String() string {
	return fmt.Sprintf("{Compress:%t Password:%s Watermark:%+v}", o.Compress, redact(o.Password), o.Watermark)
}

// GoString is String, so that %#v cannot print the password either.
func (o Options) GoString() string { return o.String() }

// LogValue keeps the password out of structured logs.
func (o Options) LogValue() slog.Value {
	return slog.GroupValue(slog.Bool("compress", o.Compress),
		slog.String("password", redact(o.Password)),
		slog.Bool("watermark", o.Watermark.Enabled),
		slog.String("position", o.Watermark.Position))
}

func redact(p string) string {
	if p == "" {
		return `""`
	}
	return "[redacted]"
}

// ParseOptions parses the attachment_options form part. An empty (or
// all-white-space) raw value, JSON null and {} give the zero Options. Every
// problem found is reported at once as an apperr.Invalid error whose Fields
// name the offending field ("attachment_options.watermark.text", ...).
func ParseOptions(raw string) (Options, error) {
	top, ok, problem := object([]byte(raw), true)
	if problem != "" {
		fe := apperr.FieldErrors{"attachment_options": {problem}}
		return Options{}, fe.ErrMessage("Invalid attachment_options")
	}
	if !ok {
		return Options{}, nil
	}
	var o Options
	fe := apperr.FieldErrors{}
	for k, v := range top {
		switch k {
		case "compress":
			o.Compress = boolean(fe, "attachment_options.compress", v)
		case "password":
			o.Password = str(fe, "attachment_options.password", v)
		case "watermark":
			o.Watermark = watermark(fe, v)
		default:
			fe.Add("attachment_options."+truncate(k, 64), "is not a known option")
		}
	}
	o.check(fe)
	if err := fe.ErrMessage("Invalid attachment_options"); err != nil {
		return Options{}, err
	}
	if o.Watermark.Enabled && o.Watermark.Position == "" {
		o.Watermark.Position = PositionCenter
	}
	return o, nil
}

// object decodes raw as a JSON object; ok is false for null (and, at the
// top, for nothing at all). problem is set when raw is no object.
// Unknown keys are rejected by the callers: a misspelt "password" must not
// send the files unprotected.
func object(raw []byte, top bool) (m map[string]json.RawMessage, ok bool, problem string) {
	raw = bytes.TrimSpace(raw)
	if (top && len(raw) == 0) || string(raw) == "null" {
		return nil, false, ""
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		if !json.Valid(raw) {
			return nil, false, "is not valid JSON"
		}
		return nil, false, "must be a JSON object"
	}
	return m, true, ""
}

func watermark(fe apperr.FieldErrors, raw json.RawMessage) Watermark {
	var w Watermark
	m, ok, problem := object(raw, false)
	if problem != "" {
		fe.Add("attachment_options.watermark", "must be an object")
	}
	if !ok {
		return w
	}
	for k, v := range m {
		f := "attachment_options.watermark." + truncate(k, 64)
		switch k {
		case "enabled":
			w.Enabled = boolean(fe, f, v)
		case "text":
			w.Text = strings.TrimSpace(str(fe, f, v))
		case "position":
			w.Position = str(fe, f, v)
		default:
			fe.Add(f, "is not a known option")
		}
	}
	return w
}

func boolean(fe apperr.FieldErrors, field string, v json.RawMessage) bool {
	var b *bool
	if err := json.Unmarshal(v, &b); err != nil {
		fe.Add(field, "must be a boolean")
		return false
	}
	return b != nil && *b
}

func str(fe apperr.FieldErrors, field string, v json.RawMessage) string {
	var s *string
	if err := json.Unmarshal(v, &s); err != nil {
		fe.Add(field, "must be a string")
		return ""
	}
	if s == nil {
		return ""
	}
	return *s
}
