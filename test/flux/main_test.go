// Package flux runs the tool beside Flux's real helm-controller and
// source-controller on the local control plane of test/kit/testcluster: the
// controllers run as plain processes (their pods would run under kwok, which
// runs nothing), the source-controller's artifact server on loopback, charts
// served from a chart repository on loopback (test/kit/chartrepo) that a
// HelmRepository names. `make test-flux FLUX_SRC=DIR` builds both controllers
// from the source archives in DIR (scripts/build-flux.sh) and names their
// folders (binary and CRDs) in SAFE_UPGRADE_HELM_CONTROLLER and
// SAFE_UPGRADE_SOURCE_CONTROLLER; without them the tests skip, saying so.
package flux

import (
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

func TestMain(m *testing.M) { testcluster.Main(m) }
