// Package orchestrators runs real orchestrators through the drop-in helm
// against the local control plane of test/kit/testcluster, with the real helm
// after the shim on PATH: helmfile (the newest release the Go module proxy
// serves, built from its module source by scripts/build-orchestrators.sh)
// and Helmsman (built from the source the user gives, HELMSMAN_SRC).
// `make test-orchestrators` builds both and names them in
// SAFE_UPGRADE_HELMFILE and SAFE_UPGRADE_HELMSMAN; without them the tests
// skip, saying so. test/shim runs scripts that make the same helm calls on
// every make test.
package orchestrators

import (
	"os"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/shimtest"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

func TestMain(m *testing.M) { testcluster.Main(m) }

// HelmfileEnv and HelmsmanEnv name the orchestrators' binaries the tests run.
const (
	HelmfileEnv = "SAFE_UPGRADE_HELMFILE"
	HelmsmanEnv = "SAFE_UPGRADE_HELMSMAN"
)

// tool is the tool's binary, built once for the package's tests.
var tool shimtest.Tool

// helmfile returns the helmfile binary of HelmfileEnv, or skips the test:
// its build takes about 1250 CPU-seconds cold, so only make test-orchestrators
// asks for it.
func helmfile(t *testing.T) string {
	t.Helper()
	return orchestrator(t, "helmfile", HelmfileEnv)
}

// helmsman returns the Helmsman binary of HelmsmanEnv, or skips the test:
// it is built from a source archive the user gives (HELMSMAN_SRC).
func helmsman(t *testing.T) string {
	t.Helper()
	return orchestrator(t, "Helmsman", HelmsmanEnv)
}

func orchestrator(t *testing.T, name, env string) string {
	t.Helper()
	path := os.Getenv(env)
	if path == "" {
		t.Skip("real " + name + " not given: run make test-orchestrators, which builds it (scripts/build-orchestrators.sh) and sets " + env)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s=%s: %v", env, path, err)
	}
	return path
}
