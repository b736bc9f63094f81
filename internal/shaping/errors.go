package shaping

import (
	"fmt"
	"strings"
)

// FileError is a shaping file that cannot be used: which file, the line
// and key at fault (when known), and why. A reload that fails with one
// keeps the rules in force.
type FileError struct {
	Path string
	Line int    // 1-based; 0 when unknown
	Key  string // e.g. "comcast.net".automation[1].regex; "" for syntax errors without one
	Err  error
}

func (e *FileError) Error() string {
	var b strings.Builder
	b.WriteString("shaping: ")
	b.WriteString(e.Path)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Key != "" {
		b.WriteString(": ")
		b.WriteString(e.Key)
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *FileError) Unwrap() error { return e.Err }

// keyPath writes a key path as TOML would, quoting the parts that are not
// bare keys ("comcast.net", "my source") and appending element indexes
// ("[1]") to the part before them.
func keyPath(parts ...string) string {
	var b strings.Builder
	for i, p := range parts {
		if strings.HasPrefix(p, "[") {
			b.WriteString(p)
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		if isBareKey(p) {
			b.WriteString(p)
		} else {
			fmt.Fprintf(&b, "%q", p)
		}
	}
	return b.String()
}

func isBareKey(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
