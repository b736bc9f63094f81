package inboundroute

import (
	"cmp"
	"fmt"
	"mime"
	"net/textproto"
	"regexp"
	"slices"
	"strings"

	"github.com/postline/postline/internal/apperr"
)

// Kind is what an action does.
type Kind string

// The kinds of action.
const (
	KindForward Kind = "forward"
	KindStore   Kind = "store"
	KindStop    Kind = "stop"
)

// Action is one thing to do with a received message for one recipient.
type Action struct {
	Kind Kind
	// URL is a forward's URL, Address a forward's address (one of them);
	// Notify is a store's notify URL ("" for none).
	URL, Address, Notify string
	// RouteID is the route the action is of (Route.ID).
	RouteID string
	// Format is the route's format for what a URL action posts
	// (FormatMailgun when the route has none).
	Format string
	// Skipped, when set, says why the action is not to run: its captures
	// made its destination invalid. Its URL, Address and Notify are "".
	Skipped string
}

// Header is a message's header as the receiving side has it;
// textproto.MIMEHeader is one (and mail.Header converts to one). Values
// is called with canonical keys (textproto.CanonicalMIMEHeaderKey).
type Header interface {
	Values(key string) []string
}

// Captures are the groups a route's patterns captured, numbered across
// its expression from 1.
type Captures struct {
	groups []string
}

// Group is capture n (from 1); "" when it did not take part.
func (c Captures) Group(n int) string {
	if n < 1 || n > len(c.groups) {
		return ""
	}
	return c.groups[n-1]
}

type filterKind int

const (
	recipientFilter filterKind = iota
	headerFilter
	catchAllFilter
)

// filter is one compiled filter of an expression.
type filter struct {
	kind   filterKind
	header string // canonical MIME key, for header filters
	re     *regexp.Regexp
	insts  int // re's size in RE2 instructions: its cost per byte
	offset int // captures of the filters before this one
}

// step is one compiled action.
type step struct {
	kind   Kind
	dest   destination // forward's
	notify *destination
}

// Route is a compiled route. ID and Priority are the caller's to set
// (Definition.Compile does): Actions carry the ID, Sort orders by
// Priority.
type Route struct {
	ID       string
	Priority int
	Format   string // carried into its Actions

	filters  []filter
	catchAll bool
	groups   int
	names    map[string]int
	steps    []step
	stops    bool
}

// Compile checks and compiles an expression and its actions; its errors
// are Invalid, naming "expression", "actions" or "actions[i]" (from 0).
func Compile(expression string, actions []string) (*Route, error) {
	r := &Route{names: map[string]int{}}
	if err := r.compileExpression(expression); err != nil {
		return nil, apperr.Field("expression", err.Error())
	}
	if len(actions) > MaxActions {
		return nil, apperr.Field("actions", fmt.Sprintf("A route may have at most %d actions.", MaxActions))
	}
	fe := apperr.FieldErrors{}
	for i, a := range actions {
		if err := r.compileAction(a); err != nil {
			fe.Add(fmt.Sprintf("actions[%d]", i), err.Error())
		}
	}
	if err := fe.Err(); err != nil {
		return nil, err
	}
	if len(r.steps) > MaxActions {
		return nil, apperr.Field("actions", fmt.Sprintf("A route may have at most %d actions, each destination of a forward counting as one; it has %d.",
			MaxActions, len(r.steps)))
	}
	return r, nil
}

func (r *Route) compileExpression(s string) error {
	switch {
	case strings.TrimSpace(s) == "":
		return fmt.Errorf(`The expression is required: match_recipient("REGEX"), match_header("HEADER", "REGEX") or catch_all(), joined by "and".`)
	case len(s) > MaxExpressionBytes:
		return fmt.Errorf("The expression may be at most %d bytes; it has %d.", MaxExpressionBytes, len(s))
	}
	p := &scanner{s: s}
	for {
		p.space()
		at := p.i
		if strings.EqualFold(p.word(), "not") {
			return errAt(at, `"not" is not supported (Mailgun's filters are joined by "and" only)`)
		}
		p.i = at
		c, err := p.call("a filter: match_recipient, match_header or catch_all")
		if err != nil {
			return err
		}
		if err := r.addFilter(c); err != nil {
			return err
		}
		p.space()
		if p.eof() {
			break
		}
		at = p.i
		switch w := p.word(); strings.ToLower(w) {
		case "and":
		case "or":
			return errAt(at, `"or" is not supported (Mailgun has only "and"): make a route for each alternative, or use | inside one pattern`)
		default:
			return errAt(at, `expected "and" between filters, found %s`, (&scanner{s: s, i: at}).found())
		}
	}
	if r.catchAll && len(r.filters) > 0 {
		return fmt.Errorf(`catch_all() stands alone: it matches when no earlier route matched, and is not joined with "and"`)
	}
	if len(r.filters) > MaxFilters {
		return fmt.Errorf("An expression may join at most %d filters.", MaxFilters)
	}
	return nil
}

// addFilter compiles one filter call into r.
func (r *Route) addFilter(c call) error {
	for _, a := range c.args {
		if a.key != "" {
			return errAt(a.at, "%s takes no named arguments", c.name)
		}
	}
	var f filter
	var pattern string
	switch c.name {
	case "match_recipient":
		if len(c.args) != 1 {
			return errAt(c.at, `match_recipient takes one pattern: match_recipient("REGEX")`)
		}
		pattern = c.args[0].value
	case "match_header":
		if len(c.args) != 2 {
			return errAt(c.at, `match_header takes a header name and a pattern: match_header("HEADER", "REGEX")`)
		}
		if !validHeaderName(c.args[0].value) {
			return errAt(c.args[0].at, "%q is not a header name (printable ASCII without spaces or colons, at most 100 bytes)", c.args[0].value)
		}
		f.kind, f.header, pattern = headerFilter, textproto.CanonicalMIMEHeaderKey(c.args[0].value), c.args[1].value
	case "catch_all":
		if len(c.args) != 0 {
			return errAt(c.at, "catch_all takes no arguments: catch_all()")
		}
		if r.catchAll {
			return errAt(c.at, "catch_all() is given twice")
		}
		r.catchAll = true
		return nil
	default:
		return errAt(c.at, "unknown filter %q: the filters are match_recipient, match_header and catch_all", c.name)
	}
	re, insts, err := compilePattern(pattern)
	if err != nil {
		return errAt(c.args[len(c.args)-1].at, "%s: %v", c.name, err)
	}
	if n := r.groups + re.NumSubexp(); n > MaxCaptures {
		return errAt(c.at, "the expression has %d captures, more than %d (the actions refer to \\1 to \\%d): "+
			"write (?:...) for a group that captures nothing", n, MaxCaptures, MaxCaptures)
	}
	f.re, f.insts, f.offset = re, insts, r.groups
	for i, name := range re.SubexpNames() {
		if name == "" {
			continue
		}
		if _, dup := r.names[name]; dup {
			return errAt(c.at, "the capture name %q is used twice", name)
		}
		r.names[name] = f.offset + i
	}
	r.groups += re.NumSubexp()
	r.filters = append(r.filters, f)
	return nil
}

func validHeaderName(s string) bool {
	if s == "" || len(s) > 100 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f || s[i] == ':' {
			return false
		}
	}
	return true
}

// compileAction compiles one action string into r's steps.
func (r *Route) compileAction(s string) error {
	if len(s) > MaxActionBytes {
		return fmt.Errorf("An action may be at most %d bytes; it has %d.", MaxActionBytes, len(s))
	}
	p := &scanner{s: s}
	c, err := p.call("an action: forward, store or stop")
	if err != nil {
		return err
	}
	p.space()
	if !p.eof() {
		return errAt(p.i, "one action a string: found %s after %s(...)", p.found(), c.name)
	}
	names := func(n string) (int, bool) { v, ok := r.names[n]; return v, ok }
	switch c.name {
	case "forward":
		if len(c.args) != 1 || c.args[0].key != "" {
			return errAt(c.at, `forward takes one destination: forward("https://...") or forward("someone@example.org")`)
		}
		for _, d := range strings.Split(c.args[0].value, ",") {
			t, err := parseTemplate(strings.TrimSpace(d), r.groups, names)
			if err != nil {
				return errAt(c.args[0].at, "forward: %v", err)
			}
			dest, err := newDestination(t, true)
			if err != nil {
				return errAt(c.args[0].at, "forward: %v", err)
			}
			r.steps = append(r.steps, step{kind: KindForward, dest: dest})
		}
	case "store":
		st := step{kind: KindStore}
		switch {
		case len(c.args) == 0:
		case len(c.args) == 1 && c.args[0].key == "notify":
			t, err := parseTemplate(strings.TrimSpace(c.args[0].value), r.groups, names)
			if err != nil {
				return errAt(c.args[0].at, "store: %v", err)
			}
			dest, err := newDestination(t, false)
			if err != nil {
				return errAt(c.args[0].at, "store: %v", err)
			}
			st.notify = &dest
		default:
			return errAt(c.at, `store takes nothing or a notify URL: store() or store(notify="https://...")`)
		}
		r.steps = append(r.steps, st)
	case "stop":
		if len(c.args) != 0 {
			return errAt(c.at, "stop takes no arguments: stop()")
		}
		r.steps, r.stops = append(r.steps, step{kind: KindStop}), true
	default:
		return errAt(c.at, "unknown action %q: the actions are forward, store and stop", c.name)
	}
	return nil
}

// DecidesOnRecipient reports that the route needs only the recipient
// (no match_header): the receiving side can decide at RCPT.
func (r *Route) DecidesOnRecipient() bool {
	for _, f := range r.filters {
		if f.kind == headerFilter {
			return false
		}
	}
	return true
}

// CatchAll reports a catch_all() route.
func (r *Route) CatchAll() bool { return r.catchAll }

// Stops reports that the route has stop(): no later route is evaluated
// after it matched.
func (r *Route) Stops() bool { return r.stops }

// MatchRecipient evaluates the route's match_recipient filters alone (a
// catch_all() route matches; see Evaluate). For a route that does not
// decide on the recipient, true means only that its headers decide.
func (r *Route) MatchRecipient(rcpt string) (bool, Captures) {
	return r.match(rcpt, nil, false, nil)
}

// MatchRecipientWithin is MatchRecipient with its work counted on m: once
// m is spent, nothing matches (see Meter).
func (r *Route) MatchRecipientWithin(rcpt string, m *Meter) (bool, Captures) {
	return r.match(rcpt, nil, false, m)
}

// Match evaluates every filter of the route against a recipient and the
// message's header (nil: no header, so match_header never matches).
func (r *Route) Match(rcpt string, h Header) (bool, Captures) {
	return r.match(rcpt, h, true, nil)
}

// match evaluates the filters, counting their work on m (nil: not
// counted).
func (r *Route) match(rcpt string, h Header, headers bool, m *Meter) (bool, Captures) {
	if len(rcpt) > MaxRecipientBytes {
		return false, Captures{}
	}
	caps := make([]string, r.groups)
	for _, f := range r.filters {
		var subject string
		var loc []int
		switch f.kind {
		case recipientFilter:
			subject, loc = rcpt, f.find(rcpt, m)
		case headerFilter:
			if !headers {
				continue
			}
			subject, loc = f.matchHeader(h, m)
		}
		if loc == nil {
			return false, Captures{}
		}
		for g := 1; 2*g+1 < len(loc); g++ {
			if loc[2*g] >= 0 {
				caps[f.offset+g-1] = subject[loc[2*g]:loc[2*g+1]]
			}
		}
	}
	return true, Captures{groups: caps}
}

// matchHeader matches the header's values, decoded, in order; the first
// that matches gives the captures.
func (f filter) matchHeader(h Header, m *Meter) (string, []int) {
	if h == nil {
		return "", nil
	}
	dec := new(mime.WordDecoder)
	values := h.Values(f.header)
	if len(values) > MaxHeaderValues {
		values = values[:MaxHeaderValues]
	}
	for _, v := range values {
		if d, err := dec.DecodeHeader(v); err == nil {
			v = d
		}
		if len(v) > MaxHeaderValueBytes {
			v = v[:MaxHeaderValueBytes]
		}
		if loc := f.find(v, m); loc != nil {
			return v, loc
		}
	}
	return "", nil
}

// find is the filter's match of s with its captures, nil for none. A
// value that does not match costs no captures: RE2 carries them along
// every thread, which multiplies the work by their number.
// Its work is counted on m first: nothing matches once m is spent.
func (f filter) find(s string, m *Meter) []int {
	cost := int64(f.insts) * int64(len(s)+1)
	if !m.charge(cost) || !f.re.MatchString(s) {
		return nil
	}
	if !m.charge(cost * int64(1+f.re.NumSubexp())) {
		return nil
	}
	return f.re.FindStringSubmatchIndex(s)
}

// Actions are the route's actions with the captures filled in, in the
// order written; one whose destination the captures made invalid is
// returned with Skipped set.
func (r *Route) Actions(c Captures) []Action {
	out := make([]Action, 0, len(r.steps))
	for _, s := range r.steps {
		a := Action{Kind: s.kind, RouteID: r.ID, Format: cmp.Or(r.Format, FormatMailgun)}
		switch {
		case s.kind == KindForward && s.dest.isURL:
			a.URL, a.Skipped = s.dest.fillURL(c)
		case s.kind == KindForward:
			a.Address, a.Skipped = s.dest.fillAddress(c)
		case s.kind == KindStore && s.notify != nil:
			a.Notify, a.Skipped = s.notify.fillURL(c)
		}
		out = append(out, a)
	}
	return out
}

// Sort orders routes by priority, lower first, keeping the given order
// (creation order, as the store lists them) among equal priorities.
func Sort(routes []*Route) {
	slices.SortStableFunc(routes, func(a, b *Route) int { return cmp.Compare(a.Priority, b.Priority) })
}

// Evaluate runs the routes, sorted by priority, for one recipient: every
// route that matches contributes its actions, until one with stop() has
// contributed its own (its Stop action among them). catch_all() matches
// when no earlier route matched. h may be nil when every route decides on
// the recipient.
func Evaluate(routes []*Route, rcpt string, h Header) []Action {
	return EvaluateWithin(routes, rcpt, h, nil)
}

// EvaluateWithin is Evaluate with the matching work counted on m (nil:
// not counted): once m is spent no further route matches, and the caller,
// seeing m.Spent(), refuses the message rather than act on a partial
// evaluation.
func EvaluateWithin(routes []*Route, rcpt string, h Header, m *Meter) []Action {
	var out []Action
	matched := false
	for _, r := range routes {
		var caps Captures
		if r.catchAll {
			if matched {
				continue
			}
		} else {
			var ok bool
			if ok, caps = r.match(rcpt, h, true, m); !ok {
				continue
			}
		}
		matched = true
		out = append(out, r.Actions(caps)...)
		if r.stops {
			break
		}
	}
	return out
}
