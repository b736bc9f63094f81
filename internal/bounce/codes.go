package bounce

import (
	"html"
	"regexp"
	"strings"
)

var (
	// enhancedRe finds an RFC 3463 failure code not inside a longer dotted
	// number such as an IP address.
	enhancedRe = regexp.MustCompile(`(?:^|[^0-9.])([45]\.[0-9]{1,3}\.[0-9]{1,3})(?:[^0-9.]|\.[^0-9]|\.?$)`)
	// replyRe finds an RFC 5321 failure reply code: "550 ", "550-", "#550".
	replyRe  = regexp.MustCompile(`(?:^|[^0-9.])([45][0-9][0-9])(?:[ -]|$)`)
	statusRe = regexp.MustCompile(`^[245]\.[0-9]{1,3}\.[0-9]{1,3}`)
	msgIDRe  = regexp.MustCompile(`(?i)\bmessage-id:\s*(<[^<>\s]{1,900}>)`)
	tagRe    = regexp.MustCompile(`<[^>]*>`)
	blockRe  = regexp.MustCompile(`(?i)<(?:br|/?p|/?div|/?tr|/?pre|/?li)\b[^>]*>`)
	skipRe   = regexp.MustCompile(`(?is)<(?:head|style|script)\b.*?</(?:head|style|script)>`)
)

// codeOf returns the status and diagnostic found in lines: the first
// enhanced code (or a reply code as X.0.0), and the reply from its code on
// with the more-indented lines that continue it (else the line holding the
// enhanced code).
func codeOf(lines []string) (status, diag string) {
	for i, l := range lines {
		if m := enhancedRe.FindStringSubmatch(l); m != nil && status == "" {
			status = m[1]
			if diag == "" && !replyRe.MatchString(l) {
				diag = clip(strings.TrimSpace(l))
			}
		}
		if m := replyRe.FindStringSubmatchIndex(l); m != nil && !strings.HasPrefix(diag, "smtp; ") {
			d := strings.TrimSpace(l[m[2]:])
			for _, c := range lines[i+1:] {
				if indent(c) <= indent(l) || len(d) > MaxFieldLen {
					break
				}
				d += " " + strings.TrimSpace(c)
			}
			if e := enhancedRe.FindStringSubmatch(d); status == "" && e != nil {
				status = e[1]
			} else if status == "" {
				status = l[m[2]:m[2]+1] + ".0.0"
			}
			diag = clip("smtp; " + strings.TrimRight(d, " #"))
		}
		if strings.HasPrefix(diag, "smtp; ") {
			break
		}
	}
	return status, diag
}

// notification returns text up to the copy of the original message.
func notification(text string) string {
	i := 0
	for line := range strings.Lines(text) {
		if hasAnyPrefix(strings.ToLower(strings.TrimSpace(line)), originalMarkers) {
			return text[:i]
		}
		i += len(line)
	}
	return text
}

// originalID returns the Message-ID of the copy of the original message
// that text bounces append below a marker line.
func originalID(text string) string {
	i := 0
	for line := range strings.Lines(text) {
		i += len(line)
		if hasAnyPrefix(strings.ToLower(strings.TrimSpace(line)), originalMarkers[:3]) {
			if m := msgIDRe.FindStringSubmatch(text[i:]); m != nil {
				return m[1]
			}
			return ""
		}
	}
	return ""
}

func indent(s string) int { return len(s) - len(strings.TrimLeft(s, " \t")) }

// enhancedCode returns the leading enhanced status code of a Status value
// such as "5.1.1 (bad destination mailbox)".
func enhancedCode(v string) string { return statusRe.FindString(strings.TrimSpace(v)) }

// statusFromText returns the failure status found in a reply text.
func statusFromText(v string) string {
	s, _ := codeOf([]string{v})
	return s
}

func findAddresses(v string) []string {
	var out []string
	for _, a := range addrRe.FindAllString(clip(v), MaxRecipients) {
		out = append(out, strings.ToLower(a))
	}
	return out
}

// stripTags turns an HTML body into rough text: enough to find addresses
// and codes in Exchange notifications that come without a text part.
// Source line breaks are spaces in HTML; block tags become line breaks.
func stripTags(s string) string {
	s = skipRe.ReplaceAllString(strings.ReplaceAll(s, "\n", " "), "")
	s = blockRe.ReplaceAllString(s, "\n")
	return html.UnescapeString(tagRe.ReplaceAllString(s, ""))
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
