package suppression

import (
	"strings"
	"unicode/utf8"
)

// BounceReason is the description a bounce entry keeps: the receiving
// server's reply that put the address on the list (event.Reply's text),
// made valid UTF-8 without NULs and cut to MaxDescription characters, so
// that it reads like any description; nil when there is none.
func BounceReason(reply string) *string {
	r := strings.ToValidUTF8(strings.ReplaceAll(strings.TrimSpace(reply), "\x00", ""), "\uFFFD")
	if r == "" {
		return nil
	}
	if utf8.RuneCountInString(r) > MaxDescription {
		r = string([]rune(r)[:MaxDescription-1]) + "…"
	}
	return &r
}
