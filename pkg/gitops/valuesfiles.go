package gitops

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/cli"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/inputfile"
)

// ValuesFiles are a HelmChart's valuesFiles (a HelmRelease's
// spec.chart.spec.valuesFiles, or a HelmChart object's spec.valuesFiles)
// as source-controller applies them (checked in fluxcd/source-controller
// internal/helm/chart builder_remote.go mergeChartValues, builder_local.go
// mergeFileValues, builder.go OverwriteChartDefaultValues): the files are
// merged in order, later ones winning key by key, and the merge replaces
// the chart's values.yaml, which counts only when it is listed itself. For a
// chart of a HelmRepository (InChart) the paths are files of the chart; for
// a chart of a GitRepository they are paths of the repository, read when
// the object is resolved into Values. A missing file is an error unless
// IgnoreMissing.
type ValuesFiles struct {
	Paths         []string               `json:"paths"`
	IgnoreMissing bool                   `json:"ignoreMissing,omitempty"`
	InChart       bool                   `json:"inChart,omitempty"`
	Values        map[string]interface{} `json:"values,omitempty"`
	// doc and field are where the list is written, for errors; offset is
	// 1 when the deprecated valuesFile is the first path.
	doc    *Doc
	field  string
	offset int
}

// valuesFilesOf reads valuesFiles (after the deprecated valuesFile, which
// source-controller's GetValuesFiles puts first) and
// ignoreMissingValuesFiles of cs, at field of d; nil when none is listed.
func valuesFilesOf(d *Doc, cs map[string]interface{}, field string) (*ValuesFiles, error) {
	items, err := list(d, cs, field, "valuesFiles")
	if err != nil {
		return nil, err
	}
	one, err := str(d, cs, field, "valuesFile")
	if err != nil {
		return nil, err
	}
	vf := &ValuesFiles{doc: d, field: field}
	if one != "" {
		vf.Paths, vf.offset = append(vf.Paths, one), 1
	}
	for i, item := range items {
		p, ok := item.(string)
		if !ok || p == "" {
			return nil, fieldError(d, fmt.Sprintf("%s.valuesFiles[%d]", field, i), "want a path, got %v", item)
		}
		vf.Paths = append(vf.Paths, p)
	}
	if len(vf.Paths) == 0 {
		return nil, nil
	}
	if vf.IgnoreMissing, err = boolean(d, cs, field, "ignoreMissingValuesFiles"); err != nil {
		return nil, err
	}
	vf.InChart = true // until a GitRepository's chart reads them
	return vf, nil
}

// setValuesFiles gives r the valuesFiles vf (nil: none), and says what
// they do in its notes.
func (r *Release) setValuesFiles(vf *ValuesFiles) {
	r.ValuesFiles = vf
	if vf != nil {
		r.Notes = append(r.Notes, fmt.Sprintf("%s: valuesFiles %s: the chart's values.yaml is replaced by their merge, as source-controller packages the chart", vf.doc.Ref, strings.Join(vf.Paths, ", ")))
	}
}

// item is the field of the i-th path, for errors.
func (vf *ValuesFiles) item(i int) string {
	if i < vf.offset {
		return vf.field + ".valuesFile"
	}
	return fmt.Sprintf("%s.valuesFiles[%d]", vf.field, i-vf.offset)
}

// itemError is an error about the i-th path: the object, its file and
// line, the field and the file.
func (vf *ValuesFiles) itemError(i int, format string, args ...interface{}) error {
	return &NamedError{fieldError(vf.doc, vf.item(i), "%s: %s", vf.Paths[i], fmt.Sprintf(format, args...))}
}

// mergeLocalValuesFiles merges vf's paths, files of the checkout, into
// vf.Values: a GitRepository's chart (source-controller's mergeFileValues
// joins them to the repository's root, never leaving it).
func (s *Side) mergeLocalValuesFiles(vf *ValuesFiles) error {
	vf.InChart = false
	vf.Values = map[string]interface{}{}
	var total int64
	for i, p := range vf.Paths {
		path := filepath.Join(s.Root, filepath.FromSlash(p))
		if _, err := s.inside(path); err != nil && !os.IsNotExist(err) {
			return vf.itemError(i, "%v", err)
		}
		fi, err := os.Stat(path)
		switch {
		case os.IsNotExist(err) && vf.IgnoreMissing:
			continue
		case err != nil:
			return vf.itemError(i, "not in the checkout (commit it, or set ignoreMissingValuesFiles)")
		case !fi.Mode().IsRegular():
			return vf.itemError(i, "not a file")
		}
		data, err := inputfile.Read(path, "a values file", inputfile.ValuesMax)
		if err != nil {
			return vf.itemError(i, "%v", err)
		}
		if total += int64(len(data)); total > BytesMax {
			return vf.itemError(i, "the values files hold more than %s together", inputfile.Size(BytesMax))
		}
		var vals map[string]interface{}
		if err := sigsyaml.Unmarshal(data, &vals); err != nil {
			return vf.itemError(i, "not a YAML map: %v", err)
		}
		vf.Values = mergeMaps(vf.Values, vals)
	}
	return nil
}

// FetchChart fetches r's chart into dir as Fetch does and applies its
// valuesFiles: the chart then is a package in dir whose values.yaml is
// their merge, as source-controller packages it. side ("base", "head")
// names the checkout in errors, which name r, its file and the field.
func (r *Release) FetchChart(settings *cli.EnvSettings, dir, side string, timeout time.Duration) (string, error) {
	path, err := Fetch(settings, r.Chart, dir, timeout)
	if err != nil {
		return "", r.ChartError(fmt.Errorf("the %s's %w", side, err))
	}
	if r.ValuesFiles == nil {
		return path, nil
	}
	ch, err := loader.Load(path)
	if err != nil {
		return "", r.ChartError(fmt.Errorf("the %s's chart %s: %w", side, r.Chart, err))
	}
	merged := r.ValuesFiles.Values
	if r.ValuesFiles.InChart {
		if merged, err = r.ValuesFiles.mergeChartValues(ch); err != nil {
			return "", err
		}
	}
	if err := overwriteDefaultValues(ch, merged); err != nil {
		return "", r.ChartError(fmt.Errorf("the %s's chart %s: %w", side, r.Chart, err))
	}
	out := filepath.Join(dir, "valuesfiles")
	if err := os.MkdirAll(out, 0o700); err != nil {
		return "", err
	}
	return chartutil.Save(ch, out)
}

// mergeChartValues merges vf's paths, files of ch, in order; values.yaml is
// the chart's default values (source-controller's mergeChartValues).
func (vf *ValuesFiles) mergeChartValues(ch *chart.Chart) (map[string]interface{}, error) {
	merged := map[string]interface{}{}
	for i, p := range vf.Paths {
		name := filepath.ToSlash(filepath.Clean(p))
		if name == chartutil.ValuesfileName {
			merged = mergeMaps(merged, ch.Values)
			continue
		}
		var data []byte
		for _, f := range ch.Files {
			if f.Name == name {
				data = f.Data
				break
			}
		}
		if data == nil {
			if vf.IgnoreMissing {
				continue
			}
			return nil, vf.itemError(i, "not in chart %s %s (set ignoreMissingValuesFiles to leave it out)", ch.Name(), ch.Metadata.Version)
		}
		var vals map[string]interface{}
		if err := sigsyaml.Unmarshal(data, &vals); err != nil {
			return nil, vf.itemError(i, "not a YAML map: %v", err)
		}
		merged = mergeMaps(merged, vals)
	}
	return merged, nil
}

// overwriteDefaultValues replaces ch's values.yaml by vals, as
// source-controller's OverwriteChartDefaultValues does (a chart without a
// values.yaml is an error there too).
func overwriteDefaultValues(ch *chart.Chart, vals map[string]interface{}) error {
	data := []byte{}
	if len(vals) > 0 {
		var err error
		if data, err = sigsyaml.Marshal(vals); err != nil {
			return err
		}
	}
	for _, f := range ch.Raw {
		if f.Name == chartutil.ValuesfileName {
			f.Data = data
			ch.Values = vals
			return nil
		}
	}
	return fmt.Errorf("no %s to replace with the valuesFiles (source-controller refuses it too)", chartutil.ValuesfileName)
}
