package delivery

import (
	"strconv"
	"strings"
	"time"
)

// maxRetryHint caps RetryAfter: a server asking for more than a day is more
// likely garbled than meant, and the retry policy has its own maximum age.
const maxRetryHint = 24 * time.Hour

// retryWords introduce a retry delay: "try again in 5 minutes", "retry
// after 60 seconds", "please wait 30s", "greylisted for 300 seconds",
// "come back in 2 min", "resend in 1 hour".
var retryWords = map[string]bool{
	"retry": true, "again": true, "wait": true, "after": true, "resend": true,
	"back": true, "later": true, "greylisted": true, "greylisting": true,
	"graylisted": true, "graylisting": true,
}

// units maps a time unit word to its duration.
var units = map[string]time.Duration{
	"s": time.Second, "sec": time.Second, "secs": time.Second, "second": time.Second, "seconds": time.Second,
	"m": time.Minute, "min": time.Minute, "mins": time.Minute, "minute": time.Minute, "minutes": time.Minute,
	"h": time.Hour, "hr": time.Hour, "hrs": time.Hour, "hour": time.Hour, "hours": time.Hour,
}

// RetryAfter returns the delay a temporary reply asks for, parsed from its
// text ("try again in 60 seconds", "retry after 5 minutes", "wait 30s"):
// the first number with a time unit that follows one of the words retry,
// again, wait, after, resend, back, later or greylisted within three words.
// It returns 0 for permanent errors, for replies without such a hint (most:
// "try again later" gives no number), and caps the hint at 24 hours. The
// retry policy decides what to do with it (typically: not before).
func (e *Error) RetryAfter() time.Duration {
	if e == nil || !e.Temporary {
		return 0
	}
	toks := tokens(e.Message)
	last := -10 // index of the last trigger word
	for i, tok := range toks {
		if retryWords[tok] {
			last = i
			continue
		}
		if i-last > 3 {
			continue
		}
		n, unit, ok := quantity(tok, toks, i)
		if !ok {
			continue
		}
		d := time.Duration(n * float64(unit))
		if d <= 0 {
			return 0
		}
		return min(d, maxRetryHint)
	}
	return 0
}

// tokens lowercases s and splits it into words of letters, digits and dots,
// without a trailing dot (the end of a sentence).
func tokens(s string) []string {
	f := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.')
	})
	for i, t := range f {
		f[i] = strings.TrimRight(t, ".")
	}
	return f
}

// quantity parses toks[i] as a number with its unit, either joined ("30s",
// "5min") or in the next token ("30 seconds").
func quantity(tok string, toks []string, i int) (float64, time.Duration, bool) {
	end := strings.IndexFunc(tok, func(r rune) bool { return r != '.' && (r < '0' || r > '9') })
	num, suffix := tok, ""
	if end >= 0 {
		num, suffix = tok[:end], tok[end:]
	}
	n, err := strconv.ParseFloat(num, 64)
	if num == "" || err != nil {
		return 0, 0, false
	}
	if suffix == "" && i+1 < len(toks) {
		suffix = toks[i+1]
	}
	unit, ok := units[suffix]
	return n, unit, ok
}
