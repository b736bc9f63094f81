package inboundroute

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/postline/postline/internal/emailaddr"
)

// piece is literal text or, when group > 0, a capture (numbered across
// the expression; named ones are resolved to their number).
type piece struct {
	lit   string
	group int
}

// template is an action's destination with its capture references.
type template []piece

// groupNames resolves \g<name> to a capture number; ok is false for a
// name the expression does not have.
type groupNames func(name string) (n int, ok bool)

// parseTemplate reads \1..\99, \g<N>, \g<name> and \\ in s; groups is how
// many captures the expression has.
func parseTemplate(s string, groups int, names groupNames) (template, error) {
	var t template
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			t = append(t, piece{lit: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			lit.WriteByte(s[i])
			continue
		}
		if i+1 == len(s) {
			return nil, errors.New(`a lone \ ends the text; write \\ for a backslash`)
		}
		var n int
		switch c := s[i+1]; {
		case c == '\\':
			lit.WriteByte('\\')
			i++
			continue
		case c >= '1' && c <= '9':
			j := i + 2
			if j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			n, _ = strconv.Atoi(s[i+1 : j])
			i = j - 1
		case c == 'g':
			end := strings.IndexByte(s[i:], '>')
			if !strings.HasPrefix(s[i:], `\g<`) || end < 0 {
				return nil, errors.New(`\g must be followed by <name> or <number>`)
			}
			ref := s[i+3 : i+end]
			if v, err := strconv.Atoi(ref); err == nil {
				n = v
			} else if v, ok := names(ref); ok {
				n = v
			} else {
				return nil, fmt.Errorf(`\g<%s> names no capture of the expression`, ref)
			}
			i += end
		default:
			return nil, fmt.Errorf(`unknown escape \%c: use \1 to \99 or \g<name> for a capture, \\ for a backslash`, c)
		}
		if n < 1 || n > groups {
			return nil, fmt.Errorf("capture %d does not exist: the expression has %d", n, groups)
		}
		flush()
		t = append(t, piece{group: n})
	}
	flush()
	return t, nil
}

func (t template) hasCaptures() bool {
	for _, p := range t {
		if p.group > 0 {
			return true
		}
	}
	return false
}

// fill joins the pieces with each capture passed through escape.
func (t template) fill(c Captures, escape func(string) string) string {
	var b strings.Builder
	for _, p := range t {
		if p.group > 0 {
			b.WriteString(escape(c.Group(p.group)))
		} else {
			b.WriteString(p.lit)
		}
	}
	return b.String()
}

// sample is the template with every capture as "x": what it checks at
// compile time.
func (t template) sample() string { return t.fill(Captures{}, func(string) string { return "x" }) }

// destination is a forward's target or a store's notify URL.
type destination struct {
	tpl   template
	isURL bool
}

// newDestination checks a destination as the package documents: an http
// or https URL whose scheme and host hold no capture, or (when an address
// is allowed) an address whose domain holds none.
func newDestination(t template, addressOK bool) (destination, error) {
	sample := t.sample()
	lower := strings.ToLower(sample)
	switch {
	case strings.HasPrefix(lower, "http://") || strings.HasPrefix(lower, "https://"):
		if err := checkURL(sample); err != nil {
			return destination{}, err
		}
		if t.hasCaptures() && (t[0].group > 0 || !authorityEnds(t[0].lit)) {
			return destination{}, errors.New("a capture may not stand in the URL's scheme or host (a sender would choose where mail goes)")
		}
		return destination{tpl: t, isURL: true}, nil
	case !addressOK:
		return destination{}, errors.New("the notify URL must be an absolute http or https URL")
	case strings.Contains(sample, "@"):
		lastAt := -1
		for i, p := range t {
			if p.group == 0 && strings.Contains(p.lit, "@") {
				lastAt = i
			}
		}
		for _, p := range t[lastAt+1:] {
			if p.group > 0 {
				return destination{}, errors.New("a capture may not stand in the address's domain (a sender would choose where mail goes)")
			}
		}
		if err := checkAddress(sample); err != nil {
			return destination{}, err
		}
		return destination{tpl: t}, nil
	}
	return destination{}, errors.New("a forward destination is an absolute http or https URL or an email address")
}

// authorityEnds reports whether a URL's literal start holds its whole
// scheme and host: a /, ? or # follows "://" and the host.
func authorityEnds(lit string) bool {
	_, rest, ok := strings.Cut(lit, "://")
	return ok && strings.ContainsAny(rest, "/?#")
}

// fillURL is the URL with its captures percent-encoded, or why the action
// is skipped.
func (d destination) fillURL(c Captures) (string, string) {
	u := d.tpl.fill(c, escapeCapture)
	if err := checkURL(u); err != nil {
		return "", "with its captures the URL is refused: " + err.Error()
	}
	return u, ""
}

// fillAddress is the address with its captures, or why the action is
// skipped.
func (d destination) fillAddress(c Captures) (string, string) {
	a := d.tpl.fill(c, func(s string) string { return s })
	if err := checkAddress(a); err != nil {
		shown := a
		if len(shown) > 100 {
			shown = shown[:100] + "..."
		}
		return "", fmt.Sprintf("with its captures the address %q is refused: %v", shown, err)
	}
	return a, ""
}

// checkURL accepts an absolute http or https URL of printable ASCII
// within MaxURLBytes.
func checkURL(s string) error {
	if len(s) > MaxURLBytes {
		return fmt.Errorf("a URL may be at most %d bytes", MaxURLBytes)
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f || strings.IndexByte(`"<>\^`+"`"+`{|}`, s[i]) >= 0 {
			return errors.New("a URL may hold only printable ASCII without spaces, quotes, <, >, \\, ^, `, {, | or } (percent-encode the rest)")
		}
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" {
		return errors.New("the URL must be an absolute http or https URL")
	}
	return nil
}

// checkAddress accepts an address that needs no quoting, comments or
// literal: one that every mail system takes as it is.
func checkAddress(s string) error {
	a, err := emailaddr.Parse(s)
	if err != nil || !a.Strict() || a.Literal {
		return errors.New("not a plain email address (local@domain, no quotes, comments or IP literal)")
	}
	return nil
}

// escapeCapture percent-encodes every byte but the unreserved ones
// (RFC 3986: letters, digits, - . _ ~), so that a capture stays data in
// any part of a URL: no new segment, parameter, fragment or header.
func escapeCapture(s string) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	return b.String()
}
