// Package apply turns a reviewed plan into action through Helm's own
// upgrade, install and rollback actions, applying exactly the manifest that was
// planned, and recreates acknowledged recreate-required objects safely
// before the upgrade.
package apply

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/cli"
	"helm.sh/helm/v3/pkg/release"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/releasestate"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
)

// Request is one reviewed plan to apply.
type Request struct {
	// Config is the Helm configuration of the release namespace (see
	// releasestate.NewConfiguration): release storage, kube client, and the REST
	// client getter the recreate step builds its clients from.
	Config *action.Configuration
	// Cluster is the connection the recreate step reads and deletes with
	// (verb.Config.Connect builds it, once per run).
	Cluster *live.Cluster
	// Settings is Helm's environment. May be nil. The revisions kept are
	// Render.MaxHistory (--history-max, whose default is HELM_MAX_HISTORY).
	Settings *cli.EnvSettings
	// ReleaseName and ChartRef are what the user named; ReleaseName, when
	// set, must be the planned release's name. ChartRef is informational:
	// the chart is not located or loaded again (Rendered.Chart is used).
	ReleaseName, ChartRef string
	// Render are the flags the plan was rendered with; Apply gives Helm's
	// action the same ones (values handling, hooks, CRDs, timeout, wait,
	// atomic, description).
	Render render.Options
	// Rendered is the planned render: its Next.Manifest is what is applied.
	Rendered *render.Result
	// Recreate are the acknowledged recreate-required changes to delete
	// before the upgrade so that it creates them again.
	Recreate []plan.Change
	// Force passes --force-replace (Helm 3's --force) to Helm: every object
	// of the manifest that exists is replaced with PUT, changed or not. Only
	// when the user asked for it; Helm 4 refuses it with server-side apply.
	// The objects of Recreate are deleted first, so Helm creates them
	// rather than PUT them; the plan checked every other PUT with a
	// dry-run, so one the server refuses blocked before any delete.
	Force bool
	// ApplyMethod is the planned apply method (plan.Release.ApplyMethod):
	// plan.ApplyMethodSSA runs Helm 4's action (server-side apply, the
	// record's apply_method ssa, --force-conflicts as Render.ForceConflicts),
	// anything else Helm 3's.
	ApplyMethod string
	// Description is the release description `helm history` shows (the
	// audit trail); empty means Render.Description.
	Description string
	// User is who runs the apply (SelfSubjectReview), recorded in the
	// recreate journal; "" when unknown.
	User string
	// Log receives Helm's debug log; nil discards it.
	Log func(string, ...interface{})
	// Bound, when set, bounds every request the apply sends, those that
	// carry no context included (Helm's release storage), by deadline until
	// the function it returns is called. After a failure, the clean-up (the
	// restore from the journal, the failed revision's record) gets one fresh
	// --timeout through it: the deadline that failed has passed, and a
	// server that stops answering must not hold the run for one timeout per
	// request.
	Bound func(deadline time.Time) (restore func())
	// Sanitizer removes the release's Secret values from everything the
	// API server or Helm says that Apply passes on: its error, Helm's log
	// (the action's and the kube client's), and the release descriptions
	// Helm stores (an admission policy or webhook can echo Secret data in
	// its denial, which Helm writes into the failed revision's
	// description). nil passes them on as they are.
	Sanitizer *redact.Sanitizer
}

// Apply applies the planned revision of a release and returns it as Helm
// stored it. Progress about recreated objects goes to out.
//
// What reaches the cluster is Rendered.Next.Manifest, byte for byte: Apply
// runs Helm's own action.Upgrade (action.Install when Rendered.Install) with
// the same flags as the plan, on the chart and user values already loaded
// (Rendered.Chart, Rendered.Values; nothing is downloaded again), and with a
// post-renderer that discards what Helm renders and returns the planned
// manifest, which Helm then stores as the release manifest and applies
// (three-way patches, creates, deletes, hooks, --wait, --timeout, --atomic,
// history all as Helm does them). The user's own --post-renderer already ran
// when the plan was rendered and is not run again. The planned hooks and
// notes replace the re-rendered ones when Helm stores the new revision
// record, which it does before running any hook or touching the cluster.
//
// What still differs from the plan: Helm renders the chart templates once
// more and throws the output away, so templates run again (a template that
// calls `fail`, or `lookup`, sees the cluster as it is now), and an install
// with a crds/ directory creates those CRDs as Helm does, from the chart
// files. The values Helm stores are computed again from Rendered.Values and
// the current release, which is the planned one: Apply refuses (*StaleError)
// when the release's last revision or its status changed since the plan,
// both before starting and again when Helm stores the new revision, and
// refuses a pending release with the `helm rollback` hint
// (*releasestate.PendingError).
//
// Before the upgrade, each change in Recreate is recreated safely: a
// dry-run create of the planned object and a dry-run delete must pass; what
// happens to the object's dependants is printed to out; then a StatefulSet
// is deleted with propagationPolicy=Orphan (its pods and PVCs stay and the
// new StatefulSet adopts them), pod controllers with Foreground, anything
// else with Background, and Apply waits (bounded by the timeout) until each
// is gone; the upgrade then creates them. CustomResourceDefinitions,
// Namespaces, PersistentVolumeClaims and PersistentVolumes are never
// recreated (ErrRecreateRefused).
//
// Before the first delete Apply writes a journal (a Secret of type
// JournalType in the release namespace) holding the live objects it
// deletes, updated after each step and removed once the new revision is
// deployed. Any failure after a delete (a delete or wait that fails, Helm's
// error, a failing or timing-out hook, an --atomic rollback, a cancelled
// ctx, a stale release) restores every deleted object from the journal with
// its previous spec (so its orphaned pods and claims are adopted again);
// the error, and the failed revision's description in `helm history`, say
// what was deleted and what was restored. An apply killed mid-way leaves
// the journal: CheckJournal then refuses every run and Recover resolves it.
// Apply itself refuses to start while a journal is there (*JournalError).
//
// ctx is honoured until the first write: when it is done before, Apply
// returns its error and nothing was written (a cancellation while Helm still
// renders is caught when Helm stores the new revision). After a recreate
// deleted an object, cancellation stops Helm's action and the deleted
// objects are restored. Once Helm's upgrade started its own failure handling
// applies. When Helm's action fails after writing, the error is an
// *UpgradeError saying which state the release is in now.
func Apply(ctx context.Context, req Request, out io.Writer) (*release.Release, error) {
	rel, err := apply(ctx, req, out, func(action.RESTClientGetter) (*live.Cluster, error) {
		if req.Cluster == nil {
			return nil, errors.New("the request has no cluster connection")
		}
		return req.Cluster, nil
	})
	return rel, req.Sanitizer.Error(err)
}

// pollInterval is how often the recreate step looks whether a deleted
// object is gone.
const pollInterval = 250 * time.Millisecond

// apply runs one reviewed plan: the checks that refuse it while nothing is
// written, the recreate step's deletes (recreateStep, deleteForRecreate),
// Helm's run, and on its failure the restore of what was deleted (failed).
func apply(ctx context.Context, req Request, out io.Writer, connect func(action.RESTClientGetter) (*live.Cluster, error)) (*release.Release, error) {
	if err := req.validate(); err != nil {
		return nil, err
	}
	next := req.Rendered.Next
	name, ns := next.Name, next.Namespace
	log := req.logf()
	timeout := req.Render.TimeLimit()
	if err := refuseRecreate(req.Recreate, req.Rendered.Install, ns); err != nil {
		return nil, err
	}
	cancelled := func() error {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("release %q in namespace %s: apply cancelled, nothing was written: %w", name, ns, context.Cause(ctx))
		}
		return nil
	}
	if err := cancelled(); err != nil {
		return nil, err
	}
	if err := checkRelease(req.Config.Releases, name, ns, req.Rendered.Last); err != nil {
		return nil, err
	}
	// Helm's SDK is set up before anything is deleted: an SDK that cannot
	// run this release refuses it while nothing was written.
	helm, err := req.sdk(ctx, log)
	if err != nil {
		return nil, fmt.Errorf("release %q in namespace %s: %w; nothing was written", name, ns, err)
	}
	rec, targets, jr, err := req.recreateStep(ctx, out, log, timeout, connect)
	if err != nil {
		return nil, err
	}
	if err := cancelled(); err != nil {
		return nil, err
	}
	if jr, err = req.deleteForRecreate(ctx, out, rec, targets, jr, timeout); err != nil {
		return nil, err
	}

	rel, err := helm.run(ctx)
	if err != nil {
		return req.failed(err, rel, helm, rec, jr, timeout)
	}
	if jr != nil {
		if err := jr.remove(context.WithoutCancel(ctx)); err != nil {
			fmt.Fprintf(out, "warning: revision %d is deployed but %v; run again with --recover to remove it\n", rel.Version, err)
		}
		rec.grow(context.WithoutCancel(ctx), targets)
	}
	return rel, nil
}

// logf is req.Log through the sanitiser; a no-op without one.
func (req *Request) logf() func(string, ...interface{}) {
	log := req.Log
	if log == nil {
		log = func(string, ...interface{}) {}
	}
	if req.Sanitizer != nil {
		log = req.Sanitizer.Logf(log)
	}
	return log
}

// recreateStep prepares the recreate step, nil without one: the objects to
// delete and the journal that puts them back. A journal an earlier run
// left is refused (--recover first). Nothing is written yet.
func (req *Request) recreateStep(ctx context.Context, out io.Writer, log func(string, ...interface{}), timeout time.Duration, connect func(action.RESTClientGetter) (*live.Cluster, error)) (*recreator, []*recreateTarget, *journal, error) {
	if len(req.Recreate) == 0 {
		return nil, nil, nil, nil
	}
	next := req.Rendered.Next
	name, ns := next.Name, next.Namespace
	cluster, err := connect(req.Config.RESTClientGetter)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("release %q: connecting for the recreate step: %w", name, err)
	}
	rec := &recreator{cluster: cluster, out: out, log: log, release: name, namespace: ns, timeout: timeout, poll: pollInterval}
	if rec.deployed, rec.deployedVersion, err = releasestate.DeployedOf(req.Config.Releases, name, ns, cluster); err != nil {
		return nil, nil, nil, fmt.Errorf("%w; nothing was written", err)
	}
	secrets := cluster.Dynamic.Resource(live.SecretsGVR).Namespace(ns)
	if left, err := readJournal(ctx, cluster, ns, name); err != nil {
		return nil, nil, nil, fmt.Errorf("release %q in namespace %s: %w", name, ns, err)
	} else if left != nil {
		return nil, nil, nil, &releasestate.JournalError{Name: name, Namespace: ns, Journal: &left.rec}
	}
	targets, err := rec.prepare(ctx, req.Recreate, next.Manifest)
	if err != nil {
		return nil, nil, nil, err
	}
	jr := newJournal(secrets, name, ns, next.Version, next.Manifest, targets)
	jr.rec.WrittenBy = req.User
	return rec, targets, jr, nil
}

// deleteForRecreate is the recreate step before Helm's run: the journal is
// written before the first delete, then the objects are deleted; from the
// journal's write on, every failure puts the deleted objects back (undo),
// and a kill leaves the journal for --recover. It returns the journal
// Helm's run continues, nil when there is none.
func (req *Request) deleteForRecreate(ctx context.Context, out io.Writer, rec *recreator, targets []*recreateTarget, jr *journal, timeout time.Duration) (*journal, error) {
	if jr != nil && len(jr.rec.Objects) > 0 {
		if err := jr.save(ctx); err != nil {
			return nil, fmt.Errorf("release %q: %w; nothing was deleted and the Helm upgrade was not started", req.Rendered.Next.Name, err)
		}
		rec.journal = jr
	}
	if len(targets) > 0 {
		// Said once nothing can stop the deletes any more, so that a
		// refused journal is not preceded by what would have happened.
		rec.announce(targets)
		req.announceHooks(out)
	}
	if rec == nil || rec.journal == nil {
		return nil, nil
	}
	err := rec.run(targets)
	if err == nil {
		jr.rec.Step = releasestate.StepUpgrading
		err = jr.save(context.WithoutCancel(ctx))
	}
	if err != nil {
		defer req.cleanup(timeout)()
		line, _ := rec.undo(jr)
		return nil, fmt.Errorf("%w; the Helm upgrade was not started; %s", err, line)
	}
	return jr, nil
}

// announceHooks says which pre-upgrade (pre-rollback) hooks run between
// the recreate step's deletes and Helm's creates.
func (req *Request) announceHooks(out io.Writer) {
	next := req.Rendered.Next
	event := release.HookPreUpgrade
	if req.Rendered.RollbackTo > 0 {
		event = release.HookPreRollback
	}
	if hooks := preHooks(next.Hooks, event); hooks != "" && !req.Render.DisableHooks {
		fmt.Fprintf(out, "%s hooks run after the deletes and before Helm creates the objects again: %s; if one fails or times out, the deleted objects are restored from the journal\n", event, hooks)
	}
}

// failed ends an apply whose Helm run failed: what the recreate step
// deleted is put back first (jr, nil without one), then the error says
// what Helm stored.
func (req *Request) failed(err error, rel *release.Release, helm sdk, rec *recreator, jr *journal, timeout time.Duration) (*release.Release, error) {
	defer req.cleanup(timeout)()
	next := req.Rendered.Next
	name, ns := next.Name, next.Namespace
	line := ""
	if jr != nil {
		line, _ = rec.undo(jr)
	}
	var stale *StaleError
	if errors.As(err, &stale) {
		// From plannedStore: nothing was stored or applied by Helm.
		if line != "" {
			return nil, fmt.Errorf("%w; %s", stale, line)
		}
		return nil, stale
	}
	if !helm.started() {
		err = fmt.Errorf("release %q in namespace %s: Helm stopped before storing revision %d: %w", name, ns, next.Version, err)
		if line != "" {
			err = fmt.Errorf("%w; %s", err, line)
		}
		return nil, err
	}
	ue := failure(req.Config.Releases, name, ns, next.Version, err)
	ue.Recreate = line
	if line != "" {
		helm.describe(next.Version, line)
	}
	return rel, ue
}

// preHooks names the hooks of event (pre-upgrade, pre-rollback), "" when
// there are none.
func preHooks(hooks []*release.Hook, event release.HookEvent) string {
	var names []string
	for _, h := range hooks {
		if slices.Contains(h.Events, event) {
			names = append(names, h.Kind+"/"+h.Name)
		}
	}
	return strings.Join(names, ", ")
}

func (req *Request) validate() error {
	switch {
	case req.Config == nil || req.Config.Releases == nil || req.Config.KubeClient == nil:
		return errors.New("apply: the Helm configuration has no release storage or kube client")
	case req.Rendered == nil || req.Rendered.Next == nil || req.Rendered.Next.Info == nil || req.Rendered.Chart == nil:
		return errors.New("apply: no planned render")
	case req.ReleaseName != "" && req.ReleaseName != req.Rendered.Next.Name:
		return fmt.Errorf("apply: release %q was asked for but the plan is for release %q", req.ReleaseName, req.Rendered.Next.Name)
	case req.Render.Namespace != "" && req.Render.Namespace != req.Rendered.Next.Namespace:
		return fmt.Errorf("apply: namespace %s was asked for but the plan is for namespace %s", req.Render.Namespace, req.Rendered.Next.Namespace)
	case !req.Rendered.Install && req.Rendered.Previous == nil:
		return fmt.Errorf("apply: the plan of release %q is an upgrade without a current revision", req.Rendered.Next.Name)
	}
	return nil
}

// cleanup starts the clean-up window after a failure (see Bound).
func (req *Request) cleanup(timeout time.Duration) (restore func()) {
	if req.Bound == nil {
		return func() {}
	}
	return req.Bound(time.Now().Add(timeout))
}

func (req *Request) description() string {
	if req.Description != "" {
		return req.Description
	}
	return req.Render.Description
}
