package upgrade

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"sort"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/cli/values"
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
//
// Seal is a SHA-256 over everything else in the file, checked before
// anything in it is used: an edit (a changed value, an appended hook) is
// refused. It is a checksum, not a signature: whoever can write the file can
// seal it again, so keep it where only the pipeline that made it can write.
// The identity of the cluster, the flags that change what is applied, the
// objects to create and the time it was made are pinned too, so the plan is
// refused on another cluster, with other flags, when an object it creates
// appeared meanwhile, or (--plan-max-age) when too old.
type SavedPlan struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Seal       string `json:"seal"`
	// Created is when the plan was made (RFC 3339, UTC).
	Created time.Time `json:"created"`
	// Cluster is where it was planned and may be applied.
	Cluster ClusterIdentity `json:"cluster"`
	// ApplyFlags are the flags that change what Helm applies and how
	// (--no-hooks, --skip-crds, --atomic, --wait, --timeout, --force, ...):
	// apply needs the same.
	ApplyFlags map[string]interface{} `json:"applyFlags"`
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
	// MaskKey is the key Secret values were masked with in the reviewed
	// plan: the apply masks with it too, so live Secrets' state digests
	// and the markers shown compare equal. The file holds the values in
	// clear anyway.
	MaskKey []byte `json:"maskKey"`
}

// ClusterIdentity names one cluster: its API server URL, the UID of its
// kube-system namespace (which only a new cluster changes) and the
// kubeconfig context the plan was made with.
type ClusterIdentity struct {
	Server        string `json:"server"`
	KubeSystemUID string `json:"kubeSystemUID"`
	Context       string `json:"context"`
}

// SavedObject pins the live state a change was planned against (for an
// object to create: that it does not exist; StateDigest is then empty). Apply
// compares the state digest (the object without status and server-managed
// fields): a status update by a controller does not make the plan stale.
type SavedObject struct {
	Object          string `json:"object"`
	ResourceVersion string `json:"resourceVersion"`
	StateDigest     string `json:"stateDigest"`
}

// SavePlan writes the reviewed render of planned, what it was planned
// against and the apply flags, to path (mode 0600), and says so on Out.
func (c *Config) SavePlan(ctx context.Context, path string, planned *Planned) error {
	if err := c.writePlan(ctx, path, planned); err != nil {
		return err
	}
	fmt.Fprintf(c.Out, "Plan saved to %s (it holds the rendered manifest, Secrets included: keep it private). Apply it with --plan %s\n", path, path)
	return nil
}

func (c *Config) writePlan(ctx context.Context, path string, planned *Planned) error {
	res := planned.Rendered
	id, err := c.identity(ctx)
	if err != nil {
		return fmt.Errorf("--plan-out: %w", err)
	}
	saved := &SavedPlan{
		APIVersion:   plan.APIVersion,
		Kind:         SavedKind,
		Created:      c.Now().UTC().Truncate(time.Second),
		Cluster:      id,
		ApplyFlags:   applyFlags(planned.Render, planned.Apply),
		ChartRef:     planned.ChartRef,
		ChartDigest:  chartDigest(res.Chart),
		ValuesDigest: valuesDigest(res.Values, planned.Render),
		Manifest:     res.Next.Manifest,
		Hooks:        res.Next.Hooks,
		Notes:        res.Next.Info.Notes,
		Acknowledged: gate.Given(planned.Plan),
		MaskKey:      c.Masker.Key,
	}
	saved.Release.Name, saved.Release.Namespace = res.Next.Name, res.Next.Namespace
	if res.Last != nil {
		saved.Release.LastRevision = res.Last.Version
	}
	for _, ch := range planned.Plan.Changes {
		if ch.Action != plan.ActionNoop {
			saved.Objects = append(saved.Objects, SavedObject{Object: ch.ID.String(),
				ResourceVersion: ch.LiveResourceVersion, StateDigest: stateDigest(ch)})
		}
	}
	if saved.Seal, err = saved.digest(); err != nil {
		return err
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

// LoadPlan reads the saved plan at path strictly (unknown fields, nulls and
// values of the wrong type are refused, naming the field), checks its seal,
// and that it was made for release name in namespace.
func LoadPlan(path, name, namespace string) (*SavedPlan, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--plan: %w", err)
	}
	s, err := decodeStrict(data)
	if err != nil {
		return nil, fmt.Errorf("--plan %s: %w", path, err)
	}
	if s.APIVersion != plan.APIVersion || s.Kind != SavedKind {
		return nil, fmt.Errorf("--plan %s: not a saved plan (want apiVersion %s, kind %s)", path, plan.APIVersion, SavedKind)
	}
	if d, err := s.digest(); err != nil || d != s.Seal {
		return nil, fmt.Errorf("--plan %s: the file was changed after it was saved (its seal does not match its content); plan again", path)
	}
	if s.Release.Name != name || s.Release.Namespace != namespace {
		return nil, fmt.Errorf("--plan %s was made for release %s/%s, not %s/%s", path,
			s.Release.Namespace, s.Release.Name, namespace, name)
	}
	return s, nil
}

// decodeStrict decodes a saved plan, refusing unknown fields, nulls and
// values of the wrong type with the path of the field.
func decodeStrict(data []byte) (*SavedPlan, error) {
	var raw interface{}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if p := nullAt(raw, ""); p != "" {
		return nil, fmt.Errorf("field %s is null", p)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s SavedPlan
	if err := dec.Decode(&s); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, fmt.Errorf("field %s: %s where %s is expected", te.Field, te.Value, te.Type)
		}
		return nil, err // names the unknown field
	}
	return &s, nil
}

// nullAt returns the path of the first null in v ("" if none).
func nullAt(v interface{}, path string) string {
	switch t := v.(type) {
	case nil:
		if path == "" {
			return "(the document)"
		}
		return path
	case map[string]interface{}:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			if n := nullAt(t[k], p); n != "" {
				return n
			}
		}
	case []interface{}:
		for i, e := range t {
			if n := nullAt(e, fmt.Sprintf("%s[%d]", path, i)); n != "" {
				return n
			}
		}
	}
	return ""
}

// digest is the seal: a SHA-256 over the plan's JSON without its seal.
func (s *SavedPlan) digest() (string, error) {
	c := *s
	c.Seal = ""
	data, err := json.Marshal(&c)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

// check refuses the saved plan on another cluster, with other apply flags,
// or when older than maxAge (0: no limit).
func (s *SavedPlan) check(id ClusterIdentity, flags map[string]interface{}, now time.Time, maxAge time.Duration) error {
	if s.Cluster != id {
		return fmt.Errorf("saved plan was made for another cluster (server %s, kube-system UID %s, context %q), not this one (server %s, kube-system UID %s, context %q); plan again here",
			s.Cluster.Server, s.Cluster.KubeSystemUID, s.Cluster.Context, id.Server, id.KubeSystemUID, id.Context)
	}
	keys := make([]string, 0, len(flags))
	for k := range flags {
		keys = append(keys, k)
	}
	for k := range s.ApplyFlags {
		if _, ok := flags[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !reflect.DeepEqual(s.ApplyFlags[k], flags[k]) {
			return fmt.Errorf("saved plan was made with %s=%v, this run has %v: apply it with the flags it was planned with", k, s.ApplyFlags[k], flags[k])
		}
	}
	if age := now.Sub(s.Created); maxAge > 0 && age > maxAge {
		return fmt.Errorf("saved plan is %s old, more than --plan-max-age %s; plan again", age.Round(time.Second), maxAge)
	}
	return nil
}

// applyFlags are the flags that change what Helm applies or how, as JSON
// values keyed by option name: every render option except those that only
// locate the chart and values (their effect is pinned by the chart and
// values digests and the saved manifest) or that only change what is shown
// or how the plan was rendered, plus --force.
func applyFlags(opts RenderOptions, apply ApplyRequest) map[string]interface{} {
	opts.Values, opts.Repo = values.Options{}, action.ChartPathOptions{}
	var out map[string]interface{}
	data, _ := json.Marshal(opts)
	_ = json.Unmarshal(data, &out)
	for _, k := range []string{"Values", "Repo", "Version", "Devel", "PostRenderer", "PostRendererArgs", "Namespace",
		"HideSecret", "HideNotes", "DependencyUpdate", "KubeVersion", "APIVersions"} {
		delete(out, k)
	}
	for k, v := range out {
		if v == nil { // an unset list or map: the same as absent
			delete(out, k)
		}
	}
	out["Force"] = apply.Force
	return out
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
		if stateDigest(c) == o.StateDigest {
			continue
		}
		if o.StateDigest == "" {
			return fmt.Errorf("saved plan is stale: %s, which the plan creates, appeared in the cluster since the plan (resourceVersion %q); plan again",
				o.Object, c.LiveResourceVersion)
		}
		return fmt.Errorf("saved plan is stale: %s changed in the cluster since the plan (resourceVersion %s, now %q); plan again",
			o.Object, o.ResourceVersion, c.LiveResourceVersion)
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
