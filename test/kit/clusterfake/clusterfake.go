// Package clusterfake holds in-memory fakes of the small interfaces the
// planner asks the cluster (planner.Cluster's Objects, DryRuns, Budgets,
// Observers, Counter), for unit tests: each test swaps the one it needs into
// an offline planner.Cluster. It does not import the planner, so the
// planner's own tests can use it. Reader fakes live.Reader, what the rollout
// watch reads through; Resources fakes the guard's guard.Resources.
package clusterfake

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/predict"
)

// Objects answers Get with its function and reads nothing in bulk.
type Objects func(ctx context.Context, obj, prev *manifest.Object) live.State

// Prefetch implements planner.Objects: nothing in bulk.
func (Objects) Prefetch(context.Context, []*manifest.Object, live.Lean) map[manifest.ObjectID]live.State {
	return nil
}

// Get implements planner.Objects.
func (f Objects) Get(ctx context.Context, obj, prev *manifest.Object) live.State {
	return f(ctx, obj, prev)
}

// Budgets are the PodDisruptionBudgets of every namespace.
type Budgets []live.Budget

// Budgets implements planner.BudgetLister.
func (b Budgets) Budgets(context.Context, string) ([]live.Budget, error) { return b, nil }

// Observed is what Observed answers for every object ("": nothing but the
// server's built-in code sees a patch).
type Observed string

// Observed implements planner.Observers.
func (o Observed) Observed(context.Context, *manifest.Object) string { return string(o) }

// Warns implements planner.Observers: what Observed answers.
func (o Observed) Warns(context.Context, *unstructured.Unstructured, string) string {
	return string(o)
}

// PoliciesAdmit implements planner.Observers: what Observed answers.
func (o Observed) PoliciesAdmit(context.Context, *unstructured.Unstructured, *unstructured.Unstructured, bool, string) string {
	return string(o)
}

// Policies is planner.Observers where nothing but validating admission
// policies see an update: PoliciesAdmit answers Answer and records what it
// was asked.
type Policies struct {
	Answer string
	mu     sync.Mutex
	Asked  []PolicyAsk
}

// PolicyAsk is one PoliciesAdmit call.
type PolicyAsk struct {
	Stored, Old *unstructured.Unstructured
	Apply       bool
}

// Observed implements planner.Observers.
func (*Policies) Observed(context.Context, *manifest.Object) string { return "" }

// Warns implements planner.Observers.
func (*Policies) Warns(context.Context, *unstructured.Unstructured, string) string { return "" }

// PoliciesAdmit implements planner.Observers.
func (p *Policies) PoliciesAdmit(_ context.Context, stored, old *unstructured.Unstructured, apply bool, _ string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.Asked = append(p.Asked, PolicyAsk{Stored: stored.DeepCopy(), Old: old.DeepCopy(), Apply: apply})
	return p.Answer
}

// Counter counts N custom resources of every kind, and records which it
// was asked to count.
type Counter struct {
	N       int64
	mu      sync.Mutex
	Counted []schema.GroupVersionResource
}

// CountResources implements planner.ResourceCounter.
func (c *Counter) CountResources(_ context.Context, gvr schema.GroupVersionResource) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.Counted = append(c.Counted, gvr)
	return c.N, nil
}

// Server answers like an API server holding one ConfigMap (Live) whose
// data.key another field manager took (kubectl apply --server-side
// --field-manager=someone-else --force-conflicts): a server-side apply of
// data.key conflicts unless forced. A dry-run patch answers
// live.ErrNoServer unless MergePatches; a dry-run replace (PUT) answers
// ReplaceErr when set, else stores the object as sent, keeping of Live only
// what the API server keeps on update (uid, creationTimestamp, status). It
// implements planner.Objects and planner.DryRunner.
type Server struct {
	Live  *unstructured.Unstructured
	Owner string // the manager owning data.key; someone-else when ""
	// MergePatches: a dry-run patch is applied to Live as the server's
	// strategic merge does.
	MergePatches bool
	// ReplaceErr is the server's refusal of every dry-run replace.
	ReplaceErr error
	mu         sync.Mutex // the planner evaluates objects concurrently
	Applies    []bool     // force of each DryRunApply
	Patches    int
	Creates    int
	// Replaced are the resourceVersions each DryRunReplace was sent with.
	Replaced []string
}

// Prefetch implements planner.Objects: nothing in bulk.
func (*Server) Prefetch(context.Context, []*manifest.Object, live.Lean) map[manifest.ObjectID]live.State {
	return nil
}

// Get implements planner.Objects.
func (s *Server) Get(_ context.Context, obj, _ *manifest.Object) live.State {
	if obj.ID.Name != s.Live.GetName() {
		return live.State{}
	}
	return live.State{Obj: s.Live.DeepCopy()}
}

// DryRunCreate implements planner.DryRunner: obj as it is.
func (s *Server) DryRunCreate(_ context.Context, obj *manifest.Object) (*unstructured.Unstructured, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Creates++
	return obj.Obj, nil
}

// DryRunPatch implements planner.DryRunner.
func (s *Server) DryRunPatch(_ context.Context, _ *manifest.Object, pt types.PatchType, patch []byte) (*unstructured.Unstructured, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Patches++
	if !s.MergePatches {
		return nil, live.ErrNoServer
	}
	return predict.NewPatcher().ApplyLocal(s.Live, patch, pt)
}

// DryRunApply implements planner.DryRunner.
func (s *Server) DryRunApply(_ context.Context, obj *manifest.Object, force bool) (*unstructured.Unstructured, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Applies = append(s.Applies, force)
	if obj.ID.Name != s.Live.GetName() {
		return obj.Obj, nil // created
	}
	want, sets, _ := unstructured.NestedString(obj.Obj.Object, "data", "key")
	have, _, _ := unstructured.NestedString(s.Live.Object, "data", "key")
	if sets && want != have && !force {
		msg := `conflict with "someone-else"`
		if s.Owner != "" {
			msg = `conflict with "` + s.Owner + `" using v1`
		}
		return nil, apierrors.NewApplyConflict([]metav1.StatusCause{{
			Type: metav1.CauseTypeFieldManagerConflict, Message: msg, Field: ".data.key"}},
			"Apply failed with 1 conflict: "+msg+": .data.key")
	}
	out := s.Live.DeepCopy()
	for k, v := range obj.Obj.Object["data"].(map[string]interface{}) {
		_ = unstructured.SetNestedField(out.Object, v, "data", k)
	}
	return out, nil
}

// DryRunReplace implements planner.DryRunner.
func (s *Server) DryRunReplace(_ context.Context, obj *manifest.Object, resourceVersion string) (*unstructured.Unstructured, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Replaced = append(s.Replaced, resourceVersion)
	if s.ReplaceErr != nil {
		return nil, s.ReplaceErr
	}
	out := obj.Obj.DeepCopy()
	out.SetResourceVersion(resourceVersion)
	out.SetUID(s.Live.GetUID())
	out.SetCreationTimestamp(s.Live.GetCreationTimestamp())
	if status, ok := s.Live.Object["status"]; ok {
		out.Object["status"] = status
	}
	return out, nil
}

// Warner answers every dry-run create AlreadyExists, with a warning for
// each of Unknown through the request's context, as the API server does
// with fieldValidation=Warn (the run's warning handler collects them); it
// counts the creates. Patches and applies answer live.ErrNoServer.
type Warner struct {
	Unknown []string
	Creates atomic.Int32
}

// DryRunCreate implements planner.DryRunner.
func (w *Warner) DryRunCreate(ctx context.Context, obj *manifest.Object) (*unstructured.Unstructured, error) {
	w.Creates.Add(1)
	for _, f := range w.Unknown {
		predict.Collect(ctx, `unknown field "`+f+`"`)
	}
	return nil, apierrors.NewAlreadyExists(schema.GroupResource{Group: obj.GVK.Group, Resource: strings.ToLower(obj.GVK.Kind) + "s"}, obj.ID.Name)
}

// DryRunPatch implements planner.DryRunner.
func (*Warner) DryRunPatch(context.Context, *manifest.Object, types.PatchType, []byte) (*unstructured.Unstructured, error) {
	return nil, live.ErrNoServer
}

// DryRunApply implements planner.DryRunner.
func (*Warner) DryRunApply(context.Context, *manifest.Object, bool) (*unstructured.Unstructured, error) {
	return nil, live.ErrNoServer
}

// DryRunReplace implements planner.DryRunner.
func (*Warner) DryRunReplace(context.Context, *manifest.Object, string) (*unstructured.Unstructured, error) {
	return nil, live.ErrNoServer
}
