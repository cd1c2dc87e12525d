package verb

import (
	"context"
	"fmt"
	"os"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/apis"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/planner"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/releasestate"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/savedplan"
)

// PlanRequest is what to plan: helm upgrade's arguments and render flags.
// The command layer builds it; the actions only read it.
type PlanRequest struct {
	ReleaseName, ChartRef string
	Render                render.Options
	// Apply is how the plan will be applied (saved plans pin it).
	Apply ApplyMode
	// Rules are the user's ignore rules (--ignore, the rules file): field
	// paths, optionally for a kind or an object, whose changes are shown but
	// not counted.
	Rules planner.UserRules
	// Offline, when set, is the base an offline plan compares the chart
	// with, without any cluster access (pre-merge mode, --offline).
	Offline *OfflineBase
	// Saved, when set, is the reviewed plan to apply (--plan): its render
	// replaces the new one, and the plan is refused if anything moved since,
	// or if it is older than SavedMaxAge (0: no limit).
	Saved       *savedplan.Plan
	SavedMaxAge time.Duration
	// ServerDryRun is --server-dry-run: which updates are sent to the API
	// server as dry-runs ("" asks only where its answer can differ from
	// what the planner derives).
	ServerDryRun planner.ServerDryRun
	// FieldManager is the field manager of the client that will apply the
	// plan server-side in Helm's place ("": Helm's own): helm-controller
	// for a HelmRelease's --live plan. Every update is then asked of the
	// server, whose dry-run applies as it; the planner's local derivations
	// assume Helm's manager.
	FieldManager string
	// Rollback, when set, plans `helm rollback RELEASE REVISION` instead
	// of an upgrade to ChartRef (see rollback.go).
	Rollback *Rollback
	// ForApply: the plan is to be applied. The release's Lease is then read
	// before planning (refused while another run holds it, or when the user
	// may not take it) for the apply to take; a dry-run only notes a live
	// one.
	ForApply bool
}

// Planned is a plan with what is needed to save or apply it.
type Planned struct {
	Plan     *plan.Plan
	Rendered *render.Result
	// ChartRef, Render and Apply are the request's, for the saved plan and
	// the apply.
	ChartRef string
	Render   render.Options
	Apply    ApplyMode
	// Lease is the release's Lease as read before the plan: the apply
	// takes it on condition that nobody took it since.
	Lease *releasestate.LeaseObservation
	// applied is when the apply started: the readers' pods that predate
	// it keep the values they read (see readers.go).
	applied time.Time
}

// Plan plans req within --timeout: offline against req.Offline when set
// (see planOffline), else against the cluster (see planLive).
func (c *Config) Plan(ctx context.Context, req PlanRequest) (*Planned, error) {
	ctx, cancel := context.WithTimeout(ctx, req.Render.TimeLimit())
	defer cancel()
	defer c.boundByContext(ctx)() // Helm's requests too, which pass no context
	c.addCredentials(req.ChartRef, req.Render)
	if req.Offline != nil {
		return c.planOffline(ctx, req)
	}
	planned, err := c.planLive(ctx, req)
	return planned, c.timedOut(err)
}

// planLive renders the release as `helm upgrade` would and plans it against
// the cluster. It sends no write but dry-run requests.
func (c *Config) planLive(ctx context.Context, req PlanRequest) (*Planned, error) {
	state, replay, err := c.startPlan(ctx, req.ReleaseName, req.ForApply, req.Saved, savedplan.Run{
		Render: req.Render, Force: req.Apply.Force, RestartStale: req.Apply.RestartStale, Op: req.op(), MaxAge: req.SavedMaxAge})
	if err != nil {
		return nil, err
	}
	lease := state.Lease
	rules, err := req.Rules.ForChart(req.ChartRef)
	if err != nil {
		return nil, err
	}
	begin := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // LISTs started early, if the plan ends before it reads them
	schemas := live.NewSchemas(c.Cluster)
	prevSplit := c.splitEarly(state) // split while Helm renders
	res, again, early, err := c.renderWithEarlyLists(ctx, req, state, schemas, begin)
	if err != nil {
		return nil, err
	}
	if err := replay.UseIn(res); err != nil {
		return nil, err
	}
	start := time.Now()
	c.progress("Planning against the cluster: reading objects and sending dry-runs")
	in := req.plannerInput(res, again, prevSplit, rules)
	// APIs the cluster no longer serves, in the last release or the new render.
	minor, _ := apis.ParseMinor(c.ServerVersion)
	in.APIs = apis.ForCluster(c.Cluster.Mapper, minor)
	addHookSecrets(c.Sanitizer, res)
	pl := c.planner(planner.Live{Cluster: c.Cluster, Observers: live.NewObservers(c.Cluster), Early: early, Schemas: schemas, FieldManager: req.FieldManager}.Parts(), c.ServerVersion)
	pl.ServerDryRun = req.ServerDryRun
	if req.FieldManager != "" {
		pl.ServerDryRun = planner.ServerDryRunAll
	}
	stats := &planner.Stats{Requests: c.Requests}
	pl.Stats = stats
	p, err := pl.Plan(ctx, in)
	if err != nil {
		return nil, err
	}
	c.warnSecretCopies(p)
	c.logStages(stats)
	// Helm's upgrade and rollback delete with background propagation.
	if err := c.gateGuardedDeletes(ctx, p, false); err != nil {
		return nil, err
	}
	if err := replay.Unmoved(p); err != nil {
		return nil, err
	}
	if err := c.releaseBlockers(ctx, req, res, p, lease); err != nil {
		return nil, err
	}
	c.Logf("planned %d objects in %s", len(p.Changes), time.Since(start).Round(time.Millisecond))
	fmt.Fprintf(c.Out, "Planned %d objects in %s\n", len(p.Changes), time.Since(begin).Round(10*time.Millisecond))
	return &Planned{Plan: p, Rendered: res, ChartRef: req.ChartRef, Render: req.Render, Apply: req.Apply, Lease: lease}, nil
}

// releaseBlockers adds to p what blocks the release as a whole, whatever
// its objects: a record Helm's storage cannot hold, --force-replace with a
// server-side apply, a namespace Helm would not find; and the Lease's note.
func (c *Config) releaseBlockers(ctx context.Context, req PlanRequest, res *render.Result, p *plan.Plan, lease *releasestate.LeaseObservation) error {
	blocker, err := releasestate.RecordBlocker(res.Next, os.Getenv("HELM_DRIVER"))
	if err != nil {
		return err
	}
	if blocker != "" {
		p.Blockers = append(p.Blockers, blocker)
	}
	if req.Apply.Force && p.Release.ServerSide() {
		p.Blockers = append(p.Blockers, "--force-replace (--force): Helm 4 refuses to replace objects with PUT in a server-side apply; leave it out, or pass --server-side=false to apply client-side")
	}
	if note := lease.Note(); note != "" {
		p.Notes = append(p.Notes, c.Sanitizer.Text(note, redact.RecordLimit))
	}
	if blocker, err := c.namespaceBlocker(ctx, res.Next.Namespace, res.Install && req.Render.CreateNamespace); err != nil {
		return err
	} else if blocker != "" {
		p.Blockers = append(p.Blockers, blocker)
	}
	return nil
}

// connectToPlan is a plan's first stage: connect, and read the release's
// stored state once (releasestate.Read: refused while an interrupted
// apply's journal holds objects, or, forApply, while another run holds the
// Lease; the history the render and the early LISTs start from).
func (c *Config) connectToPlan(ctx context.Context, release string, forApply bool) (*releasestate.State, error) {
	var state *releasestate.State
	err := c.Stage("connect", func() error {
		if err := c.Connect(ctx); err != nil {
			return err
		}
		var err error
		state, err = releasestate.ReadStored(ctx, c.Cluster, c.Helm, release, c.Namespace, c.storageNamespace(), forApply, c.Now())
		return err
	})
	return state, err
}

// startPlan opens a live plan, an upgrade's or an uninstall's: it connects
// and reads the release's state (connectToPlan), then starts the saved plan
// (--plan), if any, which is refused before anything is rendered or planned
// when made for another cluster, other flags, or too long ago. run holds
// what the operation pins; startPlan adds what the run itself brings.
func (c *Config) startPlan(ctx context.Context, release string, forApply bool, saved *savedplan.Plan, run savedplan.Run) (*releasestate.State, *savedplan.Replay, error) {
	state, err := c.connectToPlan(ctx, release, forApply)
	if err != nil {
		return nil, nil, err
	}
	run.Out, run.Masker, run.Now = c.Out, c.Masker, c.Now()
	run.Identity = func() (savedplan.ClusterIdentity, error) { return c.identity(ctx) }
	replay, err := savedplan.Start(saved, run)
	return state, replay, err
}

// namespaceBlocker returns the plan-wide blocker of a release whose
// namespace does not exist: Helm's install (or upgrade) would fail on the
// first object it creates there, after the pre-install hooks ran. It
// returns "" when the namespace exists, when created says the install
// creates it (--install --create-namespace), and when the user may not
// read namespaces (RBAC commonly hides them: the dry-runs still say
// "namespaces not found" in each object's notes).
func (c *Config) namespaceBlocker(ctx context.Context, ns string, created bool) (string, error) {
	if created {
		return "", nil
	}
	_, err := c.Cluster.Namespace(ctx, ns)
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Sprintf("namespace %q does not exist: Helm would fail to create the release's objects in it; add --create-namespace (with --install) to create it, or create it first", ns), nil
	case err == nil || apierrors.IsForbidden(err):
		return "", nil
	}
	return "", fmt.Errorf("reading namespace %s (the release namespace): %w", ns, err)
}

// warnSecretCopies says on Out where the chart copies a Secret's value into
// an object that is not a Secret: a finding for the chart's author, shown
// whatever the report's format.
func (c *Config) warnSecretCopies(p *plan.Plan) {
	for _, w := range p.SecretCopies {
		fmt.Fprintln(c.Out, "warning:", w)
	}
}
