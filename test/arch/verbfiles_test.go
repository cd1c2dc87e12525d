package arch

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// verbFileMax is the most lines a file of pkg/verb holds: each is one
// action over verb.Config, read beside helm's pkg/action file of the same
// verb; a file that grows past it holds a stage's work (issue 53).
const verbFileMax = 400

// tighterRule are the verb files another rule holds to fewer lines:
// status.go to 200 (status_test.go).
var tighterRule = map[string]bool{"status.go": true}

// argoAction are the identifiers of pkg/verb that may start with "argo":
// the action of an Application's --live plan (its read of the cluster, what
// it found, the planner's view of the sync, its check of the destination
// namespace). Argo CD's own rules and names (sync options, tracking,
// marks, the managed namespace) live in pkg/gitops beside Flux's.
var argoAction = map[string]bool{"argoLive": true, "argoFound": true, "argoApplier": true, "argoNamespace": true}

// argoNames are text only Argo CD's rules spell: its annotations' group
// and its field manager.
var argoNames = []string{"argoproj.io", "argocd"}

// verbFiles parses the non-test Go files of pkg/verb.
func verbFiles(t *testing.T) (*token.FileSet, map[string]*ast.File) {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{.Dir}}{{range .GoFiles}} {{.}}{{end}}`, module+"pkg/verb").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	fields := strings.Fields(string(out))
	if len(fields) < 10 {
		t.Fatalf("go list named %d files of pkg/verb: the check reads nothing", len(fields)-1)
	}
	fset, files := token.NewFileSet(), map[string]*ast.File{}
	for _, name := range fields[1:] {
		f, err := parser.ParseFile(fset, filepath.Join(fields[0], name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = f
	}
	return fset, files
}

func TestVerbFilesAreActions(t *testing.T) {
	fset, files := verbFiles(t)
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if tighterRule[name] {
			continue
		}
		data, err := os.ReadFile(fset.File(files[name].Pos()).Name())
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(data), "\n"); n > verbFileMax {
			t.Errorf("pkg/verb/%s has %d lines, more than %d: a verb file is one action; move the stage work to its stage", name, n, verbFileMax)
		}
	}
}

func TestArgoRulesLiveInGitOps(t *testing.T) {
	fset, files := verbFiles(t)
	for name, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			var ids []*ast.Ident
			switch d := n.(type) {
			case *ast.FuncDecl:
				ids = append(ids, d.Name)
			case *ast.TypeSpec:
				ids = append(ids, d.Name)
			case *ast.ValueSpec:
				ids = append(ids, d.Names...)
			case *ast.BasicLit:
				if s, err := strconv.Unquote(d.Value); d.Kind == token.STRING && err == nil {
					for _, a := range argoNames {
						if strings.Contains(s, a) {
							t.Errorf("pkg/verb/%s:%d: %q spells Argo CD's names: they belong to pkg/gitops (argo.go)", name, fset.Position(d.Pos()).Line, a)
						}
					}
				}
			}
			for _, id := range ids {
				if strings.HasPrefix(strings.ToLower(id.Name), "argo") && !argoAction[id.Name] {
					t.Errorf("pkg/verb/%s: %s: Argo CD's rules live in pkg/gitops beside Flux's; pkg/verb keeps only the action (%v)", name, id.Name, argoAction)
				}
			}
			return true
		})
	}
}
