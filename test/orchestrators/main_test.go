// Package orchestrators runs real orchestrators through the drop-in helm
// against the local control plane of internal/testkit/testcluster: helmfile (the
// newest release the Go module proxy serves, built from its module source by
// scripts/build-orchestrators.sh) with the real helm after the shim on PATH.
// `make test-orchestrators` builds helmfile and names it in
// SAFE_UPGRADE_HELMFILE; without it the tests skip, saying so. test/shim
// runs scripts that make the same helm calls on every make test.
package orchestrators

import (
	"os"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/testkit/shimtest"
	"github.com/safe-upgrade/helm-safe-upgrade/internal/testkit/testcluster"
)

func TestMain(m *testing.M) { testcluster.Main(m) }

// HelmfileEnv names the helmfile binary the tests run.
const HelmfileEnv = "SAFE_UPGRADE_HELMFILE"

// tool is the tool's binary, built once for the package's tests.
var tool shimtest.Tool

// helmfile returns the helmfile binary of HelmfileEnv, or skips the test:
// its build takes about 1250 CPU-seconds cold, so only make test-orchestrators
// asks for it.
func helmfile(t *testing.T) string {
	t.Helper()
	path := os.Getenv(HelmfileEnv)
	if path == "" {
		t.Skip("real helmfile not given: run make test-orchestrators, which builds it (scripts/build-orchestrators.sh) and sets " + HelmfileEnv)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s=%s: %v", HelmfileEnv, path, err)
	}
	return path
}
