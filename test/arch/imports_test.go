// Package arch checks the import rules of the stage pipe (issue 23) with
// go list, so that a sideways or upward import fails make test instead of
// waiting for a reader to notice.
package arch

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/safe-upgrade/helm-safe-upgrade/"

// above are the stages a bottom package must never reach: they sit higher in
// the pipe cmd → cli → upgrade → apply → planner/render → classify/gate/apis/
// report → live/plan → manifest → predict/redact.
var above = []string{"pkg/cli", "pkg/upgrade", "pkg/apply", "pkg/planner", "pkg/render", "pkg/classify", "pkg/gate", "pkg/report", "pkg/watch", "pkg/savedplan", "pkg/shim"}

// rules: each package and the packages it must not depend on, directly or
// through another.
var rules = []struct {
	pkg       string
	forbidden []string
}{
	{"pkg/planner", []string{"pkg/apply", "pkg/upgrade", "pkg/cli"}},
	{"pkg/render", []string{"pkg/classify", "pkg/planner", "pkg/apply", "pkg/upgrade", "pkg/cli"}},
	{"pkg/apply", []string{"pkg/upgrade", "pkg/cli"}},
	{"pkg/upgrade", []string{"pkg/cli"}},
	{"pkg/live", above},
	{"pkg/plan", above},
	{"pkg/manifest", append([]string{"pkg/live", "pkg/plan"}, above...)},
	{"pkg/predict", append([]string{"pkg/live", "pkg/plan", "pkg/manifest"}, above...)},
	{"pkg/redact", append([]string{"pkg/live", "pkg/plan", "pkg/manifest", "pkg/predict"}, above...)},
}

// deps returns, for each package of the module under pkg/, the module's
// packages it depends on (transitively, tests excluded).
func deps(t *testing.T) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, module+"pkg/...").Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list: %v: %s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	graph := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		var own []string
		for _, d := range fields[1:] {
			if rel, ok := strings.CutPrefix(d, module); ok {
				own = append(own, rel)
			}
		}
		graph[strings.TrimPrefix(fields[0], module)] = own
	}
	return graph
}

func TestImportRules(t *testing.T) {
	graph := deps(t)
	for _, r := range rules {
		t.Run(r.pkg, func(t *testing.T) {
			have, ok := graph[r.pkg]
			if !ok {
				t.Fatalf("go list does not know %s: a rule about a package that is gone checks nothing", r.pkg)
			}
			for _, d := range have {
				for _, f := range r.forbidden {
					if d == f || strings.HasPrefix(d, f+"/") {
						t.Errorf("%s depends on %s; the pipe forbids it", r.pkg, d)
					}
				}
			}
		})
	}
}
