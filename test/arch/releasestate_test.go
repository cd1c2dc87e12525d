package arch

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestRenderReadsNoReleaseState: render renders from the release state
// it is handed (render.Stored, which releasestate.State implements) and
// imports none of it, directly or through another package.
func TestRenderReadsNoReleaseState(t *testing.T) {
	const render, state = "pkg/render", "pkg/releasestate"
	have, ok := deps(t)[render]
	if !ok {
		t.Fatalf("go list does not know %s: a rule about a package that is gone checks nothing", render)
	}
	if slices.ContainsFunc(have, func(d string) bool { return d == state || strings.HasPrefix(d, state+"/") }) {
		t.Errorf("%s depends on %s: it renders from the release state it is handed", render, state)
	}
}

// noRenderFiles are the verb files whose action renders nothing: the
// release's state (not found, targets, history) comes from releasestate.
// One package holds every verb, so go list cannot tell its files apart:
// their imports are read from the source.
var noRenderFiles = []string{"pkg/verb/status.go", "pkg/verb/log.go", "pkg/verb/uninstall.go"}

func TestVerbsThatRenderNothingImportNoRender(t *testing.T) {
	for _, file := range noRenderFiles {
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("..", "..", file), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatalf("%s: %v (a rule about a file that is gone checks nothing)", file, err)
		}
		if len(f.Imports) == 0 {
			t.Fatalf("%s: no imports read: the check read nothing", file)
		}
		for _, imp := range f.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				t.Fatalf("%s: import %s: %v", file, imp.Path.Value, err)
			}
			if path == module+"pkg/render" || strings.HasPrefix(path, module+"pkg/render/") {
				t.Errorf("%s imports %s: it renders nothing, and the release state it reads is releasestate's", file, path)
			}
		}
	}
}
