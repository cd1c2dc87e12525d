package report

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/owenrumney/go-sarif/v3/pkg/report/v210/sarif"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/inputfile"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// FormatSARIF is SARIF 2.1.0, for GitHub code scanning.
const FormatSARIF = "sarif"

// SARIF rule IDs: one per kind of destructive change.
const (
	RuleRecreateRequired  = "recreate-required"
	RuleInvalid           = "invalid"
	RuleDestructiveDelete = "destructive-delete"
	RuleDestructiveCreate = "destructive-create"
)

// informationURI is the tool's home, shown by code scanning.
const informationURI = "https://github.com/safe-upgrade/helm-safe-upgrade"

var sarifRules = []struct{ id, name, short, full string }{
	{RuleRecreateRequired, "RecreateRequired", "The upgrade changes a field that cannot change in place",
		"The API server rejects this update (an immutable field changes): the object must be deleted and recreated, which for a StatefulSet or a claim can lose pods or data. Acknowledge it with --ack to let helm-safe-upgrade recreate it safely, or change the chart."},
	{RuleInvalid, "Invalid", "Helm's upgrade fails on this object",
		"The API server rejects the new object (or the target Kubernetes version does not serve its API): the upgrade would fail, half applied. It cannot be acknowledged: fix the chart or the cluster."},
	{RuleDestructiveDelete, "DestructiveDelete", "The upgrade deletes an object that holds data",
		"The object leaves the chart and Helm deletes it: a PersistentVolumeClaim's volume, every custom resource of a CRD, everything in a Namespace, all pods of a StatefulSet at once. Keep it with helm.sh/resource-policy: keep, or acknowledge it."},
	{RuleDestructiveCreate, "DestructiveCreate", "A new object replaces one the upgrade deletes",
		"Looks like a rename: the old object (and its data) is deleted and a new, empty one is created."},
}

// sarifRule returns the rule of a destructive change.
func sarifRule(c *plan.Change) string {
	switch {
	case c.Class == plan.ClassInvalid:
		return RuleInvalid
	case c.Action == plan.ActionDelete:
		return RuleDestructiveDelete
	case c.Action == plan.ActionCreate:
		return RuleDestructiveCreate
	}
	return RuleRecreateRequired
}

// writeSARIF writes one result per destructive change: level error while it
// blocks the upgrade, warning once acknowledged. Each result is located on
// the template the object comes from (Helm's "# Source:" comment) at the
// line of its kind, when the chart is a local directory (Options.ChartDir);
// on the chart's Chart.yaml otherwise.
func (pw *planWriter) writeSARIF(w io.Writer) error {
	run := sarif.NewRunWithInformationURI("helm-safe-upgrade", informationURI)
	if pw.opts.ToolVersion != "" {
		run.Tool.Driver.WithVersion(pw.opts.ToolVersion)
	}
	for _, r := range sarifRules {
		run.AddRule(r.id).WithName(r.name).
			WithShortDescription(sarif.NewMultiformatMessageString().WithText(r.short)).
			WithFullDescription(sarif.NewMultiformatMessageString().WithText(r.full)).
			WithDefaultConfiguration(sarif.NewReportingConfiguration().WithLevel("error")).
			WithHelpURI(informationURI + "#destructive-changes")
	}
	files := map[string][]string{}
	for _, c := range shown(pw.plan) {
		if !c.Destructive {
			continue
		}
		rule := sarifRule(c)
		level, state, what := destructiveStatus(c)
		msg := fmt.Sprintf("%s %s: %s", c.ID, what, state)
		for _, r := range c.Reasons {
			msg += "\n" + reasonText(r)
		}
		uri, line := pw.sarifLocation(c, files)
		run.CreateResultForRule(rule).
			WithLevel(level).
			WithMessage(sarif.NewTextMessage(msg)).
			WithPartialFingerprints(map[string]string{"objectRule/v1": c.ID.String() + "/" + rule}).
			AddLocation(sarif.NewLocationWithPhysicalLocation(sarif.NewPhysicalLocation().
				WithArtifactLocation(sarif.NewSimpleArtifactLocation(uri)).
				WithRegion(sarif.NewRegion().WithStartLine(line))))
	}
	return writeSARIFRun(w, run)
}

// writeSARIFRun writes a SARIF report of the one run.
func writeSARIFRun(w io.Writer, run *sarif.Run) error {
	rep := sarif.NewReport()
	rep.AddRun(run)
	var b bytes.Buffer
	if err := rep.PrettyWrite(&b); err != nil {
		return err
	}
	b.WriteByte('\n')
	_, err := w.Write(b.Bytes())
	return err
}

// sarifLocation is where code scanning shows a change: the template's path
// under Options.ChartDir (slash-separated, as given: relative to the
// repository root when the tool runs there) and the line of the object's
// kind in it, else the chart's Chart.yaml, line 1. files caches templates.
func (pw *planWriter) sarifLocation(c *plan.Change, files map[string][]string) (string, int) {
	if l := pw.opts.Location; l != nil {
		return l.URI, l.Line
	}
	dir := filepath.ToSlash(pw.opts.ChartDir)
	chartFile := path.Join(dir, "Chart.yaml")
	_, rest, ok := strings.Cut(c.Source, "/") // "<chart>/templates/x.yaml"
	if dir == "" || !ok || rest == "" {
		return chartFile, 1
	}
	uri := path.Join(dir, rest)
	lines, cached := files[uri]
	if !cached {
		lines = readLines(filepath.FromSlash(uri))
		files[uri] = lines
	}
	if lines == nil {
		return chartFile, 1
	}
	kind := regexp.MustCompile(`^\s*kind:\s*["']?` + regexp.QuoteMeta(c.ID.Kind) + `["']?\s*(#.*)?$`)
	for i, l := range lines {
		if kind.MatchString(l) {
			return uri, i + 1
		}
	}
	return uri, 1
}

// readLines returns a file's lines, nil when it cannot be read.
func readLines(name string) []string {
	data, err := inputfile.Read(name, "a chart file", inputfile.SmallMax)
	if err != nil {
		return nil
	}
	var out []string
	s := bufio.NewScanner(bytes.NewReader(data))
	s.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for s.Scan() {
		out = append(out, s.Text())
	}
	if s.Err() != nil {
		return nil
	}
	if out == nil {
		out = []string{}
	}
	return out
}

// ChartDir returns chartRef when it names a local chart directory (the
// Options.ChartDir of a SARIF report), else "".
func ChartDir(chartRef string) string {
	if fi, err := os.Stat(chartRef); err == nil && fi.IsDir() {
		return filepath.Clean(chartRef)
	}
	return ""
}
