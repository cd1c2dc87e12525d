package arch

import (
	"go/ast"
	"sort"
	"strings"
	"testing"
)

// renderSteps are the functions pkg/render/render.go declares: Render and
// the list of its steps (issue 53). Each step lives with the helpers it
// alone uses in a file of its own (configuration.go, chart.go,
// actions.go): a helper that drifts into render.go, or a step whose helper
// sits in another file, sends a reader back and forth between files.
var renderSteps = map[string]bool{"Render": true, "render": true}

func TestRenderFileIsItsSteps(t *testing.T) {
	f := productFiles(t)["pkg/render/render.go"]
	if f == nil {
		t.Fatal("pkg/render/render.go is gone: a rule about a file that is gone checks nothing")
	}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && !renderSteps[funcName(fd)] {
			t.Errorf("pkg/render/render.go declares %s: render.go is Render and the list of its steps; put %s in the file of the step that uses it", funcName(fd), funcName(fd))
		}
	}
}

// TestOfflineRendersFromOnePlace: the package renders (Render) and seeds
// the lookup server an offline render answers from (newBaseCluster) in one
// place, one function: every offline render, the base chart's and the
// head's, goes through it. Three renders that each set up their own server,
// storage and errors drifted apart before it.
func TestOfflineRendersFromOnePlace(t *testing.T) {
	callers := map[string][]string{} // callee -> "file:function" of each call
	for path, f := range productFiles(t) {
		if !inPackage(path, "pkg/render") {
			continue
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				if call, ok := n.(*ast.CallExpr); ok {
					if id, ok := call.Fun.(*ast.Ident); ok && (id.Name == "Render" || id.Name == "newBaseCluster") {
						callers[id.Name] = append(callers[id.Name], path+":"+funcName(fd))
					}
				}
				return true
			})
		}
	}
	for _, callee := range []string{"Render", "newBaseCluster"} {
		if got := callers[callee]; len(got) != 1 {
			sort.Strings(got)
			t.Errorf("pkg/render calls %s from %d places (%s); want one: every offline render goes through one function", callee, len(got), strings.Join(got, ", "))
		}
	}
	if r, b := callers["Render"], callers["newBaseCluster"]; len(r) == 1 && len(b) == 1 && r[0] != b[0] {
		t.Errorf("pkg/render renders in %s but seeds the lookup server in %s: one function does both", r[0], b[0])
	}
}
