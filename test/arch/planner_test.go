package arch

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// root is the module's folder, from this package's (go test runs in it).
const root = "../.."

// maxPlannerLines keeps planner.go the list of the plan's passes and its
// types (issue 53): a pass grows in its own file.
const maxPlannerLines = 400

func TestPlannerFileIsItsPasses(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "pkg/planner/planner.go"))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(data, []byte("\n")); n > maxPlannerLines {
		t.Errorf("pkg/planner/planner.go has %d lines, more than %d: move the pass that grew into its own file", n, maxPlannerLines)
	}
}

// maxFuncLines is the longest a function of the product may be, its
// signature and closing brace counted, its doc comment not.
const maxFuncLines = 80

// longFuncs are the functions allowed over maxFuncLines, by package folder
// and name (Type.Method for a method), each with why. Only a flat table,
// read top to bottom as one list, belongs here.
var longFuncs = map[string]string{}

// TestNoLongFunctions: a function over maxFuncLines under pkg/ (tests
// aside) is one a reader cannot hold at once; split it into named steps,
// or, if it is one flat table, add it to longFuncs saying so.
func TestNoLongFunctions(t *testing.T) {
	fset := token.NewFileSet()
	seen := map[string]bool{}
	err := filepath.WalkDir(filepath.Join(root, "pkg"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(filepath.Dir(rel))
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
			if n <= maxFuncLines {
				continue
			}
			name := pkg + "." + funcName(fd)
			seen[name] = true
			if _, ok := longFuncs[name]; !ok {
				t.Errorf("%s:%d: %s is %d lines, more than %d: split it into named steps (or, if it is one flat table, add it to longFuncs saying so)",
					filepath.ToSlash(rel), fset.Position(fd.Pos()).Line, funcName(fd), n, maxFuncLines)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for name := range longFuncs {
		if !seen[name] {
			t.Errorf("longFuncs lists %s, which is no longer over %d lines (or no longer exists): remove it", name, maxFuncLines)
		}
	}
}

// funcName is fd's name, Type.Method for a method.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr: // a generic type's method
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}
