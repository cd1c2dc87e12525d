package gitops

import (
	"fmt"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	"helm.sh/helm/v3/pkg/chartutil"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Names are checked as the API server and Helm check them, so that a name
// the report, the notes or a CI log prints holds no line break or
// terminal control: a pull request could otherwise forge a line (a
// GitHub Actions workflow command) with an object no cluster would accept.
// metadata.name of every kind read here, and a name referring to one, is
// a DNS-1123 subdomain (the API server's NameIsDNSSubdomain for
// ConfigMaps, Secrets and custom resources); a namespace a DNS-1123 label
// (ValidateNamespaceName).

// releaseName is a Helm release name as Helm's install and upgrade check
// it (helm-controller's, and Argo CD's helm template).
func releaseName(name string) []string {
	if err := chartutil.ValidateReleaseName(name); err != nil {
		return []string{err.Error()}
	}
	return nil
}

// checkName is an error naming d and field when value, a name there, is
// not one check accepts; "" is left to the caller.
func checkName(d *Doc, field, value string, check func(string) []string) error {
	if value == "" {
		return nil
	}
	if msgs := check(value); len(msgs) > 0 {
		return fieldError(d, field, "%q is not a valid name: %s", value, strings.Join(msgs, "; "))
	}
	return nil
}

// readKind reports whether an object of apiVersion and kind is one the
// plan reads (a release, a source, a Kustomization, a ConfigMap or Secret
// values or variables come from): those whose names it prints.
func readKind(apiVersion, kind string) bool {
	switch {
	case strings.HasPrefix(apiVersion, fluxHelmGroup), strings.HasPrefix(apiVersion, argoGroup),
		strings.HasPrefix(apiVersion, fluxSourceGroup), strings.HasPrefix(apiVersion, kustomizeGroup):
		return true
	}
	return apiVersion == "v1" && (kind == "ConfigMap" || kind == "Secret")
}

// checkMetadata is an error naming file, the line and the field when the
// object read (obj, ref, at node n) has a metadata.name or metadata.namespace the
// API server refuses. The object's own identity is not trusted to name
// it: its kind and the value, quoted, do.
func checkMetadata(file string, n *yaml.Node, obj map[string]interface{}, ref ObjectRef) error {
	if !readKind(ref.APIVersion, ref.Kind) {
		return nil
	}
	meta, _ := obj["metadata"].(map[string]interface{})
	ns, _ := meta["namespace"].(string)
	for _, f := range []struct {
		key, value string
		check      func(string) []string
	}{{"name", ref.Name, validation.IsDNS1123Subdomain}, {"namespace", ns, validation.IsDNS1123Label}} {
		if f.value == "" {
			continue
		}
		if msgs := f.check(f.value); len(msgs) > 0 {
			return fmt.Errorf("%s:%d: %s metadata.%s: %q is not a valid name: %s", file, lineOf(n, "metadata", f.key), ref.Kind, f.key, f.value, strings.Join(msgs, "; "))
		}
	}
	return nil
}
