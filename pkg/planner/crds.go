package planner

import (
	"context"
	"fmt"
	"maps"
	"sort"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/classify"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// CRDFile is one file of a chart's crds/ directory (or a subchart's).
type CRDFile struct {
	// Name is the file's path with the chart's name, e.g.
	// "app/crds/widgets.yaml".
	Name string
	Data string
}

var crdGK = schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}

// splitCRDs parses crds/ files into their CRDs (other kinds there are not
// planned), each with its file as Source; a CRD defined twice counts once,
// as the first.
func splitCRDs(files []CRDFile, scoper manifest.Scoper) (*manifest.Set, error) {
	set := manifest.NewSet()
	for _, f := range files {
		objs, err := manifest.Split(f.Name, f.Data, "", scoper)
		if err != nil {
			return nil, err
		}
		for _, o := range objs.Objects() {
			if o.GVK.GroupKind() != crdGK || set.Get(o.ID) != nil {
				continue
			}
			o.Source = f.Name
			if err := set.Add(o); err != nil {
				return nil, err
			}
		}
	}
	return set, nil
}

// chartCRDs is what the CRD pass holds across the objects pass: the
// CRDs of the chart's crds/ directories, the kinds that exist once Helm
// created the CRDs it creates, and which objects the release's manifests
// name (kept small: the sets are dropped by the objects pass).
type chartCRDs struct {
	set       *manifest.Set
	kinds     map[schema.GroupKind]bool
	templated map[manifest.ObjectID]bool
}

// readCRDs is the CRD pass's first half, before the objects are evaluated:
// a custom resource whose CRD the install creates first is created after
// it, not refused as of an unknown kind.
func (p *Planner) readCRDs(in Input, ids []manifest.ObjectID, next *manifest.Set) (chartCRDs, error) {
	kinds := manifest.CRDKinds(next)
	set, err := splitCRDs(in.CRDs, p.Cluster)
	if err != nil {
		return chartCRDs{}, err
	}
	if in.Release.Installs() && !in.SkipCRDs {
		maps.Copy(kinds, manifest.CRDKinds(set)) // created before the templates' objects
	}
	var templated map[manifest.ObjectID]bool
	if set.Len() > 0 {
		templated = make(map[manifest.ObjectID]bool, len(ids))
		for _, id := range ids {
			templated[id] = true
		}
	}
	return chartCRDs{set: set, kinds: kinds, templated: templated}, nil
}

// crds is the CRD pass's second half, once the objects are evaluated: the
// templates' CRD updates judged against their custom resources, the
// crds/ CRDs planned among the changes in report order, and the fields
// of custom resources each CRD change prunes.
func (p *Planner) crds(ctx context.Context, in Input, changes []plan.Change, crds chartCRDs) ([]plan.Change, []string, error) {
	p.templateCRDs(ctx, changes)
	crdChanges, notes, err := p.crdChanges(ctx, in, crds.set, crds.templated)
	if err != nil {
		return nil, nil, err
	}
	changes = append(changes, crdChanges...)
	if len(crdChanges) > 0 {
		sort.SliceStable(changes, func(i, j int) bool { return changes[i].ID.Less(changes[j].ID) })
	}
	notePruned(changes, crds.set)
	return changes, notes, nil
}

// crdChanges plans the CRDs of the chart's crds/ directory. Helm creates
// them on install only (unless --skip-crds) and never upgrades or deletes
// them, so on an upgrade a CRD that differs from the live one, or is absent
// from the cluster, is a manual change (plan.ClassManual): the plan says
// what applying it would do to the existing custom resources, destructive
// when it makes them unreadable or loses their data, with their count.
// CRDs the last release's manifest or the new render holds too are planned
// with them: Helm applies (or deletes) those.
// Offline, the base chart's crds/ stand in for the live CRDs.
// templated are the objects of the last release's manifest and the new
// render (the sets themselves are dropped by then, see evaluations).
func (p *Planner) crdChanges(ctx context.Context, in Input, crds *manifest.Set, templated map[manifest.ObjectID]bool) ([]plan.Change, []string, error) {
	if crds.Len() == 0 {
		return nil, nil, nil
	}
	offline := p.Cluster.Offline
	if offline && in.BaseCRDsUnknown {
		return nil, []string{"offline: the chart's crds/ CRDs were not compared (no cluster, and the base is a manifest without crds/)"}, nil
	}
	var base *manifest.Set
	if offline {
		var err error
		if base, err = splitCRDs(in.PreviousCRDs, p.Cluster); err != nil {
			return nil, nil, err
		}
	}
	var changes []plan.Change
	var notes []string
	for _, o := range crds.Objects() {
		if templated[o.ID] {
			continue
		}
		c := plan.Change{ID: o.ID, APIVersion: o.GVK.GroupVersion().String(), Source: o.Source}
		var state live.State
		if offline {
			if b := base.Get(o.ID); b != nil {
				state.Obj = b.Obj // as written: Helm adds no metadata to crds/
			}
		} else {
			state = p.Cluster.Objects.Get(ctx, o, nil)
		}
		if state.Err != nil {
			notes = append(notes, fmt.Sprintf("%s (%s) not compared with the cluster's: %v", o.ID, o.Source, state.Err))
			continue
		}
		if state.Obj == nil {
			p.crdAbsent(&c, in, o)
		} else if err := p.crdUpdate(ctx, &c, in, o, state.Obj); err != nil {
			notes = append(notes, err.Error())
			continue
		}
		markIgnored(&c, in.Ignore)
		changes = append(changes, c)
	}
	return changes, notes, nil
}

// crdAbsent plans a crds/ CRD the cluster (offline: the base chart) does
// not have.
func (p *Planner) crdAbsent(c *plan.Change, in Input, o *manifest.Object) {
	c.Action, c.After = plan.ActionCreate, p.shown(o.Obj)
	why := "helm upgrade does not create it (Helm creates crds/ only on install)"
	switch {
	case in.Release.Installs() && !in.SkipCRDs:
		c.Notes = append(c.Notes, "from the chart's crds/ directory: the install creates it before the chart's other objects; Helm never upgrades or deletes it afterwards")
		return
	case in.Release.Installs():
		why = "--skip-crds: the install does not create it"
	case p.Cluster.Offline:
		why = "not in the base chart's crds/: " + why
	default:
		why = "not in the cluster: " + why
	}
	c.Class = plan.ClassManual
	c.Reasons = []plan.Reason{{Source: plan.SourceHelm, After: "present", Message: fmt.Sprintf(
		"%s; apply it yourself (kubectl apply -f %s) before the upgrade if the chart's objects use its kinds", why, o.Source)}}
}

// crdUpdate compares a crds/ CRD with the live one (offline: the base
// chart's).
func (p *Planner) crdUpdate(ctx context.Context, c *plan.Change, in Input, o *manifest.Object, liveObj *unstructured.Unstructured) error {
	var live, next apiextv1.CustomResourceDefinition
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(liveObj.Object, &live); err != nil {
		return fmt.Errorf("%s: reading the live CRD: %w", c.ID, err)
	}
	if o.GVK.Version != "v1" {
		return fmt.Errorf("%s (%s) not compared: written as %s, which Kubernetes no longer serves", c.ID, o.Source, o.GVK.GroupVersion())
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Obj.Object, &next); err != nil {
		return fmt.Errorf("%s (%s): %w", c.ID, o.Source, err)
	}
	c.LiveResourceVersion = liveObj.GetResourceVersion()
	c.Before = p.shown(liveObj)
	findings := classify.CRD(&live, &next)
	note := crdNote(in, o.Source)
	if len(findings) == 0 {
		c.Action, c.After = plan.ActionNoop, c.Before
		c.Notes = append(c.Notes, note)
		return nil
	}
	c.Action, c.Class, c.After = plan.ActionUpdate, plan.ClassManual, p.shown(o.Obj)
	for _, f := range findings {
		c.Destructive = c.Destructive || f.Destructive
		c.Reasons = append(c.Reasons, plan.Reason{Path: f.Path, Message: f.Message, Source: plan.SourceCatalogue, Before: f.Before, After: f.After})
	}
	if c.Destructive {
		c.Reasons = append(c.Reasons, p.countResources(ctx, &live))
	}
	c.Notes = append(c.Notes, note)
	return nil
}

// templateCRDs adds to each update of a CRD the templates define (Helm
// applies those) what it does to the existing custom resources: a served
// version removed, a schema narrowed, ... make the update destructive, with
// the count of resources. The server's dry-run already refuses what it
// cannot apply (a stored version removed, a scope change): those stay
// invalid.
func (p *Planner) templateCRDs(ctx context.Context, changes []plan.Change) {
	for i := range changes {
		c := &changes[i]
		if c.ID.Group != crdGK.Group || c.ID.Kind != crdGK.Kind || c.APIVersion != "apiextensions.k8s.io/v1" ||
			c.Action != plan.ActionUpdate || c.Class == plan.ClassInvalid || c.Before == nil || c.After == nil {
			continue
		}
		var live, next apiextv1.CustomResourceDefinition
		if runtime.DefaultUnstructuredConverter.FromUnstructured(c.Before.Object, &live) != nil ||
			runtime.DefaultUnstructuredConverter.FromUnstructured(c.After.Object, &next) != nil {
			continue
		}
		var reasons []plan.Reason
		for _, f := range classify.CRD(&live, &next) {
			if f.Destructive {
				reasons = append(reasons, plan.Reason{Path: f.Path, Message: f.Message, Source: plan.SourceCatalogue, Before: f.Before, After: f.After})
			}
		}
		if len(reasons) > 0 {
			c.Destructive = true
			c.Reasons = append(append(c.Reasons, reasons...), p.countResources(ctx, &live))
		}
	}
}

// crdNote is Helm's rule for a crds/ CRD that exists, as a note.
func crdNote(in Input, file string) string {
	if in.Release.Installs() {
		return fmt.Sprintf("from the chart's crds/ directory (%s): it exists already, and the install leaves it as it is (Helm creates crds/ only when absent, and never upgrades them); a change to it happens only when you apply it yourself (kubectl apply -f %s)", file, file)
	}
	s := fmt.Sprintf("from the chart's crds/ directory (%s): helm upgrade never applies crds/ (Helm creates them only on install, and never upgrades or deletes them), so a change to it does not happen through the upgrade; apply it yourself (kubectl apply -f %s)", file, file)
	if in.SkipCRDs {
		s += "; --skip-crds changes nothing here"
	}
	return s
}

// countResources says how many custom resources the destructive findings
// of live's change affect: all of them, as every served version reads
// every object.
func (p *Planner) countResources(ctx context.Context, live *apiextv1.CustomResourceDefinition) plan.Reason {
	r := plan.Reason{Path: "spec.names.plural", Source: plan.SourceServer}
	version := classify.CRDAffectedVersion(live)
	switch {
	case p.Cluster.Offline || p.Cluster.Counter == nil:
		r.Source, r.Message = plan.SourceCatalogue, "offline: the existing "+live.Spec.Names.Kind+" resources were not counted"
		return r
	case version == "":
		r.Message = "no version of " + live.Spec.Names.Kind + " is served: its resources cannot be counted"
		return r
	}
	gvr := schema.GroupVersionResource{Group: live.Spec.Group, Version: version, Resource: live.Spec.Names.Plural}
	n, err := p.Cluster.Counter.CountResources(ctx, gvr)
	if err != nil {
		r.Message = fmt.Sprintf("the existing %s resources could not be counted: %v", live.Spec.Names.Kind, err)
		return r
	}
	where := ""
	if live.Spec.Scope == apiextv1.NamespaceScoped {
		where = " in all namespaces"
	}
	r.Message = fmt.Sprintf("%d existing %s resource(s)%s are affected", n, live.Spec.Names.Kind, where)
	return r
}
