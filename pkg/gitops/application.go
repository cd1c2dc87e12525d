package gitops

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"helm.sh/helm/v3/pkg/strvals"
	"k8s.io/apimachinery/pkg/util/validation"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/inputfile"
)

// resolveApplication is Argo CD's view of an Application with a Helm
// source: spec.source, or the one Helm source of spec.sources (a source
// with only a ref lends its files to $ref/ value files).
func (s *Side) resolveApplication(d *Doc, spec map[string]interface{}) (*Release, error) {
	src, field, err := s.helmSource(d, spec)
	if err != nil || src == nil {
		return nil, err
	}
	r := &Release{Object: d.Ref, File: d.File, Line: d.Line, Name: d.Ref.Name, Notes: []string{argoValuesFileNote}}
	dest, err := obj(d, spec, "spec", "destination")
	if err != nil {
		return nil, err
	}
	if r.Namespace, err = str(d, dest, "spec.destination", "namespace"); err != nil {
		return nil, err
	}
	if err := checkName(d, "spec.destination.namespace", r.Namespace, validation.IsDNS1123Label); err != nil {
		return nil, err
	}
	if r.Namespace == "" {
		r.Namespace = "default"
	}
	r.StorageNamespace = r.Namespace
	r.setChartField(d, field)
	repoURL, _ := src["repoURL"].(string)
	chart, _ := src["chart"].(string)
	path, _ := src["path"].(string)
	revision, _ := src["targetRevision"].(string)
	switch {
	case chart != "":
		r.Chart = argoChart(repoURL, chart, revision)
	case path != "":
		// A path of a Git repository: this checkout.
		if r.Chart, err = s.localChart(d, field+".path", path); err != nil {
			return nil, err
		}
	default:
		return nil, fieldError(d, field, "a Helm source needs chart (with repoURL) or path")
	}
	helm, err := obj(d, src, field, "helm")
	if err != nil {
		return nil, err
	}
	if name, _ := helm["releaseName"].(string); name != "" {
		if err := checkName(d, field+".helm.releaseName", name, releaseName); err != nil {
			return nil, err
		}
		r.Name = name
	}
	r.SkipCRDs, _ = helm["skipCrds"].(bool)
	if r.Values, err = s.applicationValues(d, field+".helm", helm, r.Chart.Path); err != nil {
		return nil, err
	}
	if err := s.fileParameters(d, field+".helm", helm, r.Chart.Path, r.Values); err != nil {
		return nil, err
	}
	return r, nil
}

// helmSource is the Application's Helm source and its field, nil when it
// has none (a plain or kustomize source).
func (s *Side) helmSource(d *Doc, spec map[string]interface{}) (map[string]interface{}, string, error) {
	if src, err := obj(d, spec, "spec", "source"); err != nil || src != nil {
		if src != nil && !s.isHelmSource(src) {
			return nil, "", nil
		}
		return src, "spec.source", err
	}
	sources, err := list(d, spec, "spec", "sources")
	if err != nil {
		return nil, "", err
	}
	var found map[string]interface{}
	field := ""
	for i, item := range sources {
		src, ok := item.(map[string]interface{})
		if !ok || !s.isHelmSource(src) {
			continue
		}
		if found != nil {
			return nil, "", fieldError(d, "spec.sources", "sources %s and %d are both Helm charts; one per Application is supported", strings.TrimPrefix(field, "spec.sources"), i)
		}
		found, field = src, fmt.Sprintf("spec.sources[%d]", i)
	}
	return found, field, nil
}

// isHelmSource: a chart of a Helm repository, a path with helm settings,
// or a path holding a Chart.yaml (Argo CD's detection).
func (s *Side) isHelmSource(src map[string]interface{}) bool {
	if c, _ := src["chart"].(string); c != "" {
		return true
	}
	if _, helm := src["helm"]; helm {
		return true
	}
	path, _ := src["path"].(string)
	if path == "" {
		return false
	}
	// inside, not os.Stat: a path out of the checkout is a Helm source
	// whether or not it exists there, and localChart refuses it.
	_, err := s.inside(filepath.Join(s.Root, filepath.FromSlash(path), "Chart.yaml"))
	return !os.IsNotExist(err)
}

// argoChart is an Application's chart: repoURL is an HTTP(S) chart
// repository, or an OCI registry (oci://, or a host/path without a scheme
// as Argo CD writes OCI repositories).
func argoChart(repoURL, chart, revision string) Chart {
	if revision == "*" {
		revision = ""
	}
	switch {
	case strings.HasPrefix(repoURL, "http://"), strings.HasPrefix(repoURL, "https://"):
		return Chart{RepoURL: repoURL, Name: chart, Version: revision}
	case !strings.HasPrefix(repoURL, "oci://"):
		repoURL = "oci://" + repoURL
	}
	return Chart{Name: strings.TrimSuffix(repoURL, "/") + "/" + chart, Version: revision}
}

// applicationValues merges the values as Argo CD hands them to helm
// template: valueFiles in order, then valuesObject (or values, when there
// is no valuesObject), then parameters as --set (--set-string with
// forceString).
func (s *Side) applicationValues(d *Doc, field string, helm map[string]interface{}, chartDir string) (map[string]interface{}, error) {
	result := map[string]interface{}{}
	files, err := list(d, helm, field, "valueFiles")
	if err != nil {
		return nil, err
	}
	ignoreMissing, _ := helm["ignoreMissingValueFiles"].(bool)
	for i, f := range files {
		name, _ := f.(string)
		itemField := fmt.Sprintf("%s.valueFiles[%d]", field, i)
		path, err := s.valueFilePath(d, itemField, name, chartDir)
		if err != nil {
			return nil, err
		}
		if _, err := s.inside(path); os.IsNotExist(err) && ignoreMissing {
			continue
		} else if err != nil {
			return nil, fieldError(d, itemField, "%v", err)
		}
		data, err := inputfile.Read(path, "a values file", inputfile.ValuesMax)
		if err != nil {
			return nil, fieldError(d, itemField, "%v", err)
		}
		var vals map[string]interface{}
		if err := sigsyaml.Unmarshal(data, &vals); err != nil {
			return nil, fieldError(d, itemField, "%s: %v", path, err)
		}
		result = mergeMaps(result, vals)
	}
	inline, err := obj(d, helm, field, "valuesObject")
	if err != nil {
		return nil, err
	}
	if inline == nil {
		text, err := str(d, helm, field, "values")
		if err != nil {
			return nil, err
		}
		if err := sigsyaml.Unmarshal([]byte(text), &inline); err != nil {
			return nil, fieldError(d, field+".values", "not a YAML map: %v", err)
		}
	}
	result = mergeMaps(result, jsonValues(inline))
	params, err := list(d, helm, field, "parameters")
	if err != nil {
		return nil, err
	}
	// Argo CD gathers the parameters into helm template's --set and
	// --set-string (a name given twice: the last), and Helm applies every
	// --set before any --set-string (checked in argo-cd
	// reposerver/repository/repository.go helmTemplate and Helm's
	// values.Options.MergeValues).
	for _, forced := range []bool{false, true} {
		for i, p := range params {
			m, _ := p.(map[string]interface{})
			name, _ := m["name"].(string)
			value := fmt.Sprint(m["value"])
			if m["value"] == nil {
				value = ""
			}
			if force, _ := m["forceString"].(bool); force != forced {
				continue
			}
			set := strvals.ParseInto
			if forced {
				set = strvals.ParseIntoString
			}
			if name == "" {
				return nil, fieldError(d, field+".parameters", "item %d: name is required", i)
			}
			if err := set(name+"="+argoSetValue(value), result); err != nil {
				return nil, fieldError(d, field+".parameters", "item %d (%s): %v", i, name, err)
			}
		}
	}
	return result, nil
}

// argoSetValue is value as Argo CD passes it to --set and --set-string
// (argo-cd util/helm/cmd.go cleanSetParameters): a comma not preceded by a
// backslash is escaped, so it stays in the value instead of starting
// another name=value, unless the value is a {…} list.
func argoSetValue(value string) string {
	if strings.HasPrefix(value, "{") && strings.HasSuffix(value, "}") {
		return value
	}
	var b strings.Builder
	var prev rune
	for _, r := range value {
		if r == ',' && prev != '\\' {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
		prev = r
	}
	return b.String()
}

// fileParameters sets each of helm.fileParameters into values as Helm's
// --set-file does, after the parameters: the value at name is the content
// of the file at path, a string. Argo CD resolves the path
// (ResolveValueFilePathOrUrl in argo-cd util/io/path) relative to the
// chart's directory, or to the repository's root when it starts with "/";
// the file must stay in the checkout.
func (s *Side) fileParameters(d *Doc, field string, helm map[string]interface{}, chartDir string, values map[string]interface{}) error {
	params, err := list(d, helm, field, "fileParameters")
	if err != nil {
		return err
	}
	for i, p := range params {
		itemField := fmt.Sprintf("%s.fileParameters[%d]", field, i)
		m, _ := p.(map[string]interface{})
		name, _ := m["name"].(string)
		rel, _ := m["path"].(string)
		if name == "" || rel == "" {
			return fieldError(d, itemField, "name and path are required")
		}
		if chartDir == "" {
			return fieldError(d, itemField+".path", "%q: files of a repository's chart are not supported", rel)
		}
		path := filepath.Join(chartDir, filepath.FromSlash(rel))
		if strings.HasPrefix(rel, "/") {
			path = filepath.Join(s.Root, filepath.FromSlash(rel))
		}
		if _, err := s.inside(path); os.IsNotExist(err) {
			return fieldError(d, itemField+".path", "%s: not in the checkout", rel)
		} else if err != nil {
			return fieldError(d, itemField+".path", "%v", err)
		}
		data, err := inputfile.Read(path, "a file parameter", inputfile.ValuesMax)
		if err != nil {
			return fieldError(d, itemField+".path", "%v", err)
		}
		// The value is never parsed as --set parses one: only the name is.
		read := func([]rune) (interface{}, error) { return string(data), nil }
		if err := strvals.ParseIntoFile(name+"=file", values, read); err != nil {
			return fieldError(d, itemField+".name", "%s: %v", name, err)
		}
	}
	return nil
}

// valueFilePath is where a valueFiles entry is: $ref/… in this checkout
// (the ref source is taken to be this repository), else relative to the
// chart directory of a path source. A chart of a repository carries its
// value files inside; they are not read.
func (s *Side) valueFilePath(d *Doc, field, name, chartDir string) (string, error) {
	if strings.HasPrefix(name, "$") {
		_, rest, _ := strings.Cut(name, "/")
		return filepath.Join(s.Root, filepath.FromSlash(rest)), nil
	}
	if chartDir == "" {
		return "", fieldError(d, field, "%q: value files inside a repository's chart are not supported", name)
	}
	return filepath.Join(chartDir, filepath.FromSlash(name)), nil
}
