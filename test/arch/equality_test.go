package arch

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// jsonHome is the one home of the equality of JSON values (issue 53): four
// walks with four rules grew in classify, planner, report and predict
// before it.
const jsonHome = "pkg/jsonvalue"

// restartHome is --restart-stale, one feature the stages call: it was a
// restart.go in six packages.
const restartHome = "pkg/restart"

// productFiles parses every non-test Go file under pkg/, keyed by its path
// from the module's root.
func productFiles(t *testing.T) map[string]*ast.File {
	t.Helper()
	out := map[string]*ast.File{}
	fset := token.NewFileSet()
	err := filepath.WalkDir("../../pkg", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		out[filepath.ToSlash(strings.TrimPrefix(path, "../../"))] = f
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 100 {
		t.Fatalf("read %d files under pkg/: the check read nothing", len(out))
	}
	return out
}

func inPackage(path, pkg string) bool { return filepath.Dir(path) == pkg }

// TestOneJSONEquality: outside jsonHome, no function compares two JSON
// values by its own walk: none that takes two values of any type and
// answers a bool calls itself or a reflective DeepEqual.
func TestOneJSONEquality(t *testing.T) {
	for path, f := range productFiles(t) {
		if inPackage(path, jsonHome) {
			continue
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil || !comparesTwoValues(fn.Type) {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				switch callee := call.Fun.(type) {
				case *ast.Ident:
					if callee.Name == fn.Name.Name && fn.Recv == nil {
						t.Errorf("%s: %s walks two JSON values by itself; compare them with %s", path, fn.Name.Name, jsonHome)
					}
				case *ast.SelectorExpr:
					if callee.Sel.Name == "DeepEqual" {
						t.Errorf("%s: %s compares two JSON values with a reflective DeepEqual; compare them with %s", path, fn.Name.Name, jsonHome)
					}
				}
				return true
			})
		}
	}
}

// comparesTwoValues reports whether ft is func(a, b interface{}) bool (or
// any).
func comparesTwoValues(ft *ast.FuncType) bool {
	if ft.Results == nil || len(ft.Results.List) != 1 || len(ft.Results.List[0].Names) > 1 {
		return false
	}
	if id, ok := ft.Results.List[0].Type.(*ast.Ident); !ok || id.Name != "bool" {
		return false
	}
	n := 0
	for _, p := range ft.Params.List {
		if !anyType(p.Type) {
			return false
		}
		n += max(len(p.Names), 1)
	}
	return n == 2
}

func anyType(e ast.Expr) bool {
	switch t := e.(type) {
	case *ast.Ident:
		return t.Name == "any"
	case *ast.InterfaceType:
		return len(t.Methods.List) == 0
	}
	return false
}

// TestJSONEqualityIsALeaf: every stage may compare JSON values, so their
// home depends on no package of the module.
func TestJSONEqualityIsALeaf(t *testing.T) {
	have, ok := deps(t)[jsonHome]
	if !ok {
		t.Fatalf("go list does not know %s", jsonHome)
	}
	for _, d := range have {
		t.Errorf("%s depends on %s; it must stay a leaf every stage may import", jsonHome, d)
	}
}

// TestRestartStaleIsOnePackage: --restart-stale lives in restartHome,
// which knows none of the stages that call it (the planner marks restarts
// with it, the verb's apply step patches them) or sit above it; no other
// package grows a restart*.go of its own.
func TestRestartStaleIsOnePackage(t *testing.T) {
	for path := range productFiles(t) {
		if strings.HasPrefix(filepath.Base(path), "restart") && !inPackage(path, restartHome) {
			t.Errorf("%s: --restart-stale's code belongs in %s, which the stages call", path, restartHome)
		}
	}
	have, ok := deps(t)[restartHome]
	if !ok {
		t.Fatalf("go list does not know %s", restartHome)
	}
	stages := []string{"pkg/planner", "pkg/apply", "pkg/verb", "pkg/cli", "pkg/savedplan", "pkg/render", "pkg/report", "pkg/gate", "pkg/watch"}
	for _, d := range have {
		for _, c := range stages {
			if d == c || strings.HasPrefix(d, c+"/") {
				t.Errorf("%s depends on %s, a stage that calls it or sits above it", restartHome, d)
			}
		}
	}
}

// TestOneTableOfDestructiveKinds: the guard's policy and the planner's
// retention pass read the one table of destructive kinds (classify) instead
// of listing the kinds again.
func TestOneTableOfDestructiveKinds(t *testing.T) {
	readers := []struct{ pkg, fn string }{{"pkg/guard", "guardedKinds"}, {"pkg/planner", "retention"}}
	files := productFiles(t)
	for _, r := range readers {
		found, reads := false, false
		for path, f := range files {
			if !inPackage(path, r.pkg) {
				continue
			}
			for _, decl := range f.Decls {
				fn, ok := decl.(*ast.FuncDecl)
				if !ok || fn.Name.Name != r.fn || fn.Body == nil {
					continue
				}
				found = true
				// A row of the table handed in, or the table read.
				ast.Inspect(fn, func(n ast.Node) bool {
					if sel, ok := n.(*ast.SelectorExpr); ok {
						if x, ok := sel.X.(*ast.Ident); ok && x.Name == "classify" && strings.HasPrefix(sel.Sel.Name, "Destructive") {
							reads = true
						}
					}
					return true
				})
			}
		}
		switch {
		case !found:
			t.Errorf("%s has no function %s: a rule about a function that is gone checks nothing; name the one that reads the kinds", r.pkg, r.fn)
		case !reads:
			t.Errorf("%s.%s reads no row of classify.DestructiveKinds: the destructive kinds are one table", r.pkg, r.fn)
		}
	}
}
