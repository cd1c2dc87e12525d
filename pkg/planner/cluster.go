package planner

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/util/retry"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/predict"
)

// Cluster is what the planner asks the cluster, as small interfaces that
// offline, live and tests swap one at a time (kubectl diff asks its Object
// the same way: Live, Merged, Name). Live.Parts answers from the API server;
// Offline.Parts from the base render alone.
type Cluster struct {
	manifest.Scoper
	// Offline reports that no server answers: verdicts come from the
	// catalogue, and drift cannot be seen.
	Offline   bool
	Objects   Objects
	DryRuns   DryRunner
	Claims    ClaimLister
	Budgets   BudgetLister
	Observers Observers
	Schemas   Schemas
	// Counter is nil where custom resources cannot be counted.
	Counter ResourceCounter
	// Workloads is nil where the workloads outside the release are not
	// read.
	Workloads WorkloadLister
}

// Objects says what is live.
type Objects interface {
	// Prefetch reads in bulk what it can (paged LISTs per large group of
	// one kind); the states it returns need no Get, and each is decoded
	// (live.State.Decode) without managedFields where lean says.
	Prefetch(ctx context.Context, objs []*manifest.Object, lean live.Lean) map[manifest.ObjectID]live.State
	// Get returns one object's live state; prev is its form in the last
	// release (nil if new).
	Get(ctx context.Context, obj, prev *manifest.Object) live.State
}

// DryRunner says what the server would store.
type DryRunner interface {
	// DryRunCreate and DryRunPatch return the object the server would
	// store, or its refusal; live.ErrNoServer when none can be asked, and a
	// *live.KindNotServedError when the cluster does not serve the kind.
	DryRunCreate(ctx context.Context, obj *manifest.Object) (*unstructured.Unstructured, error)
	DryRunPatch(ctx context.Context, obj *manifest.Object, pt types.PatchType, patch []byte) (*unstructured.Unstructured, error)
	// DryRunApply sends obj as Helm 4's server-side apply (field manager
	// helm, force only with forceConflicts); errors as DryRunPatch, and a
	// field-manager conflict (predict.Conflicts) when another manager owns a
	// field obj sets.
	DryRunApply(ctx context.Context, obj *manifest.Object, forceConflicts bool) (*unstructured.Unstructured, error)
	// DryRunReplace sends obj as Helm's --force (--force-replace) PUT of
	// an object that exists, at the live object's resourceVersion; errors
	// as DryRunPatch.
	DryRunReplace(ctx context.Context, obj *manifest.Object, resourceVersion string) (*unstructured.Unstructured, error)
}

// ClaimLister lists the claims of a StatefulSet.
type ClaimLister interface {
	// Claims returns the PersistentVolumeClaims of namespace whose names
	// match, with the reclaim policy of the volume each is bound to;
	// live.ErrNoServer offline.
	Claims(ctx context.Context, namespace string, match func(name string) bool) ([]Claim, error)
}

// BudgetLister lists disruption budgets.
type BudgetLister interface {
	// Budgets returns the PodDisruptionBudgets of namespace; live.ErrNoServer
	// offline.
	Budgets(ctx context.Context, namespace string) ([]live.Budget, error)
}

// Observers says who sees a patch.
type Observers interface {
	// Observed returns "" when nothing but the API server's built-in code
	// sees a patch of obj: no admission webhook or policy may see it, and
	// the authorizer certainly allows it. Otherwise it names who may, or why
	// that is unknown; offline it always does (there is no server whose
	// answer to derive).
	Observed(ctx context.Context, obj *manifest.Object) string
	// PoliciesAdmit returns "" when every ValidatingAdmissionPolicy that
	// sees the update storing stored over old admits it without a
	// warning, evaluated as the server evaluates it; else why the server
	// must be asked. apply: Helm 4's server-side apply, else Helm 3's
	// patch (their field managers differ). Offline it always asks.
	PoliciesAdmit(ctx context.Context, stored, old *unstructured.Unstructured, apply bool, serverVersion string) string
	// Warns returns "" when the server cannot warn about an update that
	// stores stored, whatever it changes (some update strategies warn
	// about the whole object, a Service's among them; PodSecurity
	// admission evaluates a pod controller's template), else why it may;
	// offline it always may.
	// serverVersion is the API server's (v1.37.2).
	Warns(ctx context.Context, stored *unstructured.Unstructured, serverVersion string) string
}

// Schemas types objects as the server does.
type Schemas interface {
	// TypeConverter returns the structured-merge-diff types of gv's kinds
	// as the server merges server-side applies by (its OpenAPI schemas);
	// an error when they cannot be read, live.ErrNoServer offline.
	TypeConverter(ctx context.Context, gv schema.GroupVersion) (managedfields.TypeConverter, error)
}

// ResourceCounter counts the custom resources of a CRD.
type ResourceCounter interface {
	CountResources(ctx context.Context, gvr schema.GroupVersionResource) (int64, error)
}

// Parts returns l as the planner's small interfaces.
func (l Live) Parts() Cluster {
	return Cluster{Scoper: l, Objects: l, DryRuns: l, Claims: l, Budgets: l, Observers: l, Schemas: l, Counter: l, Workloads: l}
}

// Parts returns o as the planner's small interfaces; it counts no
// custom resources.
func (o Offline) Parts() Cluster {
	return Cluster{Scoper: o, Offline: true, Objects: o, DryRuns: o, Claims: o, Budgets: o, Observers: o, Schemas: o, Workloads: o}
}

// Budgets implements BudgetLister.
func (l Live) Budgets(ctx context.Context, namespace string) ([]live.Budget, error) {
	return l.Cluster.Budgets(ctx, namespace)
}

// Budgets implements BudgetLister.
func (Offline) Budgets(context.Context, string) ([]live.Budget, error) {
	return nil, live.ErrNoServer
}

// Claim is a PersistentVolumeClaim and the volume bound to it.
type Claim struct {
	Name string
	// Volume is the bound PersistentVolume ("" when unbound) and
	// ReclaimPolicy its persistentVolumeReclaimPolicy ("" when unknown).
	Volume, ReclaimPolicy string
	// Size is the claim's capacity (status.capacity.storage, else what it
	// requests), "" when neither is set.
	Size string
}

// Claims implements ClaimLister.
func (l Live) Claims(ctx context.Context, namespace string, match func(string) bool) ([]Claim, error) {
	items, err := l.Cluster.Claims(ctx, namespace, match)
	if err != nil {
		return nil, fmt.Errorf("listing PersistentVolumeClaims in %s: %w", namespace, err)
	}
	var out []Claim
	for _, item := range items {
		c := Claim{Name: item.GetName(), Size: ClaimSize(&item)}
		c.Volume, _, _ = unstructured.NestedString(item.Object, "spec", "volumeName")
		if c.Volume != "" {
			if pv, err := l.Volume(ctx, c.Volume); err == nil {
				c.ReclaimPolicy, _, _ = unstructured.NestedString(pv.Object, "spec", "persistentVolumeReclaimPolicy")
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// Claims implements ClaimLister.
func (Offline) Claims(context.Context, string, func(string) bool) ([]Claim, error) {
	return nil, live.ErrNoServer
}

// Live is a Cluster backed by the API server. Observers, read once per plan,
// say who besides the server's built-in code sees a patch; nil: unknown,
// every update is sent as a dry-run.
type Live struct {
	*live.Cluster
	Observers *live.Observers
	// Early, when set, holds LISTs started before the plan (during the
	// render) that Prefetch takes its groups from.
	Early *live.Early
	// Schemas, when set, types objects for the server-side apply decided
	// locally (see Planner.decideApply); nil: every apply is sent.
	Schemas *live.Schemas
	// FieldManager is the server-side apply's field manager; "": Helm's.
	FieldManager string
}

// TypeConverter implements Schemas.
func (l Live) TypeConverter(ctx context.Context, gv schema.GroupVersion) (managedfields.TypeConverter, error) {
	return l.Schemas.TypeConverter(ctx, gv)
}

// Prefetch implements Objects.
func (l Live) Prefetch(ctx context.Context, objs []*manifest.Object, lean live.Lean) map[manifest.ObjectID]live.State {
	return l.Cluster.Prefetch(ctx, objs, live.MinListGroup, lean, l.Early)
}

// Get implements Objects.
func (l Live) Get(ctx context.Context, obj, _ *manifest.Object) live.State {
	return l.Cluster.Get(ctx, obj)
}

// Observed implements Observers.
func (l Live) Observed(ctx context.Context, obj *manifest.Object) string {
	if l.Observers == nil {
		return "observers not read"
	}
	_, mapping, err := l.Resource(obj.GVK, obj.ID.Namespace)
	if err != nil {
		return err.Error()
	}
	if who := l.Observers.AdmissionSees(ctx, mapping.Resource, "UPDATE"); who != "" {
		return who
	}
	if !l.Observers.MayPatch(ctx, mapping.Resource, obj.ID.Namespace, obj.ID.Name) {
		return "the authorizer may refuse the patch"
	}
	return ""
}

// PoliciesAdmit implements Observers.
func (l Live) PoliciesAdmit(ctx context.Context, stored, old *unstructured.Unstructured, apply bool, serverVersion string) string {
	if l.Observers == nil {
		return "observers not read"
	}
	_, mapping, err := l.Resource(stored.GroupVersionKind(), stored.GetNamespace())
	if err != nil {
		return err.Error()
	}
	manager := predict.FieldManager // DryRunPatch's, and DryRunApply's by default
	if apply && l.FieldManager != "" {
		manager = l.FieldManager
	}
	return l.Observers.PoliciesAdmit(ctx, live.PolicyRequest{GVR: mapping.Resource, Object: stored, Old: old,
		FieldManager: manager, ServerVersion: serverVersion})
}

// Warns implements Observers.
func (l Live) Warns(ctx context.Context, stored *unstructured.Unstructured, serverVersion string) string {
	if why := predict.UpdateWarns(stored); why != "" {
		return why
	}
	if l.Observers == nil {
		return "observers not read"
	}
	return l.Observers.PodSecurityWarns(ctx, stored, serverVersion)
}

// DryRunCreate implements DryRunner.
func (l Live) DryRunCreate(ctx context.Context, obj *manifest.Object) (*unstructured.Unstructured, error) {
	ri, _, err := l.Resource(obj.GVK, obj.ID.Namespace)
	if err != nil {
		return nil, err
	}
	return predict.DryRunCreate(ctx, ri, obj.Obj)
}

// DryRunPatch implements DryRunner.
func (l Live) DryRunPatch(ctx context.Context, obj *manifest.Object, pt types.PatchType, patch []byte) (*unstructured.Unstructured, error) {
	ri, _, err := l.Resource(obj.GVK, obj.ID.Namespace)
	if err != nil {
		return nil, err
	}
	return predict.DryRunPatch(ctx, ri, obj.ID.Name, pt, patch)
}

// DryRunApply implements DryRunner.
func (l Live) DryRunApply(ctx context.Context, obj *manifest.Object, forceConflicts bool) (*unstructured.Unstructured, error) {
	ri, _, err := l.Resource(obj.GVK, obj.ID.Namespace)
	if err != nil {
		return nil, err
	}
	if l.FieldManager != "" {
		return predict.DryRunApplyAs(ctx, ri, obj.Obj, forceConflicts, l.FieldManager)
	}
	return predict.DryRunApply(ctx, ri, obj.Obj, forceConflicts)
}

// DryRunReplace implements DryRunner. Helm's --force PUT carries the
// resourceVersion it reads right before it (resource.Helper.Replace with
// overwrite), so a controller that wrote the object since the plan read it
// (a Job's status) makes no conflict there: on a conflict the PUT is asked
// again with the version read now, not taken for an answer about the
// object.
func (l Live) DryRunReplace(ctx context.Context, obj *manifest.Object, resourceVersion string) (*unstructured.Unstructured, error) {
	ri, _, err := l.Resource(obj.GVK, obj.ID.Namespace)
	if err != nil {
		return nil, err
	}
	var out *unstructured.Unstructured
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var err error
		out, err = predict.DryRunReplace(ctx, ri, obj.Obj, resourceVersion)
		if apierrors.IsConflict(err) {
			cur, gerr := l.Lookup(ctx, obj.GVK, obj.ID.Namespace, obj.ID.Name)
			switch {
			case gerr != nil:
				return gerr
			case cur == nil:
				return fmt.Errorf("%s was deleted since the plan read it", obj.ID)
			}
			resourceVersion = cur.GetResourceVersion()
		}
		return err
	})
	return out, err
}

// Offline is a Cluster without a server, for the pre-merge gate: the base
// render stands in for the live objects, as if Helm had applied it for
// Release in Namespace, and every dry-run answers live.ErrNoServer.
type Offline struct {
	manifest.StaticScoper
	Release, Namespace string
}

// Prefetch implements Objects.
func (Offline) Prefetch(context.Context, []*manifest.Object, live.Lean) map[manifest.ObjectID]live.State {
	return nil
}

// Get implements Objects: the base form itself, given the metadata Helm adds
// when it applies — in place, so that it is also the three-way patch's
// original, as the last release's manifest is when Helm really applied it.
func (o Offline) Get(_ context.Context, _, prev *manifest.Object) live.State {
	if prev == nil {
		return live.State{}
	}
	addHelmMetadata(prev.Obj, o.Release, o.Namespace)
	return live.State{Obj: prev.Obj}
}

// TypeConverter implements Schemas.
func (Offline) TypeConverter(context.Context, schema.GroupVersion) (managedfields.TypeConverter, error) {
	return nil, live.ErrNoServer
}

// Observed implements Observers.
func (Offline) Observed(context.Context, *manifest.Object) string { return "offline" }

// PoliciesAdmit implements Observers.
func (Offline) PoliciesAdmit(context.Context, *unstructured.Unstructured, *unstructured.Unstructured, bool, string) string {
	return "offline"
}

// Warns implements Observers.
func (Offline) Warns(context.Context, *unstructured.Unstructured, string) string { return "offline" }

// DryRunCreate implements DryRunner.
func (Offline) DryRunCreate(context.Context, *manifest.Object) (*unstructured.Unstructured, error) {
	return nil, live.ErrNoServer
}

// DryRunPatch implements DryRunner.
func (Offline) DryRunPatch(context.Context, *manifest.Object, types.PatchType, []byte) (*unstructured.Unstructured, error) {
	return nil, live.ErrNoServer
}

// DryRunApply implements DryRunner.
func (Offline) DryRunApply(context.Context, *manifest.Object, bool) (*unstructured.Unstructured, error) {
	return nil, live.ErrNoServer
}

// DryRunReplace implements DryRunner.
func (Offline) DryRunReplace(context.Context, *manifest.Object, string) (*unstructured.Unstructured, error) {
	return nil, live.ErrNoServer
}
