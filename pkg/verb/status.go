package verb

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/panics"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/classify"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/planner"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/releasestate"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
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

// statusTarget is one release asked: the revision its live objects are
// compared with and its newest revision.
type statusTarget struct {
	current, last *release.Release
	// objects are current's manifest's, parsed once (their content
	// decoded when needed: Load); the planner shares the parse.
	objects    *manifest.Set
	parsed     *manifest.Parsed
	hooks      map[manifest.ObjectID]bool
	serverSide bool
	// methodRead: serverSide was read with the release records.
	methodRead bool
	// unreadable are the release's records older than current that cannot
	// be read (statusUnreadable).
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
	rels := liveReleases(targets)
	var lv statusLive
	if err := c.Stage("live", func() (err error) {
		lv, err = c.readLive(ctx, helm, targets, rels, req.AllNamespaces)
		return err
	}); err != nil {
		return nil, err
	}
	c.Logf("status: %d LIST request(s) of the releases' kinds for %d release(s)", lv.inv.Requests, len(targets))
	out := &plan.Status{ServerVersion: c.ServerVersion}
	// Releases are planned a few at a time: each plan reads little more
	// than the inventory (a single release's Lease and journal are a GET
	// each).
	out.Releases = make([]plan.ReleaseStatus, len(targets))
	start, requests := time.Now(), c.Requests()
	strays := live.Strays(lv.inv, rels)
	// One planner for every release: its parts read the same inventory.
	cluster := planner.Live{Cluster: c.Cluster, Observers: live.NewObservers(c.Cluster), Schemas: live.NewSchemas(c.Cluster)}.Parts()
	objs := live.InventoryObjects{Inventory: lv.inv, Cluster: c.Cluster}
	cluster.Objects = objs
	pl := c.planner(cluster, c.ServerVersion)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(statusConcurrency)
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

// liveReleases are the targets as their live objects are read, in the
// same order.
func liveReleases(targets []*statusTarget) []*live.Release {
	out := make([]*live.Release, len(targets))
	for i, t := range targets {
		out[i] = &live.Release{Name: t.current.Name, Namespace: t.current.Namespace, Revision: t.current.Version, Objects: t.objects, Hooks: t.hooks}
	}
	return out
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
func (c *Config) readLive(ctx context.Context, helm *action.Configuration, targets []*statusTarget, rels []*live.Release, allNamespaces bool) (statusLive, error) {
	var lv statusLive
	var g errgroup.Group
	g.Go(func() (err error) {
		defer panics.Catch(&err)
		lv.pods, err = watch.ReadPods(ctx, c.Cluster, rels, allNamespaces, c.Logf)
		return err
	})
	g.Go(func() error { return readApplyMethods(ctx, helm, targets) })
	g.Go(func() (err error) {
		defer panics.Catch(&err)
		lv.states = releasestate.ReadStatesFor(ctx, c.Cluster, len(targets), c.Namespace, allNamespaces)
		return nil
	})
	lv.inv = c.Cluster.ReadReleases(ctx, rels, allNamespaces)
	return lv, g.Wait()
}

// readTargets reads the releases asked and parses their stored manifests;
// it returns the configuration the records were read with, and the
// releases whose newest record cannot be read (statusUnreadable).
func (c *Config) readTargets(ctx context.Context, req StatusRequest) (*action.Configuration, []*statusTarget, []plan.ReleaseStatus, error) {
	helm, targets, unreadable, err := c.statusTargets(ctx, req)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, t := range targets {
		name := fmt.Sprintf("release %q revision %d manifest", t.current.Name, t.current.Version)
		if t.objects, t.parsed, err = manifest.SplitRemembering(name, t.current.Manifest, t.current.Namespace, c.Cluster); err != nil {
			return nil, nil, nil, err
		}
		t.hooks = hookIDs(t.current)
		c.Sanitizer.AddManifest(t.current.Manifest)
	}
	targets, broken := c.statusUnreadable(targets, unreadable)
	return helm, targets, broken, nil
}

// readApplyMethods reads how each target not read with the release records
// (statusTargets) was applied (Helm 4 records it beside the release: a GET
// of its record each), a few at a time.
func readApplyMethods(ctx context.Context, helm *action.Configuration, targets []*statusTarget) error {
	var g errgroup.Group
	g.SetLimit(live.DefaultConcurrency)
	for _, t := range targets {
		if t.methodRead {
			continue
		}
		g.Go(func() (err error) {
			defer panics.Catch(&err)
			t.serverSide = render.RecordedServerSide(ctx, helm, "", t.current)
			return nil
		})
	}
	return g.Wait()
}

// statusConcurrency bounds the releases planned at once; each plan bounds
// its own objects' evaluations.
const statusConcurrency = live.DefaultConcurrency

// statusTargets reads the releases asked from Helm's storage: of the
// release namespace, or with AllNamespaces of every namespace (Helm's
// storage lists them all at once, with the apply method each records). It returns the configuration the
// records were read with, and the records of the releases asked that
// cannot be read (every namespace only: a release asked by name whose
// record cannot be read is an error saying so).
func (c *Config) statusTargets(ctx context.Context, req StatusRequest) (*action.Configuration, []*statusTarget, []*releasestate.UnreadableError, error) {
	if !req.AllNamespaces {
		var out []*statusTarget
		for _, name := range req.Releases {
			hist, err := releasestate.History(c.Helm.Releases, name)
			if err != nil {
				return nil, nil, nil, fmt.Errorf("release %q in namespace %s: reading its history: %w", name, c.Namespace, err)
			}
			t, err := statusTargetOf(name, c.Namespace, hist)
			if err != nil {
				return nil, nil, nil, err
			}
			if t == nil {
				return nil, nil, nil, fmt.Errorf("release %q in namespace %s: uninstalled (history kept); nothing is deployed", name, c.Namespace)
			}
			out = append(out, t)
		}
		return c.Helm, out, nil, nil
	}
	helm, err := releasestate.NewConfiguration(c.Settings.RESTClientGetter(), "", os.Getenv("HELM_DRIVER"), c.Logf)
	if err != nil {
		return nil, nil, nil, err
	}
	all, methods, unreadable, err := releasestate.ListReleases(ctx, helm)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("listing the releases of every namespace: %w", err)
	}
	byRelease := map[[2]string][]*release.Release{}
	for _, r := range all {
		if len(req.Releases) == 0 || slices.Contains(req.Releases, r.Name) {
			k := [2]string{r.Namespace, r.Name}
			byRelease[k] = append(byRelease[k], r)
		}
	}
	keys := make([][2]string, 0, len(byRelease))
	for k := range byRelease {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]string) int { return strings.Compare(a[0]+"/"+a[1], b[0]+"/"+b[1]) })
	var out []*statusTarget
	found := map[string]bool{}
	for _, k := range keys {
		hist := byRelease[k]
		sort.Slice(hist, func(i, j int) bool { return hist[i].Version > hist[j].Version })
		t, err := statusTargetOf(k[1], k[0], hist)
		if err != nil {
			return nil, nil, nil, err
		}
		if t != nil { // uninstalled with its history kept: nothing deployed
			if method, ok := methods[t.current]; ok {
				t.serverSide, t.methodRead = method == plan.ApplyMethodSSA, true
			}
			out = append(out, t)
			found[k[1]] = true
		}
	}
	var asked []*releasestate.UnreadableError
	for _, u := range unreadable {
		if len(req.Releases) == 0 || slices.Contains(req.Releases, u.Name) {
			asked = append(asked, u)
			found[u.Name] = true
		}
	}
	for _, name := range req.Releases {
		if !found[name] {
			return nil, nil, nil, fmt.Errorf("release %q: not found in any namespace: %w", name, render.ErrReleaseNotFound)
		}
	}
	return helm, out, asked, nil
}

// statusTargetOf picks from hist (newest first) the revision the live
// objects are compared with: the one the next upgrade starts from, as
// Helm's prepareUpgrade picks it (the newest deployed, else the last),
// or the pending one being applied. nil when the release is uninstalled.
func statusTargetOf(name, ns string, hist []*release.Release) (*statusTarget, error) {
	if len(hist) == 0 {
		return nil, fmt.Errorf("release %q: not found in namespace %s: %w", name, ns, render.ErrReleaseNotFound)
	}
	last := hist[0]
	if last.Info == nil {
		return nil, fmt.Errorf("release %q in namespace %s revision %d: the record holds no status", name, ns, last.Version)
	}
	if last.Info.Status == release.StatusUninstalled {
		return nil, nil
	}
	current := last
	if !last.Info.Status.IsPending() {
		for _, r := range hist {
			if r.Info != nil && r.Info.Status == release.StatusDeployed {
				current = r
				break
			}
		}
	}
	return &statusTarget{current: current, last: last}, nil
}

// hookIDs are the objects of rel's hooks: Helm creates them when their
// event runs, so they are no stray objects of the release.
func hookIDs(rel *release.Release) map[manifest.ObjectID]bool {
	out := map[manifest.ObjectID]bool{}
	for _, h := range rel.Hooks {
		set, err := manifest.Split("hook "+h.Name, h.Manifest, rel.Namespace, manifest.StaticScoper{})
		if err != nil {
			continue
		}
		for _, o := range set.Objects() {
			out[o.ID] = true
		}
	}
	return out
}

// releaseStatus plans t's next upgrade of the same manifest and turns each
// change into the object's status, with t's health.
func (c *Config) releaseStatus(ctx context.Context, t *statusTarget, pl *planner.Planner, objs live.InventoryObjects, states releasestate.StateReader) (*plan.ReleaseStatus, error) {
	cur := t.current
	rs := &plan.ReleaseStatus{Name: cur.Name, Namespace: cur.Namespace, Revision: cur.Version, Last: t.last.Version,
		HelmStatus: string(t.last.Info.Status), Chart: chartRef(cur.Chart), ApplyMethod: plan.ApplyMethodCSA}
	if cur.Chart != nil && cur.Chart.Metadata != nil {
		rs.AppVersion = c.Sanitizer.Text(cur.Chart.Metadata.AppVersion, redact.NameLimit)
	}
	rs.Chart = c.Sanitizer.Text(rs.Chart, redact.NameLimit)
	if t.last.Info != nil {
		rs.Updated = t.last.Info.LastDeployed.Time
	}
	if t.serverSide {
		rs.ApplyMethod = plan.ApplyMethodSSA
	}
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
		rs.Objects = append(rs.Objects, classify.ObjectStatus(ch, objs.Compared(ctx, ch.ID, t.objects.Get(ch.ID)), c.Masker, c.Sanitizer))
	}
	rs.Health = releasestate.Troubles(ctx, states, t.current, t.last, c.Now(), c.Sanitizer)
	if len(t.unreadable) > 0 {
		rs.Health, rs.Unreadable = append(rs.Health, c.unreadableLines(t.unreadable)...), true
	}
	rs.Notes = p.Notes
	return rs, nil
}
