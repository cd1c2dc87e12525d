// Package savedplan is the saved plan: the file --plan-out writes and
// --plan applies (its format, its seal, its age encryption), and the checks
// that refuse one that was edited, made elsewhere or gone stale. Verify is
// the one way in: nothing in a file is used before it passed.
package savedplan

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/cli/values"
	"helm.sh/helm/v3/pkg/release"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/gate"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
)

// Kind marks a saved plan file.
const Kind = "SavedPlan"

// Plan is a plan written by --plan-out and applied by --plan: the exact
// render that was reviewed and what it was reviewed against, so that a later
// apply sends exactly it, or refuses when anything moved. It holds the
// rendered manifest, Secret values included: the file is encrypted with age
// (see Write), which also authenticates it.
//
// Seal is a SHA-256 over everything else in the plan, checked before
// anything in it is used: an edit (a changed value, an appended hook) is
// refused. It is a checksum, not a signature: whoever can write the file can
// seal it again; only age's authentication holds against that, which is why
// a plan in clear needs --plan-unencrypted.
// The identity of the cluster, the flags that change what is applied, the
// objects to create and the time it was made are pinned too, so the plan is
// refused on another cluster, with other flags, when an object it creates
// appeared meanwhile, or (--plan-max-age) when too old.
type Plan struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Seal       string `json:"seal"`
	// Created is when the plan was made (RFC 3339, UTC).
	Created time.Time `json:"created"`
	// Cluster is where it was planned and may be applied.
	Cluster ClusterIdentity `json:"cluster"`
	// PlannedBy says which tool and which CI run made the plan.
	PlannedBy Provenance `json:"plannedBy"`
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
	// RollbackTo pins the operation: the stored revision a rollback's plan
	// goes back to; 0 (omitted) for an upgrade's or an install's. A plan
	// applies only to the same operation.
	RollbackTo int `json:"rollbackTo,omitempty"`
	// Operation is "uninstall" for an uninstall's plan (its manifest is the
	// last revision's, which Helm deletes); omitted otherwise.
	Operation    Op              `json:"operation,omitempty"`
	ChartRef     string          `json:"chartRef"`
	ChartDigest  string          `json:"chartDigest"`
	ValuesDigest string          `json:"valuesDigest"`
	Manifest     string          `json:"manifest"`
	Hooks        []*release.Hook `json:"hooks,omitempty"`
	Notes        string          `json:"notes,omitempty"`
	// Objects are the live states of the objects the plan changes.
	Objects []Object `json:"objects"`
	// Acknowledged are the destructive changes acknowledged when planning,
	// each bound to its fingerprint.
	Acknowledged []gate.Ack `json:"acknowledged,omitempty"`
	// Restart are the workloads --restart-stale restarts after Helm's
	// upgrade (plan.Plan.Restarts): the apply restarts exactly those.
	Restart []string `json:"restart,omitempty"`
	// MaskKey is the key Secret values were masked with in the reviewed
	// plan: the apply masks with it too, so live Secrets' state digests
	// and the markers shown compare equal. The file holds the values in
	// clear anyway.
	MaskKey []byte `json:"maskKey"`
	// Reports are the report of the plan as the plan job printed it (no
	// colour), by format (text, json, markdown): show-plan prints them
	// byte for byte without reaching the cluster.
	Reports map[string]string `json:"reports"`
	// InClear is set by Open when the file was not encrypted
	// (--plan-unencrypted).
	InClear bool `json:"-"`
}

// Provenance is who made a plan: the tool's version and, when the plan was
// made in CI, the commit and the pipeline run (GitHub Actions' GITHUB_SHA
// and GITHUB_RUN_ID, GitLab CI's CI_COMMIT_SHA and CI_PIPELINE_ID).
type Provenance struct {
	Tool     string `json:"tool"`
	Commit   string `json:"commit,omitempty"`
	Pipeline string `json:"pipeline,omitempty"`
}

// ProvenanceFrom is the provenance of a plan made by tool in the
// environment getenv reads.
func ProvenanceFrom(tool string, getenv func(string) string) Provenance {
	p := Provenance{Tool: tool}
	for _, ci := range [][2]string{{"GITHUB_SHA", "GITHUB_RUN_ID"}, {"CI_COMMIT_SHA", "CI_PIPELINE_ID"}} {
		if p.Commit == "" && p.Pipeline == "" {
			p.Commit, p.Pipeline = getenv(ci[0]), getenv(ci[1])
		}
	}
	return p
}

// Origin is one line saying who made the plan, when, and for which cluster,
// printed before the plan is applied or shown.
func (s *Plan) Origin() string {
	line := fmt.Sprintf("Saved plan of release %s/%s made %s by %s for cluster %s (context %q, kube-system UID %s)",
		s.Release.Namespace, s.Release.Name, s.Created.Format(time.RFC3339), s.PlannedBy.Tool, s.Cluster.Server, s.Cluster.Context, s.Cluster.KubeSystemUID)
	if s.PlannedBy.Commit != "" {
		line += ", commit " + s.PlannedBy.Commit
	}
	if s.PlannedBy.Pipeline != "" {
		line += ", pipeline " + s.PlannedBy.Pipeline
	}
	return line
}

// ClusterIdentity names one cluster: its API server URL, the UID of its
// kube-system namespace (which only a new cluster changes) and the
// kubeconfig context the plan was made with.
type ClusterIdentity struct {
	Server        string `json:"server"`
	KubeSystemUID string `json:"kubeSystemUID"`
	Context       string `json:"context"`
}

// Object pins the live state a change was planned against (for an
// object to create: that it does not exist; StateDigest is then empty). Apply
// compares the state digest (the object without status and server-managed
// fields): a status update by a controller does not make the plan stale.
type Object struct {
	Object          string `json:"object"`
	ResourceVersion string `json:"resourceVersion"`
	StateDigest     string `json:"stateDigest"`
}

// decodeStrict decodes a saved plan, refusing unknown fields, nulls and
// values of the wrong type with the path of the field.
func decodeStrict(data []byte) (*Plan, error) {
	var raw interface{}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if p := nullAt(raw, ""); p != "" {
		return nil, fmt.Errorf("field %s is null", p)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s Plan
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
func (s *Plan) digest() (string, error) {
	c := *s
	c.Seal = ""
	data, err := json.Marshal(&c)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

// Op is the operation a saved plan is of: only the same applies it.
type Op string

// Operations of a saved plan.
const (
	OpUpgrade   Op = "" // an upgrade's or an install's
	OpRollback  Op = "rollback"
	OpUninstall Op = "uninstall"
)

// op is the operation of the saved plan.
func (s *Plan) op() Op {
	if s.RollbackTo > 0 {
		return OpRollback
	}
	return s.Operation
}

// Source is what a saved plan is made of: the reviewed plan and its
// render, how they are applied, where and by whom they were planned.
type Source struct {
	Plan     *plan.Plan
	Rendered *render.Result
	// ChartRef, Render and Force are the plan request's: the chart as
	// given, the render flags and --force-replace.
	ChartRef string
	Render   render.Options
	Force    bool
	// Uninstall, set for an uninstall's plan, are its flags in place of
	// Render's and Force (see UninstallFlags).
	Uninstall map[string]interface{}
	// RestartStale is --restart-stale.
	RestartStale bool
	// Created is when the plan was made; Cluster where.
	Created time.Time
	Cluster ClusterIdentity
	// PlannedBy is who made the plan (tool version, CI commit and run).
	PlannedBy Provenance
	// MaskKey is the key the plan's Secret values were masked with.
	MaskKey []byte
	// Reports are the plan's report by format, as the plan job printed it.
	Reports map[string]string
}

// New returns the saved plan of src: the exact render, what it was planned
// against (release revision, chart, values, the live state of each object
// it changes), the apply flags and the acknowledgements given.
func New(src Source) *Plan {
	res := src.Rendered
	s := &Plan{
		Created:      src.Created.UTC().Truncate(time.Second),
		Cluster:      src.Cluster,
		PlannedBy:    src.PlannedBy,
		ApplyFlags:   withRestart(ApplyFlags(src.Render, src.Force), src.RestartStale),
		Operation:    OpUpgrade,
		RollbackTo:   res.RollbackTo,
		ChartRef:     redact.RedactURL(src.ChartRef), // a file kept and passed on: no chart URL's password
		ChartDigest:  ChartDigest(res.Chart),
		ValuesDigest: ValuesDigest(res.Values, src.Render),
		Manifest:     res.Next.Manifest,
		Hooks:        res.Next.Hooks,
		Notes:        res.Next.Info.Notes,
		Acknowledged: gate.Given(src.Plan),
		MaskKey:      src.MaskKey,
		Reports:      src.Reports,
	}
	if src.Uninstall != nil {
		s.ApplyFlags, s.Operation = src.Uninstall, OpUninstall
	}
	s.Release.Name, s.Release.Namespace = res.Next.Name, res.Next.Namespace
	if res.Last != nil {
		s.Release.LastRevision = res.Last.Version
	}
	s.Restart = restarts(src.Plan)
	for _, ch := range src.Plan.Changes {
		if ch.Action != plan.ActionNoop {
			s.Objects = append(s.Objects, Object{Object: ch.ID.String(),
				ResourceVersion: ch.LiveResourceVersion, StateDigest: StateDigest(ch)})
		}
	}
	return s
}

// check refuses the saved plan on another cluster, with other apply flags,
// or when older than maxAge (0: no limit).
func (s *Plan) check(id ClusterIdentity, flags map[string]interface{}, now time.Time, maxAge time.Duration) error {
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

// ApplyFlags are the flags that change what Helm applies or how, as JSON
// values keyed by option name: every render option except those that only
// locate the chart and values (their effect is pinned by the chart and
// values digests and the saved manifest) or that only change what is shown
// or how the plan was rendered, plus force (--force-replace).
func ApplyFlags(opts render.Options, force bool) map[string]interface{} {
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
	out["Force"] = force
	return out
}

// Acks are the acknowledgements the saved plan recorded, valid only for the
// same changes.
func (s *Plan) Acks() *gate.Acks { return gate.Bound(s.Acknowledged, "saved plan") }

// useIn checks that the release, chart and values are those of the saved
// plan and puts the saved render in place of the new one: what is applied is
// what was reviewed, even when templates are not deterministic.
func (s *Plan) useIn(res *render.Result, opts render.Options) error {
	last := 0
	if res.Last != nil {
		last = res.Last.Version
	}
	if res.RollbackTo != s.RollbackTo {
		return fmt.Errorf("saved plan is %s, not %s; apply it with the command that made it", operation(s.RollbackTo), operation(res.RollbackTo))
	}
	if last != s.Release.LastRevision {
		return fmt.Errorf("saved plan is stale: release %s moved from revision %d to %d since the plan; plan again", s.Release.Name, s.Release.LastRevision, last)
	}
	if ChartDigest(res.Chart) != s.ChartDigest {
		return fmt.Errorf("saved plan is stale: chart %s changed since the plan; plan again", s.ChartRef)
	}
	if ValuesDigest(res.Values, opts) != s.ValuesDigest {
		return errors.New("saved plan is stale: the values (-f, --set, --reuse-values, ...) differ from the plan's; plan again")
	}
	res.Next.Manifest = s.Manifest
	res.Next.Hooks = s.Hooks
	res.Next.Info.Notes = s.Notes
	return nil
}

// operation names what a plan of rollbackTo is of.
func operation(rollbackTo int) string {
	if rollbackTo > 0 {
		return fmt.Sprintf("of a rollback to revision %d", rollbackTo)
	}
	return "of an upgrade"
}

// words names op.
func (op Op) words() string {
	switch op {
	case OpRollback:
		return "of a rollback"
	case OpUninstall:
		return "of an uninstall"
	}
	return "of an upgrade"
}

// UninstallFlags are an uninstall's flags as a saved plan pins them (as
// ApplyFlags, through their JSON form): what Helm's uninstall is run with.
func UninstallFlags(flags any) map[string]interface{} {
	var out map[string]interface{}
	data, _ := json.Marshal(flags)
	_ = json.Unmarshal(data, &out)
	return out
}

// unmoved refuses the saved plan when an object it changes moved in the
// cluster since.
func (s *Plan) unmoved(p *plan.Plan) error {
	if err := s.sameRestarts(p); err != nil {
		return err
	}
	now := map[string]plan.Change{}
	for _, c := range p.Changes {
		now[c.ID.String()] = c
	}
	for _, o := range s.Objects {
		c := now[o.Object]
		if StateDigest(c) == o.StateDigest {
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

// StateDigest hashes the live object a change was planned against.
func StateDigest(c plan.Change) string {
	if c.Before == nil {
		return ""
	}
	data, _ := json.Marshal(c.Before.Object)
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// ChartDigest hashes every file of a chart and its subcharts, so a saved
// plan can tell whether the chart changed since.
func ChartDigest(ch *chart.Chart) string {
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

// ValuesDigest hashes the user-supplied values and the flags that decide how
// Helm combines them with the release's.
func ValuesDigest(values map[string]interface{}, opts render.Options) string {
	data, _ := json.Marshal(struct {
		Values                                      map[string]interface{}
		ReuseValues, ResetValues, ResetThenReuseVal bool
	}{values, opts.ReuseValues, opts.ResetValues, opts.ResetThenReuseValues})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// withRestart adds --restart-stale to flags (ApplyFlags) when on: a plan
// saved with it is applied with it, and one saved without it (or by a
// version that had no such flag) without it.
func withRestart(flags map[string]interface{}, on bool) map[string]interface{} {
	if on {
		flags["RestartStale"] = true
	}
	return flags
}

// restarts names the workloads p restarts after the upgrade.
func restarts(p *plan.Plan) []string {
	var out []string
	for _, c := range p.Restarts() {
		out = append(out, c.ID.String())
	}
	return out
}

// sameRestarts refuses the saved plan when the plan made now would restart
// other workloads than the reviewed one: the apply restarts exactly those
// that were shown.
func (s *Plan) sameRestarts(p *plan.Plan) error {
	now := restarts(p)
	if slices.Equal(now, s.Restart) {
		return nil
	}
	return fmt.Errorf("saved plan is stale: it restarts [%s] after the upgrade (--restart-stale), a plan now would restart [%s]; plan again",
		strings.Join(s.Restart, ", "), strings.Join(now, ", "))
}
