package storetest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestConformanceCoversEveryStore fails when internal/store has a store
// the suite does not exercise, so that a new store file without
// conformance cases fails CI instead of the README's claim going stale.
//
// A store is what internal/store constructs: each exported func New* in
// its non-test files and the type it returns. Reached code is every
// function of this package (its non-test files) that Run or RunEvents
// calls, directly or through other functions of the package. The test
// checks, by reading the source (go/parser, no type checking):
//   - every store's constructor is called as store.NewX in reached code;
//   - every exported method of every store type is called by name
//     (x.Method(...)) in reached code, unless listed in notCalled below
//     with the reason. Names are matched without types, so a method that
//     shares its name with another store's tested method (List, Delete,
//     Get...) passes unnoticed: the check catches new names, not every
//     gap.
//
// It does not judge whether the assertions are good ones.
func TestConformanceCoversEveryStore(t *testing.T) {
	stores, methods := storeAPI(t, filepath.Join("..", "store"))
	if len(stores) < 10 {
		t.Fatalf("found %d store constructors in internal/store; the parser is not reading what it should", len(stores))
	}
	ctors, called := reachedCalls(t, ".", "Run", "RunEvents")
	for ctor, typ := range stores {
		if !ctors[ctor] {
			t.Errorf("store.%s (%s) is never called by code that storetest.Run or RunEvents reaches: add its conformance cases", ctor, typ)
		}
	}
	for typ, ms := range methods {
		for _, m := range ms {
			why, excused := notCalled[typ+"."+m]
			switch {
			case excused && called[m]:
				t.Errorf("%s.%s is listed in notCalled (%q) but is now called: take it off the list", typ, m, why)
			case !excused && !called[m]:
				t.Errorf("%s.%s is never called by the suite: add a case that checks it", typ, m)
			}
		}
	}
	for k := range notCalled {
		typ, m, _ := strings.Cut(k, ".")
		if !slices.Contains(methods[typ], m) {
			t.Errorf("notCalled lists %s, which is not a method of a store", k)
		}
	}
}

// notCalled lists store methods the suite does not call, with the reason.
var notCalled = map[string]string{}

// storeAPI reads dir's non-test files: constructor name → returned type,
// and each returned type's exported methods.
func storeAPI(t *testing.T, dir string) (map[string]string, map[string][]string) {
	t.Helper()
	files := parseDir(t, dir)
	stores := map[string]string{}
	all := map[string][]string{}
	for _, f := range files {
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || !fn.Name.IsExported() {
				continue
			}
			if fn.Recv == nil {
				if strings.HasPrefix(fn.Name.Name, "New") && fn.Type.Results != nil && len(fn.Type.Results.List) == 1 {
					if typ := typeName(fn.Type.Results.List[0].Type); typ != "" {
						stores[fn.Name.Name] = typ
					}
				}
				continue
			}
			if typ := typeName(fn.Recv.List[0].Type); typ != "" {
				all[typ] = append(all[typ], fn.Name.Name)
			}
		}
	}
	methods := map[string][]string{}
	for _, typ := range stores {
		methods[typ] = all[typ]
	}
	return stores, methods
}

// typeName is T for T or *T, "" otherwise.
func typeName(e ast.Expr) string {
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// reachedCalls walks the package in dir from the named functions through
// calls of its own top-level functions, and returns the store.New* called
// and the names of every method called (x.Name(...)) on the way.
func reachedCalls(t *testing.T, dir string, roots ...string) (ctors, methods map[string]bool) {
	t.Helper()
	funcs := map[string]*ast.FuncDecl{}
	for _, f := range parseDir(t, dir) {
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Body != nil {
				funcs[fn.Name.Name] = fn
			}
		}
	}
	for _, r := range roots {
		if funcs[r] == nil {
			t.Fatalf("no func %s in %s", r, dir)
		}
	}
	ctors, methods = map[string]bool{}, map[string]bool{}
	seen := map[string]bool{}
	queue := slices.Clone(roots)
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		if seen[name] {
			continue
		}
		seen[name] = true
		ast.Inspect(funcs[name].Body, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.Ident: // a call, or a function passed as a value
				if funcs[x.Name] != nil {
					queue = append(queue, x.Name)
				}
			case *ast.CallExpr:
				if sel, ok := x.Fun.(*ast.SelectorExpr); ok {
					if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "store" {
						ctors[sel.Sel.Name] = true
					}
					methods[sel.Sel.Name] = true
				}
			}
			return true
		})
	}
	return ctors, methods
}

func parseDir(t *testing.T, dir string) []*ast.File {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no Go files in %s: %v", dir, err)
	}
	fset := token.NewFileSet()
	var out []*ast.File
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, f)
	}
	return out
}
