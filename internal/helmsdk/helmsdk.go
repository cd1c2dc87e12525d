// Package helmsdk is the process set-up Helm's SDKs need: what they take
// only as process-wide state (InitProcess, called once by main and by the
// TestMain of tests that run the tool in-process), which SDK version is
// compiled in (Version, for --version), and the deep copies of values trees
// that Helm's actions change in place (values.go).
package helmsdk

import (
	"runtime/debug"

	"helm.sh/helm/v3/pkg/kube"
	kube4 "helm.sh/helm/v4/pkg/kube"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/predict"
)

// InitProcess sets what Helm's SDKs (3 and 4) take only as process-wide
// state, once, before anything runs: its kube client names the field
// manager of its patches after the binary unless told; a real `helm
// upgrade` is "helm", and so are our dry-runs, so managedFields end up as
// Helm would leave them.
func InitProcess() {
	kube.ManagedFieldsManager = predict.FieldManager
	kube4.ManagedFieldsManager = predict.FieldManager // Helm 4's server-side apply
}

// Version is the version of the Helm SDK the tool renders and applies
// with, as compiled in.
func Version() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "helm.sh/helm/v3" {
				return dep.Version
			}
		}
	}
	return "unknown"
}
