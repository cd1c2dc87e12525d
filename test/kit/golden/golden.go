// Package golden compares test output with files under testdata and
// rewrites them when the test binary runs with -update.
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/inputfile"

	"github.com/pmezard/go-difflib/difflib"
)

// update is registered in every test binary that imports this package.
var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// Assert compares got with the file at path (relative to the package's
// directory), or writes it with -update. A difference fails the test with a
// unified diff.
func Assert(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	// A golden file is a page of output: read through the one bounded,
	// type-checked read, so a stray FIFO or huge file fails the test.
	want, err := inputfile.Read(path, "a golden file", inputfile.SmallMax)
	if err != nil {
		t.Fatalf("%v (run go test with -update to create it)", err)
	}
	if string(got) != string(want) {
		d, _ := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
			A: difflib.SplitLines(string(want)), B: difflib.SplitLines(string(got)),
			FromFile: path, ToFile: "got", Context: 3,
		})
		t.Errorf("output differs from %s (run with -update if intended):\n%s", path, d)
	}
}
