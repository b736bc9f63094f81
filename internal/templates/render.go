package templates

import (
	"cmp"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/mailgun/raymond/v2"
	"github.com/mailgun/raymond/v2/parser"

	"github.com/postline/postline/internal/apperr"
)

// Rendering bounds. Handlebars has no limits of its own: {{#each}} over a
// long list inside another can produce gigabytes from a small template, so
// the loop helper counts what it produces and stops past these.
const (
	MaxOutputBytes = 2 << 20 // one rendered part
	maxIterations  = 100_000 // {{#each}} bodies evaluated, all parts together
	// maxExpansion bounds what the plain {{value}} statements alone can
	// produce: their count times the longest value, checked before
	// rendering (HTML escaping makes a value up to 6 times longer).
	maxExpansion = 16 << 20
)

// Compiled is a template's three parts, parsed once.
type Compiled struct {
	// Name is what errors call the template ("" for a request's own
	// subject, text and html rendered with variables).
	Name                string
	subject, html, text *raymond.Template
	// paths are the variables each part uses outside blocks that change
	// the context (each, with), for strict templates.
	paths []string
	// statements counts the {{value}} statements of all parts.
	statements int
	// size estimates the memory the parts hold: their sources and their
	// tokens (tokenBytes each).
	size    int
	Strict  bool
	timeout time.Duration // RenderTimeout unless a test sets it
}

// Rendered is a template's output for one set of variables.
type Rendered struct {
	Subject, HTML, Text string
}

// budgetKey names the per-render budget in raymond's private data; a
// template cannot name it (@-variables are identifiers).
const budgetKey = "postline budget"

type budget struct {
	iterations int
	bytes      int
	deadline   time.Time
}

var (
	errBudget   = errors.New("budget")
	errDeadline = errors.New("deadline")
)

// check panics past the render's deadline: every block helper and every loop
// iteration calls it, so a render past its time stops itself.
func (b *budget) check() {
	if b != nil && time.Now().After(b.deadline) {
		panic(errDeadline)
	}
}

func budgetOf(options *raymond.Options) *budget {
	b, _ := options.Data(budgetKey).(*budget)
	return b
}

// Compile parses the parts. A syntax error is a 422 naming the part.
func Compile(subject, html, text string, strict bool) (*Compiled, error) {
	c := &Compiled{Strict: strict}
	for _, p := range []struct {
		field string
		src   string
		dst   **raymond.Template
	}{{"subject", subject, &c.subject}, {"html", html, &c.html}, {"text", text, &c.text}} {
		if p.src == "" {
			continue
		}
		if len(p.src) > MaxPartBytes {
			return nil, apperr.Field(p.field, fmt.Sprintf("The %s template must be at most %d bytes.", p.field, MaxPartBytes))
		}
		tokens, err := precheck(p.src, p.field)
		if err != nil {
			return nil, err
		}
		c.size += len(p.src) + tokens*tokenBytes
		prog, err := parser.Parse(p.src)
		if err != nil {
			return nil, apperr.Field(p.field, fmt.Sprintf("The %s template does not parse: %s", p.field, cleanErr(err)))
		}
		w := walker{}
		w.program(prog, true)
		if err := checkPartials(&w, p.field); err != nil {
			return nil, err
		}
		tpl, err := raymond.Parse(p.src)
		if err != nil {
			return nil, apperr.Field(p.field, fmt.Sprintf("The %s template does not parse: %s", p.field, cleanErr(err)))
		}
		tpl.RegisterHelpers(map[string]any{"each": eachHelper, "if": ifHelper, "unless": unlessHelper, "with": withHelper,
			"log": func(string) string { return "" }})
		*p.dst = tpl
		c.statements += w.statements
		for _, path := range w.paths {
			if !slices.Contains(c.paths, path) {
				c.paths = append(c.paths, path)
			}
		}
	}
	return c, nil
}

// Render fills the parts with vars. The HTML part escapes values ({{{raw}}}
// does not); the subject and text parts get them as they are, the subject
// on one line. It stops after RenderTimeout.
func (c *Compiled) Render(vars map[string]any) (Rendered, error) {
	return c.RenderBefore(vars, time.Time{})
}

// RenderBefore is Render with a deadline (zero: RenderTimeout from now),
// for renders that share one: a batch's recipients together.
func (c *Compiled) RenderBefore(vars map[string]any, deadline time.Time) (Rendered, error) {
	if vars == nil {
		vars = map[string]any{}
	}
	if c.Strict {
		for _, p := range c.paths {
			if !has(vars, p) {
				return Rendered{}, apperr.Field("variables", fmt.Sprintf("The template is strict and the variable %q is missing.", p))
			}
		}
	}
	if longest := longestValue(reflect.ValueOf(vars)); c.statements*6*longest > maxExpansion {
		return Rendered{}, apperr.Field("variables", fmt.Sprintf("The template could render more than %d bytes with these variables (%d statements, a value of %d bytes).",
			maxExpansion, c.statements, longest))
	}
	if deadline.IsZero() {
		deadline = time.Now().Add(cmp.Or(c.timeout, RenderTimeout))
	}
	b := &budget{deadline: deadline}
	var out Rendered
	var err error
	if out.HTML, err = c.exec(c.html, vars, b, "html"); err != nil {
		return out, err
	}
	plain := unescaped(vars).(map[string]any)
	if out.Text, err = c.exec(c.text, plain, b, "text"); err != nil {
		return out, err
	}
	if out.Subject, err = c.exec(c.subject, plain, b, "subject"); err != nil {
		return out, err
	}
	out.Subject = oneLine(out.Subject)
	return out, nil
}

// tooSlow is the answer for a render stopped at its deadline.
func (c *Compiled) tooSlow() error {
	limit := cmp.Or(c.timeout, RenderTimeout)
	if c.Name == "" {
		return apperr.Field("variables", fmt.Sprintf("The subject, text and html rendered with these variables took longer than %s, the limit of a render.", limit))
	}
	return apperr.Field("template", fmt.Sprintf("The template %s took longer than %s to render with these variables, the limit of a render.", c.Name, limit))
}

func (c *Compiled) exec(t *raymond.Template, vars any, b *budget, field string) (string, error) {
	if t == nil {
		return "", nil
	}
	data := raymond.NewDataFrame()
	data.Set(budgetKey, b)
	s, err := t.ExecWith(vars, data)
	switch {
	case errors.Is(err, errDeadline):
		return "", c.tooSlow()
	case errors.Is(err, errBudget):
		return "", apperr.Field("variables", fmt.Sprintf("The %s part renders more than %d bytes or %d loop iterations with these variables.",
			field, MaxOutputBytes, maxIterations))
	case err != nil:
		return "", apperr.Field("variables", fmt.Sprintf("The %s part cannot be rendered: %s", field, cleanErr(err)))
	case len(s) > MaxOutputBytes:
		return "", apperr.Field("variables", fmt.Sprintf("The %s part renders to %d bytes, more than %d.", field, len(s), MaxOutputBytes))
	}
	return s, nil
}

// eachHelper is Handlebars' each (arrays in order, objects by sorted key,
// @index @key @first @last, {{else}} when empty) with the render's budget.
func eachHelper(ctx any, options *raymond.Options) any {
	if !raymond.IsTrue(ctx) {
		return options.Inverse()
	}
	b := budgetOf(options)
	var sb strings.Builder
	body := func(item any, i, n int, key any) {
		if b != nil {
			b.check()
			if b.iterations++; b.iterations > maxIterations {
				panic(errBudget)
			}
		}
		data := options.NewDataFrame()
		data.Set("index", i)
		data.Set("key", key)
		data.Set("first", i == 0)
		data.Set("last", i == n-1)
		s := options.FnCtxData(item, data)
		if b != nil {
			if b.bytes += len(s); b.bytes > MaxOutputBytes {
				panic(errBudget)
			}
		}
		sb.WriteString(s)
	}
	v := reflect.ValueOf(ctx)
	switch v.Kind() {
	case reflect.Array, reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			body(v.Index(i).Interface(), i, v.Len(), i)
		}
	case reflect.Map:
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
		for i, k := range keys {
			body(v.MapIndex(k).Interface(), i, len(keys), k.Interface())
		}
	}
	return sb.String()
}

// ifHelper, unlessHelper and withHelper are Handlebars' (raymond's,
// includeZero too) with the render's deadline checked.
func ifHelper(cond any, options *raymond.Options) any {
	budgetOf(options).check()
	if includedZero(options) || raymond.IsTrue(cond) {
		return options.Fn()
	}
	return options.Inverse()
}

func unlessHelper(cond any, options *raymond.Options) any {
	budgetOf(options).check()
	if includedZero(options) || raymond.IsTrue(cond) {
		return options.Inverse()
	}
	return options.Fn()
}

func withHelper(ctx any, options *raymond.Options) any {
	budgetOf(options).check()
	if raymond.IsTrue(ctx) {
		return options.FnWith(ctx)
	}
	return options.Inverse()
}

// includedZero is raymond's includeZero=true with a first parameter of 0.
func includedZero(options *raymond.Options) bool {
	on, _ := options.HashProp("includeZero").(bool)
	n, isInt := options.Param(0).(int)
	return on && isInt && n == 0
}

// unescaped marks every string as safe, so the text and subject parts
// print values as given. JSON gives maps, slices and scalars only.
func unescaped(v any) any {
	switch x := v.(type) {
	case string:
		return raymond.SafeString(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = unescaped(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = unescaped(e)
		}
		return out
	}
	return v
}

// longestValue is the most one {{value}} can print: the longest string,
// or the whole of a list (lists print their items one after another).
func longestValue(v reflect.Value) int {
	switch v.Kind() {
	case reflect.Interface, reflect.Pointer:
		return longestValue(v.Elem())
	case reflect.String:
		return v.Len()
	case reflect.Slice:
		n, m := 0, 0
		for i := 0; i < v.Len(); i++ {
			l := longestValue(v.Index(i))
			n, m = n+l, max(m, l)
		}
		return max(n, m)
	case reflect.Map:
		m := 0
		for _, k := range v.MapKeys() {
			m = max(m, longestValue(v.MapIndex(k)))
		}
		return m
	}
	return 24 // numbers and booleans
}

// oneLine makes a rendered subject header-safe: line breaks and other
// control characters from variables become spaces.
func oneLine(s string) string {
	return strings.TrimSpace(strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s))
}

// has resolves a dotted path in vars.
func has(vars map[string]any, path string) bool {
	var cur any = vars
	for _, part := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return false
		}
		if cur, ok = m[part]; !ok {
			return false
		}
	}
	return true
}

func cleanErr(err error) string {
	s := err.Error()
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
