package releasestate

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"golang.org/x/sync/errgroup"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/panics"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
)

// Target is a release whose live objects `status` compares with its
// stored state: Current, the revision they are compared with, and Last,
// its newest revision (TargetOf); ServerSide says whether Helm 4 recorded
// Current as applied server-side, MethodRead that it was read with the
// release records (else ReadApplyMethods reads it).
type Target struct {
	Current, Last *release.Release
	ServerSide    bool
	MethodRead    bool
}

// Targets reads the releases names of namespace ns from store: one
// history each. A release that does not exist, or whose every revision
// was uninstalled, is an error.
func Targets(store *storage.Storage, ns string, names []string) ([]*Target, error) {
	var out []*Target
	for _, name := range names {
		hist, err := History(store, name)
		if err != nil {
			return nil, fmt.Errorf("release %q in namespace %s: reading its history: %w", name, ns, err)
		}
		t, err := TargetOf(name, ns, hist)
		if err != nil {
			return nil, err
		}
		if t == nil {
			return nil, fmt.Errorf("release %q in namespace %s: uninstalled (history kept); nothing is deployed", name, ns)
		}
		out = append(out, t)
	}
	return out, nil
}

// TargetsEverywhere reads the releases names (none: every release) of
// every namespace from cfg's storage, which lists them all at once, with
// the apply method each records (ListReleases). It returns the records of
// the releases asked that cannot be read; a release asked by name and
// found nowhere is an error.
func TargetsEverywhere(ctx context.Context, cfg *action.Configuration, names []string) ([]*Target, []*UnreadableError, error) {
	all, methods, unreadable, err := ListReleases(ctx, cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("listing the releases of every namespace: %w", err)
	}
	asked := func(name string) bool { return len(names) == 0 || slices.Contains(names, name) }
	byRelease := map[[2]string][]*release.Release{}
	for _, r := range all {
		if asked(r.Name) {
			k := [2]string{r.Namespace, r.Name}
			byRelease[k] = append(byRelease[k], r)
		}
	}
	keys := make([][2]string, 0, len(byRelease))
	for k := range byRelease {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]string) int { return strings.Compare(a[0]+"/"+a[1], b[0]+"/"+b[1]) })
	var out []*Target
	found := map[string]bool{}
	for _, k := range keys {
		hist := byRelease[k]
		sort.Slice(hist, func(i, j int) bool { return hist[i].Version > hist[j].Version })
		t, err := TargetOf(k[1], k[0], hist)
		if err != nil {
			return nil, nil, err
		}
		if t != nil { // uninstalled with its history kept: nothing deployed
			if method, ok := methods[t.Current]; ok {
				t.ServerSide, t.MethodRead = method == plan.ApplyMethodSSA, true
			}
			out = append(out, t)
			found[k[1]] = true
		}
	}
	var bad []*UnreadableError
	for _, u := range unreadable {
		if asked(u.Name) {
			bad = append(bad, u)
			found[u.Name] = true
		}
	}
	for _, name := range names {
		if !found[name] {
			return nil, nil, fmt.Errorf("release %q: not found in any namespace: %w", name, ErrReleaseNotFound)
		}
	}
	return out, bad, nil
}

// TargetOf picks from hist (newest first) the revision the live objects
// are compared with: the one the next upgrade starts from, as Helm's
// prepareUpgrade picks it (the newest deployed, else the last), or the
// pending one being applied. nil when the release is uninstalled.
func TargetOf(name, ns string, hist []*release.Release) (*Target, error) {
	if len(hist) == 0 {
		return nil, fmt.Errorf("release %q: not found in namespace %s: %w", name, ns, ErrReleaseNotFound)
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
	return &Target{Current: current, Last: last}, nil
}

// ReadApplyMethods reads how each target not read with the release
// records (MethodRead) was applied (Helm 4 records it beside the release:
// a GET of its record each; RecordedServerSide), a few at a time.
func ReadApplyMethods(ctx context.Context, cfg *action.Configuration, targets []*Target) error {
	var g errgroup.Group
	g.SetLimit(live.DefaultConcurrency)
	for _, t := range targets {
		if t.MethodRead {
			continue
		}
		g.Go(func() (err error) {
			defer panics.Catch(&err)
			t.ServerSide = RecordedServerSide(ctx, cfg, t.Current)
			return nil
		})
	}
	return g.Wait()
}

// HookIDs are the objects of rel's hooks: Helm creates them when their
// event runs, so they are no stray objects of the release.
func HookIDs(rel *release.Release) map[manifest.ObjectID]bool {
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

// ReadTargets reads the releases names asked: of namespace ns from cfg's
// storage, or with all from Helm's storage of every namespace (a
// configuration of its own, which it returns; names empty: every release),
// with the records of those that cannot be read.
func ReadTargets(ctx context.Context, cfg *action.Configuration, getter genericclioptions.RESTClientGetter, ns string, names []string, all bool, logf func(string, ...any)) (*action.Configuration, []*Target, []*UnreadableError, error) {
	if !all {
		found, err := Targets(cfg.Releases, ns, names)
		return cfg, found, nil, err
	}
	every, err := NewConfiguration(getter, "", os.Getenv("HELM_DRIVER"), logf)
	if err != nil {
		return nil, nil, nil, err
	}
	found, unreadable, err := TargetsEverywhere(ctx, every, names)
	return every, found, unreadable, err
}

// Status is the head of t's status: its revisions, chart (named chart),
// app version, last deploy and apply method.
func (t *Target) Status(chart string, san *redact.Sanitizer) plan.ReleaseStatus {
	cur := t.Current
	rs := plan.ReleaseStatus{Name: cur.Name, Namespace: cur.Namespace, Revision: cur.Version, Last: t.Last.Version,
		HelmStatus: string(t.Last.Info.Status), Chart: san.Text(chart, redact.NameLimit), ApplyMethod: plan.ApplyMethodCSA}
	if cur.Chart != nil && cur.Chart.Metadata != nil {
		rs.AppVersion = san.Text(cur.Chart.Metadata.AppVersion, redact.NameLimit)
	}
	if t.Last.Info != nil {
		rs.Updated = t.Last.Info.LastDeployed.Time
	}
	if t.ServerSide {
		rs.ApplyMethod = plan.ApplyMethodSSA
	}
	return rs
}

// Parse is t's Current as the live stage reads it: its stored manifest
// parsed once (the planner shares the parse) and the objects of its hooks.
func (t *Target) Parse(scoper manifest.Scoper) (*live.Release, *manifest.Parsed, error) {
	cur := t.Current
	name := fmt.Sprintf("release %q revision %d manifest", cur.Name, cur.Version)
	objs, parsed, err := manifest.SplitRemembering(name, cur.Manifest, cur.Namespace, scoper)
	if err != nil {
		return nil, nil, err
	}
	return &live.Release{Name: cur.Name, Namespace: cur.Namespace, Revision: cur.Version, Objects: objs, Hooks: HookIDs(cur)}, parsed, nil
}
