package templates

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mailgun/raymond/v2/ast"

	"github.com/postline/postline/internal/apperr"
)

// builtins are the helpers a {{name}} may call instead of printing a
// variable.
var builtins = []string{"if", "unless", "each", "with", "lookup", "log", "equal"}

// walker collects what Compile needs from a parsed part: the variables a
// strict template must be given, the {{value}} count and any partial.
type walker struct {
	paths      []string
	statements int
	partial    bool
	// guarded are the conditions of the enclosing if/unless blocks: a
	// variable tested there may be missing.
	guarded []string
}

func (w *walker) program(p *ast.Program, top bool) {
	if p == nil {
		return
	}
	for _, n := range p.Body {
		switch n := n.(type) {
		case *ast.MustacheStatement:
			w.statements++
			if path := n.Expression.FieldPath(); top && path != nil && len(n.Expression.Params) == 0 && !slices.Contains(builtins, n.Expression.HelperName()) {
				w.add(path)
			}
		case *ast.BlockStatement:
			w.block(n, top)
		case *ast.PartialStatement:
			w.partial = true
		}
	}
}

func (w *walker) block(n *ast.BlockStatement, top bool) {
	name := n.Expression.HelperName()
	switch name {
	case "if", "unless":
		guard := ""
		if len(n.Expression.Params) == 1 {
			if p, ok := n.Expression.Params[0].(*ast.PathExpression); ok {
				guard = p.Original
			}
		}
		w.guarded = append(w.guarded, guard)
		w.program(n.Program, top)
		w.program(n.Inverse, top)
		w.guarded = w.guarded[:len(w.guarded)-1]
	default: // each, with and unknown blocks change the context
		if top && len(n.Expression.Params) > 0 {
			if p, ok := n.Expression.Params[0].(*ast.PathExpression); ok {
				w.add(p)
			}
		}
		w.program(n.Program, false)
		w.program(n.Inverse, top)
	}
}

func (w *walker) add(p *ast.PathExpression) {
	if p.Data || p.Depth > 0 || p.Original == "this" || p.Original == "." || strings.HasPrefix(p.Original, "this.") {
		return
	}
	path := strings.Join(p.Parts, ".")
	for _, g := range w.guarded {
		if g == path || strings.HasPrefix(path, g+".") {
			return
		}
	}
	if path != "" && !slices.Contains(w.paths, path) {
		w.paths = append(w.paths, path)
	}
}

// checkPartials refuses partials: a template is one self-contained text.
func checkPartials(w *walker, field string) error {
	if w.partial {
		return apperr.Field(field, fmt.Sprintf("The %s template uses a partial ({{> name}}); partials are not supported.", field))
	}
	return nil
}
