package bounce

import (
	"regexp"
	"strings"

	"github.com/emersion/go-message/textproto"
)

var (
	addrRe = regexp.MustCompile(`[A-Za-z0-9._%+'=-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+`)
	subjRe = regexp.MustCompile(`(?i)undeliver|delivery status notification|failure notice|returned mail|delivery fail|mail delivery failed|could not be delivered|non-?delivery|delayed mail|delivery delayed`)
)

// Phrases of the message as a whole. Lower-case.
var (
	bouncePhrases = []string{"qmail-send program", "mail delivery software", "this is the mail system at host",
		"could not be delivered", "delivery has failed", "permanent error", "address(es) failed",
		"following addresses had permanent fatal errors"}
	permanentPhrases = []string{"permanent error", "permanent failure", "permanent fatal error", "given up", "delivery has failed"}
	delayPhrases     = []string{"will be retried", "will retry", "still trying", "will continue", "delayed",
		"not yet been delivered", "temporary failure"}
	originalMarkers = []string{"--- below this line is a copy of the message", "------ this is a copy of",
		"original message headers", "----- original message", "-----original message-----",
		"--- the header of the original message", "----- transcript of session follows"}
	daemons = []string{"mailer-daemon", "postmaster", "mail-daemon", "mailerdaemon"}
)

// textReports applies the heuristics for bounces without a delivery-status
// part (qmail, Exim, Postfix, older Exchange): see the package documentation.
func textReports(top textproto.Header, text string) []Report {
	text = notification(text) // a copy of the original says nothing about its fate
	lower := strings.ToLower(text)
	if !looksLikeBounce(top, lower) {
		return []Report{}
	}
	kind := Kind("")
	switch {
	case containsAny(lower, permanentPhrases):
		kind = KindPermanent
	case containsAny(lower, delayPhrases) || containsAny(strings.ToLower(top.Get("Subject")), delayPhrases):
		kind = KindTemporary
	}
	out := []Report{}
	index := map[string]int{}
	for _, b := range recipientBlocks(text) {
		status, diag := codeOf(b.lines)
		if i, ok := index[b.addr]; ok { // Exchange lists a recipient twice
			if out[i].Status == "" {
				out[i].Status, out[i].DiagnosticCode = status, diag
			}
			continue
		}
		if len(out) == MaxRecipients {
			break
		}
		index[b.addr] = len(out)
		out = append(out, Report{Recipient: b.addr, Status: status, DiagnosticCode: diag})
	}
	if len(out) == 0 {
		for _, a := range findAddresses(top.Get("X-Failed-Recipients")) {
			if len(out) < MaxRecipients {
				out = append(out, Report{Recipient: a})
			}
		}
	}
	if len(out) == 0 {
		out = append(out, Report{Kind: KindUnknown})
	}
	status, diag := codeOf(strings.Split(text, "\n"))
	for i := range out {
		if out[i].Status == "" {
			out[i].Status, out[i].DiagnosticCode = status, diag
		}
		if out[i].Kind == "" {
			out[i].Kind = textKind(kind)
		}
	}
	return out
}

// textKind is the message-level verdict, else permanent: a text bounce that
// does not read as a delay warning returns a message that was given up on,
// whatever the class of the last reply (as Action: failed does in a DSN).
func textKind(message Kind) Kind {
	if message != "" {
		return message
	}
	return KindPermanent
}

func looksLikeBounce(top textproto.Header, lowerText string) bool {
	if top.Has("X-Failed-Recipients") || subjRe.MatchString(clip(top.Get("Subject"))) {
		return true
	}
	from := strings.ToLower(headerAddress(top.Get("From")))
	for _, d := range daemons {
		if strings.HasPrefix(from, d+"@") {
			return true
		}
	}
	return containsAny(lowerText, bouncePhrases)
}

type block struct {
	addr  string
	lines []string // the rest of the recipient line, then the lines below it
}

// recipientBlocks finds the lines that start with a recipient address and
// the lines below each, up to a blank line, stopping where the copy of the
// original message begins.
func recipientBlocks(text string) []block {
	var out []block
	var cur *block
	for line := range strings.Lines(text) {
		line = strings.TrimRight(line, "\r\n")
		t := strings.ToLower(strings.TrimSpace(line))
		if hasAnyPrefix(t, originalMarkers) || len(out) > MaxRecipients*2 {
			break
		}
		if addr, rest, ok := recipientLine(line); ok {
			out = append(out, block{addr: addr, lines: []string{rest}})
			cur = &out[len(out)-1]
		} else if t == "" {
			cur = nil
		} else if cur != nil && len(cur.lines) < 50 {
			cur.lines = append(cur.lines, line)
		}
	}
	return out
}

// recipientLine reports whether line starts a recipient block: "<a>: ...",
// "a: ...", "a (...)" at the start of a line, or a line that is only an
// address (Exim indents it). An indented "<a>: ..." continues the line above
// (Postfix wraps its replies that way).
func recipientLine(line string) (addr, rest string, ok bool) {
	indented := strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t")
	t := strings.TrimSpace(line)
	bracketed := strings.HasPrefix(t, "<")
	t = strings.TrimPrefix(t, "<")
	loc := addrRe.FindStringIndex(t)
	if loc == nil || loc[0] != 0 {
		return "", "", false
	}
	addr, rest = clip(strings.ToLower(t[:loc[1]])), t[loc[1]:]
	if bracketed {
		if !strings.HasPrefix(rest, ">") {
			return "", "", false
		}
		rest = rest[1:]
	}
	rest = strings.TrimSpace(rest)
	switch {
	case rest == "":
		return addr, "", true
	case indented:
		return "", "", false
	case rest[0] == ':':
		return addr, strings.TrimSpace(rest[1:]), true
	case rest[0] == '(':
		return addr, rest, true
	}
	return "", "", false
}
