package verb

import (
	"context"
	"fmt"
	"sort"
	"time"

	"golang.org/x/sync/errgroup"
	"helm.sh/helm/v3/pkg/action"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/panics"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/classify"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/planner"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/releasestate"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/watch"
)

// StatusRequest is `status RELEASE…` with its flags.
type StatusRequest struct {
	// Releases are the releases asked (in the release namespace, or in
	// every namespace with AllNamespaces); none with AllNamespaces: every
	// release of the cluster.
	Releases      []string
	AllNamespaces bool
	// Timeout bounds the whole run.
	Timeout time.Duration
}

// Status compares the live objects of the releases asked with their stored
// manifests, rendering nothing: each release is planned as the next
// upgrade of the same chart and values, whose last and new manifests are
// both the stored one and whose live side is the cluster, so the planner's
// three-way patch, verdicts and noise rules say exactly what the drift
// means for that upgrade. Every kind of object is LISTed once for all the
// releases (live.Inventory); the LISTs also find the objects that carry a
// release's ownership metadata without being in its manifest. It sends no
// write but the planner's dry-runs.
func (c *Config) Status(ctx context.Context, req StatusRequest) (*plan.Status, error) {
	ctx, cancel := context.WithTimeout(ctx, req.Timeout)
	defer cancel()
	defer c.boundByContext(ctx)()
	st, err := c.status(ctx, req)
	return st, c.timedOut(err)
}

// statusTarget is one release asked, as releasestate chose its revisions
// (Target), its objects as the live stage reads them (rel, parsed once),
// and its older records that cannot be read (statusUnreadable).
type statusTarget struct {
	*releasestate.Target
	rel        *live.Release
	parsed     *manifest.Parsed
	unreadable []*releasestate.UnreadableError
}

func (c *Config) status(ctx context.Context, req StatusRequest) (*plan.Status, error) {
	if err := c.Stage("connect", func() error { return c.Connect(ctx) }); err != nil {
		return nil, err
	}
	c.progress("Reading the releases' records")
	var targets []*statusTarget
	var broken []plan.ReleaseStatus
	var helm *action.Configuration
	if err := c.Stage("releases", func() (err error) {
		helm, targets, broken, err = c.readTargets(ctx, req)
		return err
	}); err != nil {
		return nil, err
	}
	c.progress("Listing the live objects of %d release(s)", len(targets))
	rels, stored := make([]*live.Release, len(targets)), make([]*releasestate.Target, len(targets))
	for i, t := range targets {
		rels[i], stored[i] = t.rel, t.Target
	}
	var lv statusLive
	if err := c.Stage("live", func() (err error) {
		lv, err = c.readLive(ctx, helm, stored, rels, req.AllNamespaces)
		return err
	}); err != nil {
		return nil, err
	}
	c.Logf("status: %d LIST request(s) of the releases' kinds for %d release(s)", lv.inv.Requests, len(targets))
	out := &plan.Status{ServerVersion: c.ServerVersion}
	// A few releases at a time: each plan reads little more than the inventory.
	out.Releases = make([]plan.ReleaseStatus, len(targets))
	start, requests := time.Now(), c.Requests()
	strays := live.Strays(lv.inv, rels)
	// One planner for every release: its parts read the same inventory.
	cluster := planner.Live{Cluster: c.Cluster, Observers: live.NewObservers(c.Cluster), Schemas: live.NewSchemas(c.Cluster)}.Parts()
	objs := live.InventoryObjects{Inventory: lv.inv, Cluster: c.Cluster}
	cluster.Objects = objs
	pl := c.planner(cluster, c.ServerVersion)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(live.DefaultConcurrency) // each plan bounds its own objects' evaluations
	for i, t := range targets {
		g.Go(func() (err error) {
			defer panics.Catch(&err) // a panic here would exit 2, the gate's code
			rs, err := c.releaseStatus(gctx, t, pl, objs, lv.states)
			if err != nil {
				return err
			}
			rs.Health = append(rs.Health, watch.NotReady(rels[i], lv.inv, lv.pods, c.Sanitizer)...)
			for _, s := range strays[i] {
				rs.Objects = append(rs.Objects, plan.ObjectStatus{ID: s.ID, APIVersion: s.APIVersion, State: plan.StateExtra, Notes: []string{s.Note}})
			}
			sort.SliceStable(rs.Objects, func(i, j int) bool { return rs.Objects[i].ID.Less(rs.Objects[j].ID) })
			out.Releases[i] = *rs
			return nil
		})
	}
	err := g.Wait()
	c.logStage("plans", time.Since(start), c.Requests()-requests, "each release planned as the next upgrade of its stored manifest, with its health")
	if err != nil {
		return nil, err
	}
	out.Releases = append(out.Releases, broken...)
	return out, nil
}

// statusLive is what the live stage reads for every release at once.
type statusLive struct {
	inv    *live.Inventory
	pods   watch.Pods
	states releasestate.StateReader
}

// readLive reads the releases' objects (one LIST per kind for all of them)
// and, beside those LISTs, the pods' LIST, the apply methods' GETs and,
// for several releases, the journals' and Leases' LISTs.
func (c *Config) readLive(ctx context.Context, helm *action.Configuration, targets []*releasestate.Target, rels []*live.Release, allNamespaces bool) (statusLive, error) {
	var lv statusLive
	var g errgroup.Group
	g.Go(func() (err error) {
		defer panics.Catch(&err)
		lv.pods, err = watch.ReadPods(ctx, c.Cluster, rels, allNamespaces, c.Logf)
		return err
	})
	g.Go(func() error { return releasestate.ReadApplyMethods(ctx, helm, targets) })
	g.Go(func() (err error) {
		defer panics.Catch(&err)
		lv.states = releasestate.ReadStatesFor(ctx, c.Cluster, len(targets), c.Namespace, allNamespaces)
		return nil
	})
	lv.inv = c.Cluster.ReadReleases(ctx, rels, allNamespaces)
	return lv, g.Wait()
}

// readTargets reads the releases asked (releasestate.ReadTargets) and
// parses their stored manifests; it returns the configuration the records
// were read with, and the releases whose newest record cannot be read.
func (c *Config) readTargets(ctx context.Context, req StatusRequest) (*action.Configuration, []*statusTarget, []plan.ReleaseStatus, error) {
	helm, found, unreadable, err := releasestate.ReadTargets(ctx, c.Helm, c.Settings.RESTClientGetter(), c.Namespace, req.Releases, req.AllNamespaces, c.Logf)
	if err != nil {
		return nil, nil, nil, err
	}
	targets := make([]*statusTarget, 0, len(found))
	for _, f := range found {
		t := &statusTarget{Target: f}
		if t.rel, t.parsed, err = f.Parse(c.Cluster); err != nil {
			return nil, nil, nil, err
		}
		c.Sanitizer.AddManifest(f.Current.Manifest)
		targets = append(targets, t)
	}
	targets, broken := c.statusUnreadable(targets, unreadable)
	return helm, targets, broken, nil
}

// releaseStatus plans t's next upgrade of the same manifest and turns each
// change into the object's status, with t's health.
func (c *Config) releaseStatus(ctx context.Context, t *statusTarget, pl *planner.Planner, objs live.InventoryObjects, states releasestate.StateReader) (*plan.ReleaseStatus, error) {
	cur := t.Current
	head := t.Status(chartRef(cur.Chart), c.Sanitizer)
	rs := &head
	in := planner.Input{
		Release: plan.Release{Name: cur.Name, Namespace: cur.Namespace, Revision: cur.Version, CurrentRevision: cur.Version,
			Chart: rs.Chart, Operation: plan.OperationUpgrade, ApplyMethod: rs.ApplyMethod},
		PreviousManifest: cur.Manifest,
		NextManifest:     cur.Manifest,
		NextParsed:       t.parsed,
	}
	p, err := pl.Plan(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("release %q in namespace %s: %w", cur.Name, cur.Namespace, err)
	}
	for i := range p.Changes {
		ch := &p.Changes[i]
		rs.Objects = append(rs.Objects, classify.ObjectStatus(ch, objs.Compared(ctx, ch.ID, t.rel.Objects.Get(ch.ID)), c.Masker, c.Sanitizer))
	}
	rs.Health = releasestate.Troubles(ctx, states, t.Current, t.Last, c.Now(), c.Sanitizer)
	if len(t.unreadable) > 0 {
		rs.Health, rs.Unreadable = append(rs.Health, c.unreadableLines(t.unreadable)...), true
	}
	rs.Notes = p.Notes
	return rs, nil
}
