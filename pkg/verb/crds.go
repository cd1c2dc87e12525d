package verb

import (
	"fmt"
	"strings"

	"helm.sh/helm/v3/pkg/chart"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/planner"
)

// chartCRDs hands the files of c's crds/ directories (its subcharts'
// included) to the planner.
func chartCRDs(c *chart.Chart) []planner.CRDFile {
	if c == nil {
		return nil
	}
	var out []planner.CRDFile
	for _, crd := range c.CRDObjects() {
		out = append(out, planner.CRDFile{Name: crd.Filename, Data: string(crd.File.Data)})
	}
	return out
}

// crdsNote states Helm's rule for the chart's crds/ directory, for the
// operation planned: an install creates them (unless --skip-crds), an
// upgrade never applies them. "" when the chart has none.
func crdsNote(c *chart.Chart, install, skipCRDs bool) string {
	files := chartCRDs(c)
	if len(files) == 0 {
		return ""
	}
	names := make([]string, 0, len(files))
	for _, f := range files {
		names = append(names, f.Name)
	}
	var rule string
	switch {
	case install && skipCRDs:
		rule = "are not created: --skip-crds"
	case install:
		rule = "are created by the install if absent, before the chart's other objects, and never upgraded or deleted afterwards"
	default:
		rule = "are never applied by helm upgrade (Helm creates them only on install, and never upgrades or deletes them): a change to them happens only when you apply them yourself"
		if skipCRDs {
			rule += " (--skip-crds changes nothing on an upgrade)"
		}
	}
	return fmt.Sprintf("CRDs in the chart's crds/ directory (%s) %s", strings.Join(names, ", "), rule)
}
