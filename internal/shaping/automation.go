package shaping

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"time"
)

// Rule is one [["SECTION".automation]] entry: when a remote reply matches
// one of its patterns (Threshold times within its period, or at once),
// its actions apply to the site, or to the sending account at the site,
// for Duration.
type Rule struct {
	// ID names the rule by its content and section: it stays the same
	// across reloads while the rule is unchanged, so an action in force
	// can say which rule started it.
	ID string
	// Origin is the section the rule came from: default, provider "NAME"
	// or "DOMAIN".
	Origin string
	File   string
	Line   int
	// Regex are the patterns as written; any one matching is a match.
	Regex    []string
	Actions  []Action
	Duration time.Duration
	// Threshold, when set, is trigger = {Threshold="N/h"}: the actions
	// apply once N replies matched within the period. Unset means
	// "Immediate", every match.
	Threshold Rate
	// MatchInternal is match_internal: the rule may also match replies
	// Postline made up itself (a connection refused, a timeout); by
	// default only what the remote server said.
	MatchInternal bool

	matchers []matcher
}

// Matches reports whether reply, the remote server's answer on one line
// ("421 4.7.0 [TSS04] Messages from ... deferred"), matches the rule.
func (r Rule) Matches(reply string) bool {
	for _, m := range r.matchers {
		if m.match(reply) {
			return true
		}
	}
	return false
}

// String describes the rule on one line for operators.
func (r Rule) String() string {
	acts := make([]string, len(r.Actions))
	for i, a := range r.Actions {
		acts[i] = a.String()
	}
	pats := make([]string, len(r.Regex))
	for i, p := range r.Regex {
		pats[i] = "/" + p + "/"
	}
	s := fmt.Sprintf("%s for %s when a reply matches %s", strings.Join(acts, " + "), FormatDuration(r.Duration), strings.Join(pats, " or "))
	if r.Threshold.IsSet() {
		s += fmt.Sprintf(" %d times in %s", r.Threshold.Count, FormatDuration(r.Threshold.Per))
	}
	return s
}

// ActionKind is what a rule does.
type ActionKind string

// The actions Postline carries out. KumoMTA's others (SuspendCampaign,
// SetDomainConfig, Bounce, BounceTenant, BounceCampaign) load with a
// warning and are dropped.
const (
	// ActionSuspend holds every delivery to the site.
	ActionSuspend ActionKind = "Suspend"
	// ActionSuspendTenant holds the deliveries of the sending account (the
	// one whose reply matched) to the site.
	ActionSuspendTenant ActionKind = "SuspendTenant"
	// ActionSetConfig overrides one per-site key.
	ActionSetConfig ActionKind = "SetConfig"
)

// Action is one action of a rule.
type Action struct {
	Kind ActionKind
	// Name and Value are SetConfig's key and value in shaping-file notation.
	Name, Value string
	// Override is SetConfig's override, with only that key set; apply it
	// with Limits.With.
	Override Limits
}

// String is "Suspend", "SuspendTenant" or "SetConfig max_message_rate=1/min".
func (a Action) String() string {
	if a.Kind == ActionSetConfig {
		return fmt.Sprintf("SetConfig %s=%s", a.Name, a.Value)
	}
	return string(a.Kind)
}

// unsupportedActions are KumoMTA actions Postline does not carry out.
var unsupportedActions = map[string]bool{
	"SuspendCampaign": true, "Bounce": true, "BounceTenant": true, "BounceCampaign": true, "SetDomainConfig": true,
}

// matcher is one compiled pattern. neg, when set, is a leading negative
// lookahead ^(?!X) that Go's regexp lacks: the pattern matches when pos
// does and neg does not.
type matcher struct {
	pos, neg *regexp.Regexp
}

func (m matcher) match(s string) bool {
	return m.pos.MatchString(s) && (m.neg == nil || !m.neg.MatchString(s))
}

// errUnsupportedRegex marks patterns written for KumoMTA's fancy-regex
// that RE2 cannot run (lookaround other than a leading ^(?!...),
// backreferences): the rule is dropped with a warning, not a load error.
var errUnsupportedRegex = errors.New("uses syntax Go's regexp does not support")

// compilePattern compiles a KumoMTA pattern. A leading ^(?!X) becomes a
// second, negated pattern ^(?:X), which is exact because both are
// anchored at the start of the reply.
func compilePattern(p string) (matcher, error) {
	if strings.HasPrefix(p, "^(?!") {
		if end := closingParen(p, 1); end > 0 {
			neg, err := regexp.Compile("^(?:" + p[4:end] + ")")
			if err != nil {
				return matcher{}, patternError(p, err)
			}
			pos, err := regexp.Compile("^(?:" + p[end+1:] + ")")
			if err != nil {
				return matcher{}, patternError(p, err)
			}
			return matcher{pos: pos, neg: neg}, nil
		}
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return matcher{}, patternError(p, err)
	}
	return matcher{pos: re}, nil
}

func patternError(p string, err error) error {
	var se *syntax.Error
	if errors.As(err, &se) {
		lookbehind := strings.HasPrefix(se.Expr, "(?<=") || strings.HasPrefix(se.Expr, "(?<!")
		backref := se.Code == syntax.ErrInvalidEscape && len(se.Expr) == 2 && se.Expr[1] >= '1' && se.Expr[1] <= '9'
		if se.Code == syntax.ErrInvalidPerlOp || se.Code == syntax.ErrInvalidNamedCapture && lookbehind || backref {
			return fmt.Errorf("regex %q %w (%v)", p, errUnsupportedRegex, err)
		}
	}
	return fmt.Errorf("regex %q: %v", p, err)
}

// closingParen returns the index of the parenthesis closing the one at
// open, skipping escapes and character classes, or -1.
func closingParen(p string, open int) int {
	depth, inClass := 0, false
	for i := open; i < len(p); i++ {
		switch c := p[i]; {
		case c == '\\':
			i++
		case inClass:
			inClass = c != ']'
		case c == '[':
			inClass = true
		case c == '(':
			depth++
		case c == ')':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// ruleID hashes what makes a rule itself: where it is declared and what
// it says.
func ruleID(r Rule) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%q\x00", r.Origin, r.Regex)
	for _, a := range r.Actions {
		fmt.Fprintf(h, "%s\x00", a)
	}
	fmt.Fprintf(h, "%d\x00%s\x00%t", r.Duration, r.Threshold, r.MatchInternal)
	return hex.EncodeToString(h.Sum(nil)[:6])
}
