package attach

import (
	"fmt"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxNameBytes bounds a sanitised name; most file systems allow 255.
const maxNameBytes = 200

// fallbackName replaces names that sanitise to nothing.
const fallbackName = "attachment"

// SanitizeName returns a file name that is safe to extract anywhere: the
// base name only (after "/" or "\"), valid UTF-8, without control or
// invisible format characters (such as U+202E, which can disguise
// "exe.pdf"), with the characters Windows forbids (<>:"|?*) replaced by
// "_", without ".." runs, leading spaces or trailing dots and spaces, not a
// Windows device name (CON, NUL, COM1, ...), and at most 200 bytes (the
// extension is kept). A name left empty becomes "attachment".
func SanitizeName(name string) string {
	name = strings.ToValidUTF8(name, "_")
	name = name[strings.LastIndexAny(name, `/\`)+1:]
	name = strings.Map(func(r rune) rune {
		switch {
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
			return -1
		case strings.ContainsRune(`<>:"|?*`, r):
			return '_'
		}
		return r
	}, name)
	for strings.Contains(name, "..") {
		name = strings.ReplaceAll(name, "..", ".")
	}
	name = strings.TrimRight(strings.TrimLeftFunc(name, unicode.IsSpace), ". \u00a0")
	if name == "" || name == "." {
		return fallbackName
	}
	if reservedDevice(name) {
		name = "_" + name
	}
	if len(name) > maxNameBytes {
		ext := path.Ext(name)
		if len(ext) > 20 {
			ext = ""
		}
		name = truncate(name[:len(name)-len(ext)], maxNameBytes-len(ext)) + ext
	}
	return name
}

// truncate cuts s to at most n bytes at a rune boundary.
func truncate(s string, n int) string {
	for len(s) > n {
		_, size := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-size]
	}
	return s
}

func reservedDevice(name string) bool {
	base, _, _ := strings.Cut(strings.ToUpper(name), ".")
	base = strings.TrimRight(base, " ")
	switch base {
	case "CON", "PRN", "AUX", "NUL":
		return true
	}
	return len(base) == 4 && (strings.HasPrefix(base, "COM") || strings.HasPrefix(base, "LPT")) &&
		base[3] >= '1' && base[3] <= '9'
}

// namer hands out unique archive entry names. Names compare
// case-insensitively, because Windows and macOS extract "A.pdf" and
// "a.pdf" to the same file.
type namer map[string]bool

// unique returns name, or the first free "stem (n).ext" with n >= 2.
func (u namer) unique(name string) string {
	cand := name
	stem, ext := splitExt(name)
	for n := 2; u[strings.ToLower(cand)]; n++ {
		cand = fmt.Sprintf("%s (%d)%s", stem, n, ext)
	}
	u[strings.ToLower(cand)] = true
	return cand
}

// splitExt splits "a.pdf" into "a" and ".pdf"; a name that is all
// extension (".env") is all stem.
func splitExt(name string) (stem, ext string) {
	ext = path.Ext(name)
	if ext == name {
		return name, ""
	}
	return name[:len(name)-len(ext)], ext
}
