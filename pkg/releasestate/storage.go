package releasestate

import (
	"fmt"

	"helm.sh/helm/v3/pkg/action"
	"k8s.io/cli-runtime/pkg/genericclioptions"
)

// NewConfiguration returns a Helm action configuration for namespace, with
// the release storage chosen as HELM_DRIVER does: "" or "secret(s)",
// "configmap(s)", "memory", "sql" (HELM_DRIVER_SQL_CONNECTION_STRING).
// log may be nil.
func NewConfiguration(getter genericclioptions.RESTClientGetter, namespace, driver string, log func(string, ...interface{})) (*action.Configuration, error) {
	if log == nil {
		log = func(string, ...interface{}) {}
	}
	cfg := new(action.Configuration)
	if err := cfg.Init(getter, namespace, driver, log); err != nil {
		return nil, fmt.Errorf("helm release storage (HELM_DRIVER=%q): %w", driver, err)
	}
	// Every read of a record, by this tool or by Helm's actions it runs,
	// goes through the bounded decoder (driver.go).
	cfg.Releases = boundStorage(cfg.Releases, namespace, cfg.KubernetesClientSet)
	return cfg, nil
}
