// Package apply turns a reviewed plan into action through Helm's own
// upgrade and install actions, applying exactly the manifest that was
// planned, and recreates acknowledged recreate-required objects safely
// before the upgrade.
package apply

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/cli"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
)

// Request is one reviewed plan to apply.
type Request struct {
	// Config is the Helm configuration of the release namespace (see
	// render.NewConfiguration): release storage, kube client, and the REST
	// client getter the recreate step builds its clients from.
	Config *action.Configuration
	// Cluster is the connection the recreate step reads and deletes with
	// (upgrade.Config.Connect builds it, once per run).
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
	// Force passes --force to Helm (objects replaced with PUT). Only when
	// the user asked for it.
	Force bool
	// Description is the release description `helm history` shows (the
	// audit trail); empty means Render.Description.
	Description string
	// Log receives Helm's debug log; nil discards it.
	Log func(string, ...interface{})
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
// (*render.PendingError).
//
// Before the upgrade, each change in Recreate is recreated safely: a
// dry-run create of the planned object and a dry-run delete must pass; what
// happens to the object's dependants is printed to out; then a StatefulSet
// is deleted with propagationPolicy=Orphan (its pods and PVCs stay and the
// new StatefulSet adopts them), pod controllers with Foreground, anything
// else with Background, and Apply waits (bounded by the timeout) until each
// is gone; the upgrade then creates them. CustomResourceDefinitions and
// Namespaces are never recreated (ErrRecreateRefused).
//
// ctx is honoured until the first write: when it is done before, Apply
// returns its error and nothing was written (a cancellation while Helm still
// renders is caught when Helm stores the new revision). Once a recreate has
// deleted an object, cancellation is no longer passed on, so that the
// upgrade creates it again; the timeout still bounds everything. Otherwise
// ctx goes to Helm's action, and once Helm's upgrade started its own failure
// handling applies. When Helm's action fails after writing, the error is an
// *UpgradeError saying which state the release is in now.
func Apply(ctx context.Context, req Request, out io.Writer) (*release.Release, error) {
	return apply(ctx, req, out, func(action.RESTClientGetter) (*live.Cluster, error) {
		if req.Cluster == nil {
			return nil, errors.New("the request has no cluster connection")
		}
		return req.Cluster, nil
	})
}

// pollInterval is how often the recreate step looks whether a deleted
// object is gone.
const pollInterval = 250 * time.Millisecond

func apply(ctx context.Context, req Request, out io.Writer, connect func(action.RESTClientGetter) (*live.Cluster, error)) (*release.Release, error) {
	if err := req.validate(); err != nil {
		return nil, err
	}
	next := req.Rendered.Next
	name, ns := next.Name, next.Namespace
	log := req.Log
	if log == nil {
		log = func(string, ...interface{}) {}
	}
	timeout := req.Render.TimeLimit()
	if err := refuseRecreate(req.Recreate, req.Rendered.Install); err != nil {
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

	var rec *recreator
	var targets []*recreateTarget
	if len(req.Recreate) > 0 {
		cluster, err := connect(req.Config.RESTClientGetter)
		if err != nil {
			return nil, fmt.Errorf("release %q: connecting for the recreate step: %w", name, err)
		}
		rec = &recreator{cluster: cluster, out: out, log: log, release: name, namespace: ns, timeout: timeout, poll: pollInterval}
		if targets, err = rec.prepare(ctx, req.Recreate, next.Manifest); err != nil {
			return nil, err
		}
	}
	if err := cancelled(); err != nil {
		return nil, err
	}
	helmCtx := ctx
	if len(targets) > 0 {
		rec.announce(targets)
		if err := rec.run(targets); err != nil {
			return nil, err
		}
		helmCtx = context.WithoutCancel(ctx)
	}

	run := *req.Config
	if run.Log == nil {
		run.Log = log
	}
	store := &plannedStore{Driver: req.Config.Releases.Driver, ctx: helmCtx, next: next}
	run.Releases = &storage.Storage{Driver: store, MaxHistory: req.Config.Releases.MaxHistory, Log: req.Config.Releases.Log}
	if run.Releases.Log == nil {
		run.Releases.Log = log
	}
	var rel *release.Release
	var err error
	if req.Rendered.Install {
		rel, err = req.install(helmCtx, &run, store)
	} else {
		rel, err = req.upgrade(helmCtx, &run, store)
	}
	if err == nil {
		return rel, nil
	}
	var stale *StaleError
	if errors.As(err, &stale) {
		return nil, stale // from plannedStore: nothing was stored or applied
	}
	if !store.started() {
		err = fmt.Errorf("release %q in namespace %s: Helm stopped before storing revision %d: %w", name, ns, next.Version, err)
		if len(targets) > 0 {
			err = fmt.Errorf("%w%s", err, notUpgraded(deletedRefs(targets)))
		}
		return nil, err
	}
	return rel, failure(req.Config.Releases, name, ns, next.Version, err)
}

func deletedRefs(targets []*recreateTarget) []string {
	var out []string
	for _, t := range targets {
		if t.live != nil {
			out = append(out, ref(t.id))
		}
	}
	return out
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

func (req *Request) description() string {
	if req.Description != "" {
		return req.Description
	}
	return req.Render.Description
}

// upgrade runs Helm's upgrade as `helm upgrade` with the plan's flags.
func (req *Request) upgrade(ctx context.Context, cfg *action.Configuration, store *plannedStore) (*release.Release, error) {
	up := req.Render.NewUpgrade(cfg, store.next.Namespace)
	up.Description = req.description()
	up.Force = req.Force
	up.PostRenderer = plannedManifest{manifest: store.next.Manifest}
	return up.RunWithContext(ctx, store.next.Name, req.Rendered.Chart, copyValues(req.Rendered.Values))
}

// install runs Helm's install as `helm upgrade --install` does for a
// release that does not exist (or whose revisions are all uninstalled).
func (req *Request) install(ctx context.Context, cfg *action.Configuration, store *plannedStore) (*release.Release, error) {
	inst := req.Render.NewInstall(cfg, store.next.Name, store.next.Namespace)
	inst.Description = req.description()
	inst.Force = req.Force
	inst.Replace = req.Rendered.Last != nil
	inst.PostRenderer = plannedManifest{manifest: store.next.Manifest}
	return inst.RunWithContext(ctx, req.Rendered.Chart, copyValues(req.Rendered.Values))
}

// copyValues deep-copies user values: Helm merges the previous release's
// values into the map it is given (--reuse-values), and the plan must stay
// as it was.
func copyValues(v map[string]interface{}) map[string]interface{} {
	if v == nil {
		return nil
	}
	m, _ := deepCopy(v).(map[string]interface{})
	return m
}

func deepCopy(v interface{}) interface{} {
	switch t := v.(type) {
	case chartutil.Values:
		return chartutil.Values(copyValues(t))
	case map[string]interface{}:
		m := make(map[string]interface{}, len(t))
		for k, x := range t {
			m[k] = deepCopy(x)
		}
		return m
	case []interface{}:
		s := make([]interface{}, len(t))
		for i, x := range t {
			s[i] = deepCopy(x)
		}
		return s
	}
	return v
}
