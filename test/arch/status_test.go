package arch

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"
)

// statusFile is the status action (issue 53): readable beside helm's
// pkg/action/status.go, its stage work in the stages — strays and the
// inventory in live, the drift model in classify, a workload's health in
// watch, journals and Leases in releasestate.
const statusFile = "../../pkg/verb/status.go"

// statusLimits: the action's size, and the longest function a verb file
// may hold (a longer one is stage work or several steps in one).
const (
	statusMaxLines = 200
	verbMaxFunc    = 80
)

// statusPending are declarations of status.go that issue 53 moves to
// releasestate on another branch (target selection, branch relstate): left
// out of the count while every one of them is still declared. Once that
// move lands, one of them is gone: the whole file counts, and the test
// asks for this list to be emptied.
var statusPending = []string{"statusTarget", "readTargets", "readApplyMethods", "statusTargets", "statusTargetOf", "hookIDs"}

func parseStatus(t *testing.T) (*token.FileSet, *ast.File) {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, statusFile, nil, parser.ParseComments)
	if err != nil {
		t.Fatalf("parsing %s: %v", statusFile, err)
	}
	return fset, f
}

// declName is the name of a top-level declaration: a function's, a
// method's, or a type's or constant's of a one-name declaration.
func declName(d ast.Decl) string {
	switch d := d.(type) {
	case *ast.FuncDecl:
		return d.Name.Name
	case *ast.GenDecl:
		if len(d.Specs) != 1 {
			return ""
		}
		switch s := d.Specs[0].(type) {
		case *ast.TypeSpec:
			return s.Name.Name
		case *ast.ValueSpec:
			return s.Names[0].Name
		}
	}
	return ""
}

// declLines is how many lines d takes with its doc comment.
func declLines(fset *token.FileSet, d ast.Decl) int {
	start := d.Pos()
	switch d := d.(type) {
	case *ast.FuncDecl:
		if d.Doc != nil {
			start = d.Doc.Pos()
		}
	case *ast.GenDecl:
		if d.Doc != nil {
			start = d.Doc.Pos()
		}
	}
	return fset.Position(d.End()).Line - fset.Position(start).Line + 1
}

// TestStatusIsAnAction: status.go stays the action, at most statusMaxLines
// lines (blank lines between declarations included).
func TestStatusIsAnAction(t *testing.T) {
	fset, f := parseStatus(t)
	lines := fset.File(f.Pos()).LineCount()
	pending := map[string]bool{}
	for _, n := range statusPending {
		pending[n] = true
	}
	exempt := 0
	for _, d := range f.Decls {
		if n := declName(d); pending[n] {
			exempt += declLines(fset, d) + 1 // and the blank line before it
			delete(pending, n)
		}
	}
	if len(pending) == 0 {
		lines -= exempt
	}
	for n := range pending {
		t.Errorf("%s declares no %s: the move statusPending waits for has landed; empty statusPending, so the whole file counts", statusFile, n)
	}
	if lines > statusMaxLines {
		t.Errorf("%s is %d lines (beside what statusPending leaves out), over %d: its stage work belongs to the stages (live, classify, watch, releasestate)", statusFile, lines, statusMaxLines)
	}
}

// TestStatusFunctionsShort: no function of status.go over verbMaxFunc
// lines (doc comment left out).
func TestStatusFunctionsShort(t *testing.T) {
	fset, f := parseStatus(t)
	funcs := 0
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok {
			continue
		}
		funcs++
		if n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1; n > verbMaxFunc {
			t.Errorf("%s: %s is %d lines, over %d", statusFile, fn.Name.Name, n, verbMaxFunc)
		}
	}
	if funcs < 2 {
		t.Fatalf("%s declares %d functions: the check read nothing", statusFile, funcs)
	}
}

// TestStatusHandlesNoObject: the action imports nothing of Kubernetes'
// (objects, pods, clients): the stages read the cluster and judge what
// they read, the action joins their answers.
func TestStatusHandlesNoObject(t *testing.T) {
	_, f := parseStatus(t)
	if len(f.Imports) == 0 {
		t.Fatalf("%s imports nothing: the check read nothing", statusFile)
	}
	for _, imp := range f.Imports {
		path, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(path, "k8s.io/") || strings.HasPrefix(path, "sigs.k8s.io/") {
			t.Errorf("%s imports %s: reading or judging objects is a stage's work", statusFile, path)
		}
	}
}
