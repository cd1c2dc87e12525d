package upgrade

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/gate"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
)

// The saved-plan feature, all of it: the file (--plan-out writes it, --plan
// reads it), what it pins, and the checks that refuse a stale one.

// SavedKind marks a saved plan file.
const SavedKind = "SavedPlan"

// SavedPlan is a plan written by --plan-out and applied by --plan: the exact
// render that was reviewed and what it was reviewed against, so that a later
// apply sends exactly it, or refuses when anything moved. It holds the
// rendered manifest, Secret values included: treat the file like a Terraform
// plan (written with mode 0600).
type SavedPlan struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Release    struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
		// LastRevision is the release's newest revision when planned (0: install).
		LastRevision int `json:"lastRevision"`
	} `json:"release"`
	ChartRef     string          `json:"chartRef"`
	ChartDigest  string          `json:"chartDigest"`
	ValuesDigest string          `json:"valuesDigest"`
	Manifest     string          `json:"manifest"`
	Hooks        []*release.Hook `json:"hooks,omitempty"`
	Notes        string          `json:"notes,omitempty"`
	// Objects are the live states of the objects the plan changes.
	Objects []SavedObject `json:"objects"`
	// Acknowledged are the destructive changes acknowledged when planning,
	// each bound to its fingerprint.
	Acknowledged []gate.Ack `json:"acknowledged,omitempty"`
}

// SavedObject pins the live state a change was planned against. Apply
// compares the state digest (the object without status and server-managed
// fields): a status update by a controller does not make the plan stale.
type SavedObject struct {
	Object          string `json:"object"`
	ResourceVersion string `json:"resourceVersion"`
	StateDigest     string `json:"stateDigest"`
}

// SavePlan writes the reviewed render of planned, and what it was planned
// against, to path (mode 0600), and says so on Out.
func (c *Config) SavePlan(path string, planned *Planned) error {
	if err := writePlan(path, planned); err != nil {
		return err
	}
	fmt.Fprintf(c.Out, "Plan saved to %s (it holds the rendered manifest, Secrets included: keep it private). Apply it with --plan %s\n", path, path)
	return nil
}

func writePlan(path string, planned *Planned) error {
	res := planned.Rendered
	saved := &SavedPlan{
		APIVersion:   plan.APIVersion,
		Kind:         SavedKind,
		ChartRef:     planned.ChartRef,
		ChartDigest:  chartDigest(res.Chart),
		ValuesDigest: valuesDigest(res.Values, planned.Render),
		Manifest:     res.Next.Manifest,
		Hooks:        res.Next.Hooks,
		Notes:        res.Next.Info.Notes,
		Acknowledged: gate.Given(planned.Plan),
	}
	saved.Release.Name, saved.Release.Namespace = res.Next.Name, res.Next.Namespace
	if res.Last != nil {
		saved.Release.LastRevision = res.Last.Version
	}
	for _, c := range planned.Plan.Changes {
		if c.Action != plan.ActionNoop && c.LiveResourceVersion != "" {
			saved.Objects = append(saved.Objects, SavedObject{Object: c.ID.String(),
				ResourceVersion: c.LiveResourceVersion, StateDigest: stateDigest(c)})
		}
	}
	data, err := json.MarshalIndent(saved, "", "  ")
	if err != nil {
		return err
	}
	// Remove first: WriteFile keeps the mode of an existing file.
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("--plan-out: %w", err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("--plan-out: %w", err)
	}
	return nil
}

// LoadPlan reads the saved plan at path and checks that it was made for
// release name in namespace.
func LoadPlan(path, name, namespace string) (*SavedPlan, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--plan: %w", err)
	}
	var s SavedPlan
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("--plan %s: %w", path, err)
	}
	if s.APIVersion != plan.APIVersion || s.Kind != SavedKind {
		return nil, fmt.Errorf("--plan %s: not a saved plan (want apiVersion %s, kind %s)", path, plan.APIVersion, SavedKind)
	}
	if s.Release.Name != name || s.Release.Namespace != namespace {
		return nil, fmt.Errorf("--plan %s was made for release %s/%s, not %s/%s", path,
			s.Release.Namespace, s.Release.Name, namespace, name)
	}
	return &s, nil
}

// Acks are the acknowledgements the saved plan recorded, valid only for the
// same changes.
func (s *SavedPlan) Acks() *gate.Acks { return gate.Bound(s.Acknowledged, "saved plan") }

// useIn checks that the release, chart and values are those of the saved
// plan and puts the saved render in place of the new one: what is applied is
// what was reviewed, even when templates are not deterministic.
func (s *SavedPlan) useIn(res *render.Result, opts RenderOptions) error {
	last := 0
	if res.Last != nil {
		last = res.Last.Version
	}
	if last != s.Release.LastRevision {
		return fmt.Errorf("saved plan is stale: release %s moved from revision %d to %d since the plan; plan again", s.Release.Name, s.Release.LastRevision, last)
	}
	if chartDigest(res.Chart) != s.ChartDigest {
		return fmt.Errorf("saved plan is stale: chart %s changed since the plan; plan again", s.ChartRef)
	}
	if valuesDigest(res.Values, opts) != s.ValuesDigest {
		return errors.New("saved plan is stale: the values (-f, --set, --reuse-values, ...) differ from the plan's; plan again")
	}
	res.Next.Manifest = s.Manifest
	res.Next.Hooks = s.Hooks
	res.Next.Info.Notes = s.Notes
	return nil
}

// unmoved refuses the saved plan when an object it changes moved in the
// cluster since.
func (s *SavedPlan) unmoved(p *plan.Plan) error {
	now := map[string]plan.Change{}
	for _, c := range p.Changes {
		now[c.ID.String()] = c
	}
	for _, o := range s.Objects {
		c := now[o.Object]
		if stateDigest(c) != o.StateDigest {
			return fmt.Errorf("saved plan is stale: %s changed in the cluster since the plan (resourceVersion %s, now %q); plan again",
				o.Object, o.ResourceVersion, c.LiveResourceVersion)
		}
	}
	return nil
}

// stateDigest hashes the live object a change was planned against.
func stateDigest(c plan.Change) string {
	if c.Before == nil {
		return ""
	}
	data, _ := json.Marshal(c.Before.Object)
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// chartDigest hashes every file of a chart and its subcharts, so a saved
// plan can tell whether the chart changed since.
func chartDigest(ch *chart.Chart) string {
	h := sha256.New()
	writeChart(h, ch)
	return hex.EncodeToString(h.Sum(nil))
}

func writeChart(w io.Writer, ch *chart.Chart) {
	files := append([]*chart.File{}, ch.Raw...)
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	fmt.Fprintf(w, "chart %s\n", ch.ChartFullPath())
	for _, f := range files {
		fmt.Fprintf(w, "%s %d\n", f.Name, len(f.Data))
		_, _ = w.Write(f.Data)
	}
	for _, dep := range ch.Dependencies() {
		writeChart(w, dep)
	}
}

// valuesDigest hashes the user-supplied values and the flags that decide how
// Helm combines them with the release's.
func valuesDigest(values map[string]interface{}, opts RenderOptions) string {
	data, _ := json.Marshal(struct {
		Values                                      map[string]interface{}
		ReuseValues, ResetValues, ResetThenReuseVal bool
	}{values, opts.ReuseValues, opts.ResetValues, opts.ResetThenReuseValues})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
