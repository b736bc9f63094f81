package inboundroute

import (
	"fmt"
	"strings"
)

// call is one name(args...) of an expression or an action.
type call struct {
	name string
	at   int // byte offset of the name
	args []arg
}

// arg is a quoted string argument, with its keyword when written
// key="value" (store's notify).
type arg struct {
	key, value string
	at         int
}

// syntaxError is a parse failure at a byte offset of the text.
type syntaxError struct {
	at  int
	msg string
}

func (e *syntaxError) Error() string { return fmt.Sprintf("%s (at byte %d)", e.msg, e.at+1) }

func errAt(at int, format string, args ...any) error {
	return &syntaxError{at: at, msg: fmt.Sprintf(format, args...)}
}

// scanner reads the tokens of expressions and actions: names, "(", ")",
// ",", "=", quoted strings and the whitespace between them.
type scanner struct {
	s string
	i int
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func isWord(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

func (p *scanner) eof() bool { return p.i >= len(p.s) }

func (p *scanner) space() {
	for p.i < len(p.s) && isSpace(p.s[p.i]) {
		p.i++
	}
}

func (p *scanner) word() string {
	start := p.i
	for p.i < len(p.s) && isWord(p.s[p.i]) {
		p.i++
	}
	return p.s[start:p.i]
}

func (p *scanner) consume(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

// found describes what is at the cursor, for error messages.
func (p *scanner) found() string {
	if p.eof() {
		return "the end"
	}
	rest := p.s[p.i:]
	if len(rest) > 20 {
		rest = rest[:20] + "..."
	}
	return fmt.Sprintf("%q", rest)
}

// call reads name(arg, ...) after optional whitespace; what names the
// kind of call expected ("a filter", "an action") in errors.
func (p *scanner) call(what string) (call, error) {
	p.space()
	c := call{at: p.i}
	if c.name = p.word(); c.name == "" {
		return c, errAt(p.i, "expected %s, found %s", what, p.found())
	}
	p.space()
	if !p.consume('(') {
		return c, errAt(p.i, "expected ( after %s, found %s", c.name, p.found())
	}
	p.space()
	if p.consume(')') {
		return c, nil
	}
	for {
		a, err := p.arg(c.name)
		if err != nil {
			return c, err
		}
		c.args = append(c.args, a)
		p.space()
		switch {
		case p.consume(','):
			p.space()
		case p.consume(')'):
			return c, nil
		default:
			return c, errAt(p.i, "expected , or ) in %s(...), found %s", c.name, p.found())
		}
	}
}

// arg reads "value", 'value' or key="value".
func (p *scanner) arg(fn string) (arg, error) {
	a := arg{at: p.i}
	if !p.eof() && isWord(p.s[p.i]) {
		a.key = p.word()
		p.space()
		if !p.consume('=') {
			p.i = a.at
			return a, errAt(p.i, "the arguments of %s are quoted strings (\"...\" or '...'); found %s", fn, p.found())
		}
		p.space()
	}
	if p.eof() || (p.s[p.i] != '"' && p.s[p.i] != '\'') {
		return a, errAt(p.i, "the arguments of %s are quoted strings (\"...\" or '...'); found %s", fn, p.found())
	}
	v, err := p.str()
	a.value = v
	return a, err
}

// str reads a string quoted with " or '. A backslash before the enclosing
// quote gives the quote; any other backslash pair is kept as written, for
// the pattern or the capture references to read.
func (p *scanner) str() (string, error) {
	start, q := p.i, p.s[p.i]
	p.i++
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '\\' && p.i+1 < len(p.s) && p.s[p.i+1] == q:
			b.WriteByte(q)
			p.i += 2
		case c == '\\' && p.i+1 < len(p.s) && !isControl(p.s[p.i+1]):
			b.WriteString(p.s[p.i : p.i+2])
			p.i += 2
		case c == q:
			p.i++
			return b.String(), nil
		case isControl(c):
			return "", errAt(p.i, "a string may not hold control characters (line breaks, tabs ...)")
		default:
			b.WriteByte(c)
			p.i++
		}
	}
	return "", errAt(start, "the string that starts here has no closing %c", q)
}

func isControl(c byte) bool { return c < 0x20 || c == 0x7f }
