package receiving

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"mime"
	"net/textproto"
	"strings"

	"github.com/emersion/go-message"
	_ "github.com/emersion/go-message/charset" // decode the charsets mail uses, not only UTF-8
)

// Bounds of the parsing of stored messages: parts visited, multipart
// nesting, and the text kept of each body (a part past it is cut, and
// the raw message stays whole).
const (
	MaxParts     = 100
	MaxDepth     = 10
	MaxBodyBytes = 4 << 20
)

// Attachment is a part of a stored message that is not its text or HTML
// body: a file, an inline image, a forwarded message.
type Attachment struct {
	Index       int    `json:"index"` // from 1, in the order of the message
	Filename    string `json:"filename"`
	ContentType string `json:"content-type"`
	Size        int64  `json:"size"`       // decoded
	ContentID   string `json:"content-id"` // without angle brackets; "" when none
	Inline      bool   `json:"inline"`
}

// Parsed is a stored message read as Mailgun's forwards present one.
type Parsed struct {
	// Headers are the top-level fields in order, unfolded, as [name, value].
	Headers     [][2]string
	BodyPlain   string
	BodyHTML    string
	Attachments []Attachment
}

// header is the top header of a message, as routes read it.
func header(raw []byte) textproto.MIMEHeader {
	h, _ := textproto.NewReader(bufio.NewReader(bytes.NewReader(raw))).ReadMIMEHeader()
	if h == nil {
		h = textproto.MIMEHeader{}
	}
	return h
}

var wordDecoder = &mime.WordDecoder{CharsetReader: message.CharsetReader}

// decoded is a field value with its RFC 2047 words decoded (as written
// when they do not decode).
func decoded(v string) string {
	if d, err := wordDecoder.DecodeHeader(v); err == nil {
		return d
	}
	return v
}

// Parse reads a stored message: its fields, its first text and HTML
// bodies, and every other part as an attachment, within the bounds above.
// A malformed message gives what could be read.
func Parse(raw []byte) Parsed {
	p := Parsed{Headers: headerPairs(raw)}
	e, _ := message.Read(bytes.NewReader(raw)) // an unknown charset still gives an entity
	if e == nil {
		return p
	}
	w := walker{p: &p}
	w.walk(e, 0)
	return p
}

// ParseAll is Parse with each attachment's decoded bytes, in the order of
// Parsed.Attachments: what a forward carries.
func ParseAll(raw []byte) (Parsed, [][]byte) {
	p := Parsed{Headers: headerPairs(raw)}
	e, _ := message.Read(bytes.NewReader(raw))
	if e == nil {
		return p, nil
	}
	var data [][]byte
	w := walker{p: &p, data: &data}
	w.walk(e, 0)
	return p, data
}

// ContentIDMap maps each attachment that has a Content-ID, as "<id>", to
// what name calls it: Mailgun's content-id-map (to a form field's name in
// a forward, to a URL in the API).
func (p Parsed) ContentIDMap(name func(Attachment) string) map[string]string {
	out := map[string]string{}
	for _, a := range p.Attachments {
		if a.ContentID != "" {
			out["<"+a.ContentID+">"] = name(a)
		}
	}
	return out
}

// headerPairs are the top fields in order, unfolded.
func headerPairs(raw []byte) [][2]string {
	end := len(raw)
	if i := bytes.Index(raw, []byte("\r\n\r\n")); i >= 0 {
		end = i + 2
	} else if i := bytes.Index(raw, []byte("\n\n")); i >= 0 {
		end = i + 1
	}
	var out [][2]string
	// The last field's value, in its lines: joined once the field ends,
	// so that a field folded over many lines costs its length, not its
	// length squared.
	var parts []string
	flush := func() {
		if len(parts) > 1 {
			out[len(out)-1][1] = strings.Join(parts, " ")
		}
		parts = parts[:0]
	}
	for _, line := range strings.SplitAfter(string(raw[:end]), "\n") {
		if line == "" || line == "\r\n" || line == "\n" {
			continue
		}
		if (line[0] == ' ' || line[0] == '\t') && len(out) > 0 {
			parts = append(parts, strings.TrimSpace(line))
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		flush()
		out = append(out, [2]string{strings.TrimSpace(name), strings.TrimSpace(value)})
		parts = append(parts, out[len(out)-1][1])
	}
	flush()
	return out
}

// walker visits a message's parts, counting them.
type walker struct {
	p     *Parsed
	parts int
	// visit, when set, is called with each attachment's body reader; it
	// returns true to stop the walk (Part uses it).
	visit func(a Attachment, body io.Reader) bool
	done  bool
	// data, when set, gets each attachment's decoded bytes (ParseAll).
	data *[][]byte
}

func (w *walker) walk(e *message.Entity, depth int) {
	if w.done || w.parts >= MaxParts || depth > MaxDepth {
		return
	}
	w.parts++
	if mr := e.MultipartReader(); mr != nil {
		for !w.done {
			part, err := mr.NextPart()
			if errors.Is(err, io.EOF) || (err != nil && part == nil) {
				return
			}
			w.walk(part, depth+1)
		}
		return
	}
	ct, params, _ := e.Header.ContentType()
	disp, dparams, _ := e.Header.ContentDisposition()
	name := dparams["filename"]
	if name == "" {
		name = params["name"]
	}
	isBody := disp != "attachment" && name == ""
	switch {
	case isBody && ct == "text/plain" && w.p.BodyPlain == "":
		w.p.BodyPlain = readText(e.Body)
		return
	case isBody && ct == "text/html" && w.p.BodyHTML == "":
		w.p.BodyHTML = readText(e.Body)
		return
	case isBody && (ct == "" || ct == "text/plain") && depth == 0 && w.p.BodyPlain == "":
		w.p.BodyPlain = readText(e.Body)
		return
	}
	a := Attachment{Index: len(w.p.Attachments) + 1, Filename: decoded(name), ContentType: ct,
		ContentID: strings.Trim(strings.TrimSpace(e.Header.Get("Content-Id")), "<>"), Inline: disp == "inline"}
	if a.ContentType == "" {
		a.ContentType = "text/plain"
	}
	if w.visit != nil && w.visit(a, e.Body) {
		w.done = true
		return
	}
	if w.data != nil {
		b, _ := io.ReadAll(e.Body)
		*w.data = append(*w.data, b)
		a.Size = int64(len(b))
	} else {
		a.Size, _ = io.Copy(io.Discard, e.Body)
	}
	w.p.Attachments = append(w.p.Attachments, a)
}

func readText(r io.Reader) string {
	b, _ := io.ReadAll(io.LimitReader(r, MaxBodyBytes))
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// Part returns attachment n (from 1) of a stored message and its decoded
// bytes; false when the message has no such part.
func Part(raw []byte, n int) (Attachment, []byte, bool) {
	e, _ := message.Read(bytes.NewReader(raw))
	if e == nil {
		return Attachment{}, nil, false
	}
	var p Parsed
	var found Attachment
	var body []byte
	ok := false
	w := walker{p: &p, visit: func(a Attachment, r io.Reader) bool {
		if a.Index != n {
			return false
		}
		body, _ = io.ReadAll(r)
		a.Size = int64(len(body))
		found, ok = a, true
		return true
	}}
	w.walk(e, 0)
	return found, body, ok
}
