package verb

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/planner"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/releasestate"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/report"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/savedplan"
)

// UninstallRequest is `uninstall RELEASE` with helm uninstall's flags.
// Its JSON form is those flags alone: what a saved plan pins.
type UninstallRequest struct {
	ReleaseName string `json:"-"`
	// KeepHistory, Cascade (background, orphan, foreground), DisableHooks,
	// Wait, Timeout and Description are helm uninstall's flags.
	KeepHistory  bool
	Cascade      string
	DisableHooks bool
	Wait         bool
	Timeout      time.Duration
	Description  string
	// ForApply: the plan is to be applied (the Lease is read for the
	// apply to take, as for an upgrade).
	ForApply bool `json:"-"`
	// Saved, when set, is the reviewed plan of this uninstall to apply
	// (--plan): refused if anything moved since, or if older than
	// SavedMaxAge (0: no limit).
	Saved       *savedplan.Plan `json:"-"`
	SavedMaxAge time.Duration   `json:"-"`
}

// PlannedUninstall is an uninstall's plan with what its apply needs.
type PlannedUninstall struct {
	Plan    *plan.Plan
	Request UninstallRequest
	// Left are the objects the uninstall leaves in the cluster, each with
	// why (also in the plan's notes).
	Left  []string
	Lease *releasestate.LeaseObservation
	// Release is the revision Helm's uninstall deletes (for a saved plan).
	Release *release.Release
}

// leftPrefix starts the plan notes that name what an uninstall leaves.
const leftPrefix = "left in the cluster: "

// PlanUninstall plans helm uninstall of req.ReleaseName: the planner's
// delete path over the newest revision's manifest (what Helm deletes), with
// its data-loss analysis, and what stays behind. It sends no write.
func (c *Config) PlanUninstall(ctx context.Context, req UninstallRequest) (*PlannedUninstall, error) {
	ctx, cancel := context.WithTimeout(ctx, req.Timeout)
	defer cancel()
	defer c.boundByContext(ctx)()
	planned, err := c.planUninstall(ctx, req)
	return planned, c.timedOut(err)
}

func (c *Config) planUninstall(ctx context.Context, req UninstallRequest) (*PlannedUninstall, error) {
	state, replay, err := c.startPlan(ctx, req.ReleaseName, req.ForApply, req.Saved, savedplan.Run{
		Op: savedplan.OpUninstall, Uninstall: req.flags(), MaxAge: req.SavedMaxAge})
	if err != nil {
		return nil, err
	}
	lease := state.Lease
	rel, err := c.lastRevision(req.ReleaseName, state)
	if err != nil {
		return nil, err
	}
	if err := replay.UseIn(uninstallSource(rel)); err != nil {
		return nil, err
	}
	c.progress("Planning the uninstall of %s against the cluster", req.ReleaseName)
	// Helm deletes the newest revision's manifest: planned as an upgrade
	// to nothing, every object goes through the planner's delete path.
	in := planner.Input{
		Release: plan.Release{Name: rel.Name, Namespace: rel.Namespace, Revision: rel.Version, CurrentRevision: rel.Version,
			Chart: chartRef(rel.Chart), Operation: plan.OperationUninstall, ApplyMethod: plan.ApplyMethodCSA},
		PreviousManifest: rel.Manifest,
		Hooks:            hookManifests(rel.Hooks), // pre/post-delete run from them
		PreviousHooks:    hookManifests(rel.Hooks),
		HooksDisabled:    req.DisableHooks,
	}
	pl := c.planner(planner.Live{Cluster: c.Cluster}.Parts(), c.ServerVersion)
	p, err := pl.Plan(ctx, in)
	if err != nil {
		return nil, err
	}
	if err := c.gateGuardedDeletes(ctx, p, req.Cascade == "orphan"); err != nil {
		return nil, err
	}
	if err := replay.Unmoved(p); err != nil {
		return nil, err
	}
	left, err := c.leftBehind(ctx, p, rel)
	if err != nil {
		return nil, err
	}
	for i, l := range left {
		left[i] = c.Sanitizer.Text(l, redact.MessageLimit)
		p.Notes = append(p.Notes, leftPrefix+left[i])
	}
	if note := lease.Note(); note != "" {
		p.Notes = append(p.Notes, c.Sanitizer.Text(note, redact.RecordLimit))
	}
	return &PlannedUninstall{Plan: p, Request: req, Left: left, Lease: lease, Release: rel}, nil
}

// lastRevision is the revision helm uninstall deletes: the newest, whatever
// its status, refused when the release is not installed.
// noReleaseError is the error of an uninstall of a release without
// history: it matches releasestate.ErrReleaseNotFound, which helm uninstall
// --ignore-not-found treats as success.
type noReleaseError string

func (e noReleaseError) Error() string { return string(e) }
func (noReleaseError) Unwrap() error   { return releasestate.ErrReleaseNotFound }

func (c *Config) lastRevision(name string, state *releasestate.State) (*release.Release, error) {
	hist, err := state.History, state.HistoryErr
	if err != nil {
		return nil, fmt.Errorf("release %q in namespace %s: reading its history: %w", name, c.Namespace, err)
	}
	if len(hist) == 0 {
		return nil, noReleaseError(fmt.Sprintf("release %q: not found in namespace %s; nothing to uninstall", name, c.Namespace))
	}
	if hist[0].Info.Status == release.StatusUninstalled {
		return nil, fmt.Errorf("release %q in namespace %s: already uninstalled (history kept); nothing to uninstall", name, c.Namespace)
	}
	if hist[0].Chart == nil || hist[0].Chart.Metadata == nil {
		return nil, fmt.Errorf("release %q in namespace %s revision %d: the record holds no chart", name, c.Namespace, hist[0].Version)
	}
	return hist[0], nil
}

// leftBehind names what helm uninstall does not delete, each with why:
// objects kept by their resource policy, the claims the StatefulSets'
// volumeClaimTemplates made (never deleted, helm#5156, unless the
// StatefulSet's retention policy deletes them), CRDs of the chart's crds/
// (Helm never deletes them), and the hook objects present (uninstall
// deletes only its own pre/post-delete hooks, as their policies say).
func (c *Config) leftBehind(ctx context.Context, p *plan.Plan, rel *release.Release) ([]string, error) {
	var left []string
	for _, ch := range p.Changes {
		if ch.Action == plan.ActionNoop && len(ch.Reasons) > 0 && ch.Reasons[0].Path == planner.KeptPath {
			left = append(left, ch.ID.String()+": helm.sh/resource-policy: keep")
		}
		if ch.Action != plan.ActionDelete || ch.ID.Group != "apps" || ch.ID.Kind != "StatefulSet" || ch.Before == nil {
			continue
		}
		claims, err := c.templateClaims(ctx, ch.ID, ch.Before)
		if err != nil {
			return nil, err
		}
		left = append(left, claims...)
	}
	for _, crd := range rel.Chart.CRDObjects() {
		left = append(left, fmt.Sprintf("the CRDs of %s (the chart's crds/): helm uninstall never deletes them", crd.Filename))
	}
	for _, h := range p.Hooks {
		if h.Before == nil || h.ID.Kind == "" {
			continue
		}
		if h.RunsAtApply {
			if !slices.Contains(h.DeletePolicies, string(release.HookSucceeded)) {
				left = append(left, fmt.Sprintf("%s: a %s hook the uninstall runs, which its delete policy (%s) leaves", h.ID, strings.Join(h.Events, ","), strings.Join(h.DeletePolicies, ",")))
			}
			continue
		}
		ri, _, err := c.Cluster.Resource(schema.FromAPIVersionAndKind(h.Before.GetAPIVersion(), h.Before.GetKind()), h.ID.Namespace)
		if err != nil {
			continue // its kind is no longer served: nothing to leave
		}
		if _, err := ri.Get(ctx, h.ID.Name, metav1.GetOptions{}); err == nil {
			left = append(left, fmt.Sprintf("%s: a %s hook, which helm uninstall does not delete", h.ID, strings.Join(h.Events, ",")))
		} else if !apierrors.IsNotFound(err) {
			left = append(left, fmt.Sprintf("%s: a hook whose presence could not be read: %v", h.ID, err))
		}
	}
	return left, nil
}

// templateClaims names the claims StatefulSet id's volumeClaimTemplates
// made, with their size, unless its retention policy deletes them with it
// (then the plan's deletion says so).
func (c *Config) templateClaims(ctx context.Context, id manifest.ObjectID, sts *unstructured.Unstructured) ([]string, error) {
	if policy, _, _ := unstructured.NestedString(sts.Object, "spec", "persistentVolumeClaimRetentionPolicy", "whenDeleted"); policy == "Delete" {
		return nil, nil
	}
	templates := live.ClaimTemplates(sts)
	if len(templates) == 0 {
		return nil, nil
	}
	items, err := c.Cluster.Claims(ctx, id.Namespace, func(n string) bool { _, ok := live.ClaimTemplate(n, id.Name, templates); return ok })
	if apierrors.IsForbidden(err) {
		return []string{fmt.Sprintf("the PersistentVolumeClaims of %s's volumeClaimTemplates (%s; not listed: %v)", id, strings.Join(templates, ", "), err)}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing the claims of %s: %w", id, err)
	}
	var out []string
	for i := range items {
		size := planner.ClaimSize(&items[i])
		if size != "" {
			size = " (" + size + ")"
		}
		out = append(out, fmt.Sprintf("PersistentVolumeClaim/%s/%s%s: made from %s's volumeClaimTemplates, which helm uninstall never deletes", id.Namespace, items[i].GetName(), size, id))
	}
	return out, nil
}

// UninstallResult is what an applied uninstall left (also the plan's
// Uninstalled, for the JSON report): the planned deletions gone and still
// there, what the plan said stays, and Helm's error, sanitised, when its
// uninstall failed (the run fails, after the read-back).
type UninstallResult struct {
	Response *release.UninstallReleaseResponse
	*plan.Uninstalled
}

// Uninstall runs Helm's own uninstall action on the reviewed plan, holding
// the release's Lease, then checks each planned deletion against the
// cluster.
func (c *Config) Uninstall(ctx context.Context, planned *PlannedUninstall) (*UninstallResult, error) {
	req := planned.Request
	if err := c.Connect(ctx); err != nil {
		return nil, err
	}
	user, lease, err := c.takeLease(ctx, req.ReleaseName, planned.Lease)
	if err != nil {
		return nil, err
	}
	defer c.releaseLease(lease, false)
	acks, err := c.ackGuardedDeletes(ctx, planned.Plan, req.Cascade == "orphan")
	if err != nil {
		return nil, err
	}
	// Said before Helm starts (on a terminal), as the upgrade's plan and
	// prompt are: an uninstall with nothing destructive asks nothing.
	c.progress("Uninstalling %s through Helm: %s", req.ReleaseName, uninstallCounts(planned))
	u := action.NewUninstall(c.Helm)
	u.KeepHistory, u.DisableHooks, u.Wait, u.Timeout = req.KeepHistory, req.DisableHooks, req.Wait, req.Timeout
	u.DeletionPropagation = req.Cascade
	u.Description = c.describe(report.AuditLine(planned.Plan, req.Description))
	res, helmErr := u.Run(req.ReleaseName)
	if helmErr == nil {
		c.recordUninstall(ctx, planned, user)
	}
	// Read back after a failure too: Helm deletes what it can and then
	// says how many deletions failed, not which objects are left.
	deleted, remaining, err := c.remaining(ctx, planned.Plan, req.Timeout)
	out := &UninstallResult{Response: res, Uninstalled: &plan.Uninstalled{Deleted: deleted, Remaining: remaining, Left: planned.Left}}
	planned.Plan.Uninstalled = out.Uninstalled
	if helmErr != nil {
		out.Failed = fmt.Sprintf("helm uninstall %s: %s", req.ReleaseName, c.Sanitizer.Text(helmErr.Error(), redact.MessageLimit))
		if left := c.revokeGuardAcks(ctx, acks); left != "" {
			out.Failed += "; " + left
		}
	}
	if err != nil {
		if out.Failed != "" {
			return nil, fmt.Errorf("%s; then %w", out.Failed, err)
		}
		return nil, err
	}
	return out, nil
}

// settle bounds how long deletions in progress (a garbage collector's or
// a built-in controller's finalizer) are given to finish before what is
// still there is reported.
const settle = 15 * time.Second

// remaining reads each planned deletion back, until all are gone or for
// settle at most (within timeout): it returns those gone and those still
// there, with why.
func (c *Config) remaining(ctx context.Context, p *plan.Plan, timeout time.Duration) ([]manifest.ObjectID, []plan.Remaining, error) {
	var deleted []plan.Change
	for _, ch := range p.Changes {
		if ch.Action == plan.ActionDelete {
			deleted = append(deleted, ch)
		}
	}
	// Each round reads with the run's context: the last one, after the
	// settling time, is the answer.
	settled := time.Now().Add(min(settle, timeout))
	for {
		var gone []manifest.ObjectID
		var still []plan.Remaining
		for _, ch := range deleted {
			r, err := c.stillThere(ctx, ch)
			if err != nil {
				return nil, nil, err
			}
			if r != nil {
				still = append(still, *r)
			} else {
				gone = append(gone, ch.ID)
			}
		}
		if len(still) == 0 || time.Now().After(settled) {
			sort.Slice(still, func(i, j int) bool { return still[i].String() < still[j].String() })
			return gone, still, nil
		}
		select {
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("reading the deleted objects back after the uninstall: %w", ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// stillThere says why the object of deletion ch is still in the cluster,
// nil when it is gone.
func (c *Config) stillThere(ctx context.Context, ch plan.Change) (*plan.Remaining, error) {
	ri, _, err := c.Cluster.Resource(schema.FromAPIVersionAndKind(ch.APIVersion, ch.ID.Kind), ch.ID.Namespace)
	if err != nil {
		return nil, nil // the kind went with its CRD
	}
	obj, err := ri.Get(ctx, ch.ID.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading %s back after the uninstall: %w", ch.ID, err)
	}
	// The plan keeps the live resourceVersion, not the UID (shown objects
	// drop server-managed fields): an object not being deleted either was
	// not deleted or was created again since.
	why := "not deleted"
	if ts := obj.GetDeletionTimestamp(); ts != nil {
		why = "Terminating since " + ts.UTC().Format(time.RFC3339)
	} else if ch.LiveResourceVersion != "" && obj.GetResourceVersion() != ch.LiveResourceVersion {
		why = "not being deleted, and changed since the plan (created again, or its delete did not take)"
	}
	// Finalizer names are anyone's text.
	var finalizers []string
	for _, f := range obj.GetFinalizers() {
		finalizers = append(finalizers, c.Sanitizer.Text(f, redact.MessageLimit))
	}
	return &plan.Remaining{ID: ch.ID, Why: why, Finalizers: finalizers}, nil
}

// uninstallCounts is what an uninstall is about to do, in counts: "deleting
// 6 object(s), none destructive; 2 left in the cluster".
func uninstallCounts(planned *PlannedUninstall) string {
	deletes, destructive := 0, 0
	for _, ch := range planned.Plan.Changes {
		if ch.Action == plan.ActionDelete {
			deletes++
			if ch.Destructive {
				destructive++
			}
		}
	}
	s := fmt.Sprintf("deleting %d object(s), ", deletes)
	if destructive == 0 {
		s += "none destructive"
	} else {
		s += fmt.Sprintf("%d destructive, acknowledged", destructive)
	}
	if len(planned.Left) > 0 {
		s += fmt.Sprintf("; %d left in the cluster", len(planned.Left))
	}
	return s
}
