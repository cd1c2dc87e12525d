// Package shim tests the drop-in helm (the binary invoked as helm) as
// orchestrators and scripts run it: a separate process first on PATH, the
// real helm v3 or v4 after it, against the local control plane of
// test/kit/testcluster. Scripts in testdata make exactly the helm calls
// Helmsman and helmfile make (GUIDE §6b); real helmfile runs in `make
// test-orchestrators` (test/orchestrators).
package shim

import (
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/proc"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/shimtest"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

func TestMain(m *testing.M) { testcluster.Main(m) }

// result is one finished command.
type result = proc.Result

// tool is the tool's binary, built once for the package's tests.
var tool shimtest.Tool
