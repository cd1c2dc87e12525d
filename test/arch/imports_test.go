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
// the pipe cmd → cli → verb → apply → planner → releasestate/render →
// classify/gate/apis/report → live/plan → manifest → predict/redact
// (render renders from the release state it is handed and reads none:
// releasestate_test.go).
var above = []string{"pkg/cli", "pkg/verb", "pkg/apply", "pkg/planner", "pkg/render", "pkg/releasestate", "pkg/classify", "pkg/gate", "pkg/report", "pkg/watch", "pkg/savedplan", "pkg/shim"}

// rules: each package and the packages it must not depend on, directly or
// through another.
var rules = []struct {
	pkg       string
	forbidden []string
}{
	// Planning reads the release's stored state (history, records, Lease,
	// journal) through releasestate, never through apply, which writes it.
	{"pkg/planner", []string{"pkg/apply", "pkg/verb", "pkg/cli"}},
	{"pkg/render", []string{"pkg/classify", "pkg/planner", "pkg/apply", "pkg/verb", "pkg/cli"}},
	{"pkg/releasestate", []string{"pkg/apply", "pkg/verb", "pkg/cli", "pkg/planner", "pkg/render", "pkg/classify", "pkg/report", "pkg/gate", "pkg/watch", "pkg/savedplan"}},
	{"pkg/apply", []string{"pkg/verb", "pkg/cli"}},
	{"pkg/verb", []string{"pkg/cli"}},
	// classify judges what it is handed (and holds the one table of
	// destructive kinds that planner and apply read): it reads neither the
	// cluster nor Helm, and knows no stage that uses it.
	{"pkg/classify", []string{"pkg/planner", "pkg/apply", "pkg/verb", "pkg/cli", "pkg/render", "pkg/live", "pkg/report", "pkg/gate", "pkg/watch", "pkg/savedplan"}},
	// The guard builds its policy from the table of destructive kinds and
	// reaches the cluster through its own small interface.
	{"pkg/guard", []string{"pkg/planner", "pkg/apply", "pkg/verb", "pkg/cli", "pkg/render", "pkg/live", "pkg/report", "pkg/gate"}},
	// report and gate read the plan model only.
	{"pkg/report", []string{"pkg/planner", "pkg/apply", "pkg/verb", "pkg/cli", "pkg/render", "pkg/live", "pkg/classify", "pkg/gate", "pkg/watch", "pkg/savedplan"}},
	{"pkg/gate", []string{"pkg/planner", "pkg/apply", "pkg/verb", "pkg/cli", "pkg/render", "pkg/live", "pkg/classify", "pkg/report", "pkg/watch", "pkg/savedplan"}},
	// gitops reads files and fetches charts: no cluster, no stage of the plan.
	{"pkg/gitops", append([]string{"pkg/live", "pkg/plan", "pkg/manifest", "pkg/predict"}, above...)},
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

// flagPackages are the command-line libraries: the command tree in pkg/cli
// owns every flag, so no other package of the module imports them (Helm's
// settings, which register their own flags, reach them only through cli).
var flagPackages = []string{"github.com/spf13/cobra", "github.com/spf13/pflag"}

func TestOnlyCLIImportsFlags(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"pkg/...", module+"internal/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], module)
		checked++
		if pkg == "pkg/cli" {
			continue
		}
		for _, imp := range fields[1:] {
			for _, f := range flagPackages {
				if imp == f {
					t.Errorf("%s imports %s; flags belong to pkg/cli", pkg, imp)
				}
			}
		}
	}
	if checked < 10 {
		t.Fatalf("go list named %d packages: the check read nothing", checked)
	}
}

// testKit is the folder of the test harness (control plane, fakes, golden
// files, terminals, chart repositories): the product never depends on it,
// directly or through another package, so no test code ships.
const testKit = module + "test/kit/"

func TestProductNeverImportsTestKit(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Deps " "}}`, module+"cmd/...", module+"pkg/...", module+"internal/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if strings.HasPrefix(fields[0], testKit) {
			continue
		}
		checked++
		for _, dep := range fields[1:] {
			if strings.HasPrefix(dep, testKit) {
				t.Errorf("%s depends on %s: the test kit is for tests only", strings.TrimPrefix(fields[0], module), strings.TrimPrefix(dep, module))
			}
		}
	}
	if checked < 20 {
		t.Fatalf("go list named %d product packages: the check read nothing", checked)
	}
}
