package message

import (
	"fmt"
	"mime"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxFilename is the longest filename kept, in bytes: the limit of common
// file systems, and short enough that its RFC 2231 form fits one line.
const maxFilename = 255

// SanitizeFilename returns name fit to be offered to a recipient: the last
// element of a '/' or '\' path, without control characters, bidirectional
// controls (which disguise extensions, "txt.exe" shown as "exe.txt") or
// invalid UTF-8, without surrounding spaces or trailing dots, at most 255
// bytes with the extension kept, and "attachment" when nothing is left.
func SanitizeFilename(name string) string {
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	name = strings.Map(func(r rune) rune {
		if r == utf8.RuneError || unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			return -1
		}
		return r
	}, name)
	name = strings.TrimRight(strings.TrimSpace(name), ". ")
	if len(name) > maxFilename {
		ext := path.Ext(name)
		if len(ext) > 16 {
			ext = ""
		}
		stem := name[:len(name)-len(ext)]
		for len(stem)+len(ext) > maxFilename {
			_, size := utf8.DecodeLastRuneInString(stem)
			stem = stem[:len(stem)-size]
		}
		name = stem + ext
	}
	if name == "" {
		return "attachment"
	}
	return name
}

// attachmentFields are the header fields of an attachment part. Non-ASCII
// names go out twice, as most mail software writes them: RFC 2231
// (filename*= with percent-encoded UTF-8) in Content-Disposition, which
// current clients read, and an RFC 2047 encoded word in Content-Type's name,
// which old Outlook versions read instead.
func attachmentFields(a Attachment) ([]string, error) {
	name := SanitizeFilename(a.Filename)
	mediaType, charset := attachmentType(a.ContentType)
	ctParams := map[string]string{"name": name}
	if !isASCII(name) {
		ctParams["name"] = mime.BEncoding.Encode("utf-8", name)
	}
	if charset != "" {
		ctParams["charset"] = charset
	}
	ct := mime.FormatMediaType(mediaType, ctParams)
	disposition := "attachment"
	if a.ContentID != "" {
		disposition = "inline"
	}
	cd := mime.FormatMediaType(disposition, map[string]string{"filename": name})
	if ct == "" || cd == "" {
		return nil, fmt.Errorf("message: cannot format the headers of attachment %q", name)
	}
	f := fieldList{
		{"Content-Type", ct, "attachments"},
		{"Content-Disposition", cd, "attachments"},
		{"Content-Transfer-Encoding", "base64", ""},
	}
	if a.ContentID != "" {
		if !ValidContentID(a.ContentID) {
			return nil, fmt.Errorf("message: Content-ID %q of %q is not printable ASCII without <, > or spaces", a.ContentID, name)
		}
		f = append(f, field{"Content-ID", "<" + a.ContentID + ">", ""})
	}
	return f.format()
}

// attachmentType returns the media type to declare for a declared
// Content-Type. Attachments are base64, which RFC 2046 forbids for
// multipart/* and message/*, so those (like anything unparsable) become
// application/octet-stream. A charset is kept when it is UTF-8 or US-ASCII,
// the only ones go-message writes; others are dropped rather than refused.
func attachmentType(declared string) (mediaType, charset string) {
	mt, params, err := mime.ParseMediaType(declared)
	if err != nil || !strings.Contains(mt, "/") ||
		strings.HasPrefix(mt, "multipart/") || strings.HasPrefix(mt, "message/") {
		return "application/octet-stream", ""
	}
	switch cs := strings.ToLower(params["charset"]); cs {
	case "utf-8", "us-ascii":
		return mt, cs
	}
	return mt, ""
}

// ValidContentID says whether id can be written as <id> in a Content-ID:
// printable ASCII without angle brackets, spaces or quotes.
func ValidContentID(id string) bool {
	if id == "" || len(id) > 200 {
		return false
	}
	for _, c := range id {
		if c <= ' ' || c > '~' || c == '<' || c == '>' || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
