package replystrip

import (
	"regexp"
	"strings"
)

// Stripped is a reply's text cut apart.
type Stripped struct {
	// Text is the new text: above the quote, without the signature.
	Text string
	// Signature is the signature block after "-- " ("" when none).
	Signature string
}

// MaxInput bounds the text examined; past it, the rest is treated as the
// quote (a reply's new text is at the top).
const MaxInput = 1 << 20

var (
	// attribution is an "On <date>, <name> wrote:" line, or its end when
	// it wraps; a few languages' forms are included.
	attributionEnd = regexp.MustCompile(`(?i)((wrote|a écrit|escribió|scrisse|schreef|skrev)\s*|\bschrieb\b[^:]*):\s*$`)
	attributionOn  = regexp.MustCompile(`(?i)^(On|Am|Le|El|Il|Op|Den|På)\s`)
	dashedMarker   = regexp.MustCompile(`(?i)^-{2,}\s*(Original Message|Forwarded message|Ursprüngliche Nachricht|Message d'origine)\s*-{2,}`)
	outlookFrom    = regexp.MustCompile(`(?i)^\*?(From|Von|De)\s*:\*?\s`)
	outlookSent    = regexp.MustCompile(`(?i)^\*?(Sent|Date|Gesendet|Envoyé)\s*:`)
	outlookTo      = regexp.MustCompile(`(?i)^\*?(To|Subject|An|Betreff|À|Objet)\s*:`)
	underscores    = regexp.MustCompile(`^_{10,}\s*$`)
)

// Text strips a plain-text reply.
func Text(s string) Stripped {
	if len(s) > MaxInput {
		s = s[:MaxInput]
	}
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
	lines := strings.Split(s, "\n")
	cut := quoteStart(lines)
	body := lines[:cut]
	text, sig := body, []string(nil)
	for i := len(body) - 1; i >= 0; i-- {
		if l := strings.TrimRight(body[i], " \t"); l == "--" || body[i] == "-- " {
			text, sig = body[:i], body[i+1:]
			break
		}
	}
	return Stripped{Text: trimBlank(text), Signature: trimBlank(sig)}
}

// quoteStart is the index of the first line of the quote (len(lines)
// when there is none).
func quoteStart(lines []string) int {
	// The last line that is neither blank nor quoted: a ">" line after
	// it is quoted to the end. Found once, so that many ">" lines above
	// new text cost one pass, not one pass each.
	lastUnquoted := -1
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" && !strings.HasPrefix(l, ">") {
			lastUnquoted = i
			break
		}
	}
	for i, raw := range lines {
		l := strings.TrimSpace(raw)
		switch {
		case l == "":
			continue
		case attributionEnd.MatchString(l) && !strings.HasPrefix(l, ">"):
			// A wrapped attribution: "On ... <name>" then "wrote:".
			if i > 0 && !attributionOn.MatchString(l) && attributionOn.MatchString(strings.TrimSpace(lines[i-1])) {
				return i - 1
			}
			return i
		case attributionOn.MatchString(l) && i+1 < len(lines) && attributionEnd.MatchString(strings.TrimSpace(lines[i+1])):
			return i
		case dashedMarker.MatchString(l):
			return i
		case underscores.MatchString(l) && i+1 < len(lines) && outlookFrom.MatchString(strings.TrimSpace(lines[i+1])):
			return i
		case outlookFrom.MatchString(l) && outlookBlock(lines[i+1:]):
			return i
		case strings.HasPrefix(l, ">") && i > lastUnquoted:
			// Quoted to the end (an interleaved reply has new text
			// between quotes, and keeps them).
			return i
		}
	}
	return len(lines)
}

// outlookBlock reports that the lines after a "From:" line carry the rest
// of Outlook's header block: a Sent: or Date: and a To: or Subject:
// within the next four lines.
func outlookBlock(next []string) bool {
	sent, to := false, false
	for i := 0; i < len(next) && i < 4; i++ {
		l := strings.TrimSpace(next[i])
		sent = sent || outlookSent.MatchString(l)
		to = to || outlookTo.MatchString(l)
	}
	return sent && to
}

// trimBlank joins lines without the blank ones at either end, and
// without trailing spaces on the last.
func trimBlank(lines []string) string {
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	return strings.Join(lines, "\n")
}
