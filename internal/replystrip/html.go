package replystrip

import (
	"regexp"
	"strings"
)

// quoteMarkup finds the first element or marker that starts a quote in
// the markup of the common mail clients.
var quoteMarkup = regexp.MustCompile(`(?i)<blockquote[\s>]|<div[^>]*\bclass\s*=\s*["']?[^"'>]*\b(gmail_quote|gmail_extra|moz-cite-prefix|yahoo_quoted|OutlookMessageHeader)\b|<div[^>]*\bid\s*=\s*["']?(divRplyFwdMsg|appendonsend)\b|<hr[^>]*\bid\s*=\s*["']?stopSpelling|-{2,}\s*Original Message\s*-{2,}`)

// HTML strips an HTML reply: the markup before the first quote, trimmed
// of surrounding white space. Without a quote it is the whole input.
func HTML(s string) string {
	if len(s) > MaxInput {
		s = s[:MaxInput]
	}
	if loc := quoteMarkup.FindStringIndex(s); loc != nil {
		s = s[:loc[0]]
	}
	return strings.TrimSpace(s)
}
