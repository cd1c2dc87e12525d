package render

import (
	"io"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chartutil"
	kubefake "helm.sh/helm/v3/pkg/kube/fake"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
)

// NewOfflineConfiguration returns a Helm configuration that never reaches a
// cluster: empty in-memory release storage (so Render installs), a kube
// client that does nothing, and Helm's default capabilities, the
// `helm template` view. lookup returns nothing, as in `helm template`.
func NewOfflineConfiguration() *action.Configuration {
	return &action.Configuration{
		Releases:     storage.Init(driver.NewMemory()),
		KubeClient:   &kubefake.PrintingKubeClient{Out: io.Discard},
		Capabilities: chartutil.DefaultCapabilities,
		Log:          func(string, ...interface{}) {},
	}
}
