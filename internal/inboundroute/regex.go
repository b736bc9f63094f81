package inboundroute

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
)

// compilePattern compiles a filter's pattern as the package documents:
// Python's spellings that RE2 reads otherwise translated or refused,
// matched from the start of the value, case-insensitive, and bounded in
// compiled size; n is that size in RE2 instructions (what a match costs
// per byte, Meter).
func compilePattern(pattern string) (re *regexp.Regexp, n int, err error) {
	translated, err := fromPython(pattern)
	if err != nil {
		return nil, 0, err
	}
	// Alone first: a pattern such as "a)|(b" must not close the group
	// it is wrapped in below.
	if _, err := syntax.Parse(translated, syntax.Perl); err != nil {
		return nil, 0, explainRE2(err)
	}
	full := `(?i)^(?:` + translated + `)`
	parsed, err := syntax.Parse(full, syntax.Perl)
	if err != nil {
		return nil, 0, explainRE2(err)
	}
	prog, err := syntax.Compile(parsed.Simplify())
	if err != nil {
		return nil, 0, explainRE2(err)
	}
	if n := len(prog.Inst); n > MaxProgram {
		return nil, 0, fmt.Errorf("the pattern compiles to %d RE2 instructions, more than %d: simplify it "+
			"(each repeat of a counted repetition such as {1,500} counts)", n, MaxProgram)
	}
	re, err = regexp.Compile(full)
	return re, len(prog.Inst), err
}

// explainRE2 words a parse error of Go's regexp package for the route's
// author, who may have written it for Python.
func explainRE2(err error) error {
	var se *syntax.Error
	if !errors.As(err, &se) {
		return fmt.Errorf("the pattern is not a valid RE2 regular expression: %v", err)
	}
	hint := ""
	switch se.Code {
	case syntax.ErrInvalidRepeatOp:
		hint = " (possessive quantifiers such as *+ are not supported)"
	case syntax.ErrInvalidPerlOp:
		hint = " (RE2 has no (?x) verbose mode and no inline flags other than i, m, s and U)"
	case syntax.ErrInvalidRepeatSize:
		hint = " (a counted repetition repeats at most 1000 times)"
	case syntax.ErrLarge, syntax.ErrNestingDepth:
		hint = " (the pattern is too large)"
	}
	return fmt.Errorf("the pattern is not a valid RE2 regular expression: %s: `%s`%s", se.Code, se.Expr, hint)
}

// unsupported are Python constructs RE2 lacks, by how they start after
// "(?", with what to tell the author.
var unsupported = []struct{ prefix, what string }{
	{"=", "lookahead (?=...)"},
	{"!", "negative lookahead (?!...)"},
	{"<=", "lookbehind (?<=...)"},
	{"<!", "negative lookbehind (?<!...)"},
	{"P=", "named backreferences (?P=name)"},
	{">", "atomic groups (?>...)"},
	{"(", "conditionals (?(id)yes|no)"},
	{"#", "comments (?#...)"},
}

// fromPython rewrites the Python spellings RE2 would read differently
// (\Z, {,n}) and refuses, by name, those it cannot run.
func fromPython(p string) (string, error) {
	var b strings.Builder
	inClass := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\' && i+1 < len(p):
			n := p[i+1]
			switch {
			case !inClass && n >= '1' && n <= '9':
				return "", fmt.Errorf("backreference \\%c: not supported; patterns are RE2, which has no backreferences", n)
			case !inClass && n == 'Z':
				b.WriteString(`\z`)
			default:
				b.WriteString(p[i : i+2])
			}
			i++
		case inClass:
			inClass = c != ']'
			b.WriteByte(c)
		case c == '[':
			inClass = true
			b.WriteByte(c)
			// A ] first in a class (after an optional ^) is a literal.
			if i+1 < len(p) && p[i+1] == '^' {
				b.WriteByte('^')
				i++
			}
			if i+1 < len(p) && p[i+1] == ']' {
				b.WriteByte(']')
				i++
			}
		case c == '(' && strings.HasPrefix(p[i:], "(?"):
			for _, u := range unsupported {
				if strings.HasPrefix(p[i+2:], u.prefix) {
					return "", fmt.Errorf("%s: not supported; patterns are RE2, which has no lookaround, backreferences, atomic groups, conditionals or comments", u.what)
				}
			}
			b.WriteByte(c)
		case c == '{' && emptyMin(p[i:]):
			b.WriteString("{0")
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// emptyMin reports a repetition {,n} at the start of s.
func emptyMin(s string) bool {
	if len(s) < 4 || s[1] != ',' {
		return false
	}
	j := 2
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		j++
	}
	return j > 2 && j < len(s) && s[j] == '}'
}
