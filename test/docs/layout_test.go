package docs_test

import (
	"io/fs"
	"path"
	"regexp"
	"strings"
	"testing"
)

// layoutDoc holds the table of where the code is, drawn from the code.
const layoutDoc = "docs/development.md"

// TestLayoutNamesEveryPackage: every folder of Go code under pkg/,
// internal/ and test/kit/ is named in the layout section, by its path or,
// for a stage, by its name in the stages row; and every `*.go` file the
// section names exists, so a move or a new package cannot leave the map
// behind.
func TestLayoutNamesEveryPackage(t *testing.T) {
	fsys := repo(t)
	data, err := fs.ReadFile(fsys, layoutDoc)
	if err != nil {
		t.Fatal(err)
	}
	layout, ok := section(string(data), "## Layout")
	if !ok {
		t.Fatalf("%s has no ## Layout section", layoutDoc)
	}
	for _, problem := range checkLayout(fsys, layout) {
		t.Error(problem)
	}
}

// TestCheckLayout proves the check finds a package left out and a file
// that is not there.
func TestCheckLayout(t *testing.T) {
	fsys := repo(t)
	problems := checkLayout(fsys, "| `pkg/cli` | `nosuchfile.go` |\n")
	var missingPkg, missingFile bool
	for _, p := range problems {
		missingPkg = missingPkg || strings.Contains(p, "pkg/verb")
		missingFile = missingFile || strings.Contains(p, "nosuchfile.go")
	}
	if !missingPkg || !missingFile {
		t.Fatalf("want pkg/verb and nosuchfile.go reported, got %q", problems)
	}
}

// section is the text of the section titled head, up to the next one.
func section(doc, head string) (string, bool) {
	i := strings.Index(doc, "\n"+head+"\n")
	if i < 0 {
		return "", false
	}
	rest := doc[i+len(head)+2:]
	if j := strings.Index(rest, "\n## "); j >= 0 {
		rest = rest[:j]
	}
	return rest, true
}

var goFile = regexp.MustCompile("`([a-z0-9_]+\\.go)`")

func checkLayout(fsys fs.FS, layout string) []string {
	var problems []string
	dirs := map[string]bool{}
	files := map[string]bool{}
	for _, root := range []string{"pkg", "internal", "test/kit", "test/arch"} {
		fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") {
				return nil
			}
			files[path.Base(p)] = true
			if !strings.HasSuffix(p, "_test.go") {
				dirs[path.Dir(p)] = true
			}
			return nil
		})
	}
	for d := range dirs {
		stage := strings.TrimPrefix(d, "pkg/")
		if strings.Contains(layout, "`"+d+"`") || strings.Contains(layout, "`"+d+"/`") ||
			!strings.Contains(stage, "/") && strings.HasPrefix(d, "pkg/") && strings.Contains(layout, "`"+stage+"` (") {
			continue
		}
		problems = append(problems, layoutDoc+": the layout names no "+d)
	}
	for _, m := range goFile.FindAllStringSubmatch(layout, -1) {
		if !files[m[1]] {
			problems = append(problems, layoutDoc+": the layout names "+m[1]+", which no package holds")
		}
	}
	return problems
}
