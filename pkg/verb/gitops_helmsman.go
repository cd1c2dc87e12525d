package verb

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/repo"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/gitops"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/planner"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
)

// planHelmsman plans what Helmsman does when the pull request's desired
// state files are applied (gitops.HelmsmanChanges): each upgrade and
// install as the offline plan of the GitOps objects plans them (Helmsman's
// `helm upgrade --install`, with its noHooks and --force), each uninstall
// as Helm's uninstall of the release the base installed, and a move (a
// namespace or name changed) or a replaced chart as the uninstall and the
// install it is, a StatefulSet's claims the new release does not find
// again marked as data loss. Scratch files go to dir.
func (c *Config) planHelmsman(ctx context.Context, req GitOpsRequest, dir string) ([]GitOpsPlanned, error) {
	opts := req.Helmsman
	opts.Repository = c.helmRepository
	steps, secrets, err := gitops.HelmsmanChanges(req.Base, req.Head, opts)
	// A value the job's environment put into a DSF (set: $SECRET) is
	// masked before any error or report is printed.
	for _, v := range secrets {
		c.Sanitizer.AddValue(v)
	}
	if err != nil {
		return nil, c.Sanitizer.Error(err) // a parser's message can quote a value from $SECRET
	}
	var out []GitOpsPlanned
	// The releases Helmsman uninstalls and installs anew (a move, a
	// replaced chart), by app.
	reinstalled := map[string]bool{}
	for i, st := range steps {
		reinstalled[st.Ref.Name] = reinstalled[st.Ref.Name] || st.Reinstall
		if st.Op == "" {
			out = append(out, GitOpsPlanned{Change: st.Change, Note: st.Decision, Unchanged: true})
			continue
		}
		c.progress("Planning %s (%s:%d): Helmsman's %s", st.Ref, st.File, st.Line, st.Op)
		planned, err := c.planHelmsmanStep(ctx, req, st, filepath.Join(dir, fmt.Sprintf("helmsman-%d", i)))
		if err != nil {
			return nil, c.Sanitizer.Error(locateChange(err, st.Ref, st.File, st.Line))
		}
		if len(planned) == 2 {
			reinstalled[st.Ref.Name] = true // --replace-on-rename
		}
		out = append(out, planned...)
	}
	markLostClaims(out, reinstalled, "Helmsman")
	return out, nil
}

// planHelmsmanStep plans one step, two plans when an upgrade with
// --replace-on-rename changes the chart's name (an uninstall and an install).
func (c *Config) planHelmsmanStep(ctx context.Context, req GitOpsRequest, st gitops.HelmsmanStep, dir string) ([]GitOpsPlanned, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	r := req
	r.Render.DisableHooks = st.NoHooks
	r.Apply.Force = st.Force
	note := func(p *Planned) {
		var escapeOnly *redact.Sanitizer
		p.Plan.Notes = append([]string{escapeOnly.Text(st.Decision, redact.MessageLimit)}, p.Plan.Notes...)
	}
	switch st.Op {
	case gitops.HelmsmanUninstall:
		p, err := c.planHelmsmanUninstall(ctx, req, st.Base, dir)
		if err != nil {
			return nil, err
		}
		note(p)
		return []GitOpsPlanned{{Change: st.Change, Planned: p}}, nil
	case gitops.HelmsmanUpgrade:
		if st.ReplaceOnRename {
			renamed, err := c.chartRenamed(st, filepath.Join(dir, "names"), req.Render.TimeLimit())
			if err != nil {
				return nil, err
			}
			if renamed != "" {
				return c.planHelmsmanReplace(ctx, r, st, renamed, dir)
			}
		}
	}
	p, err := c.planGitOpsChange(ctx, r, st.Change, nil, dir)
	if err != nil {
		return nil, err
	}
	note(p)
	return []GitOpsPlanned{{Change: st.Change, Planned: p}}, nil
}

// planHelmsmanReplace plans an upgrade Helmsman makes an uninstall and an
// install (--replace-on-rename, the chart's name changed).
func (c *Config) planHelmsmanReplace(ctx context.Context, req GitOpsRequest, st gitops.HelmsmanStep, renamed, dir string) ([]GitOpsPlanned, error) {
	un := st
	un.Op, un.Head, un.Reinstall = gitops.HelmsmanUninstall, nil, true
	un.Decision = fmt.Sprintf("the chart's name changes (%s) and Helmsman runs with --replace-on-rename: it uninstalls release %s and installs it anew", renamed, st.Base.Name)
	in := st
	in.Op, in.Base, in.Reinstall = gitops.HelmsmanInstall, nil, true
	in.Decision = un.Decision
	var out []GitOpsPlanned
	for i, s := range []gitops.HelmsmanStep{un, in} {
		p, err := c.planHelmsmanStep(ctx, req, s, filepath.Join(dir, fmt.Sprint(i)))
		if err != nil {
			return nil, err
		}
		out = append(out, p...)
	}
	return out, nil
}

// chartRenamed is "OLD → NEW" when the names in the base's and the head's
// Chart.yaml differ (Helmsman compares the chart's name, not its
// reference), "" when they are the same.
func (c *Config) chartRenamed(st gitops.HelmsmanStep, dir string, timeout time.Duration) (string, error) {
	var names [2]string
	for i, r := range []*gitops.Release{st.Base, st.Head} {
		side := []string{"base", "head"}[i]
		if err := os.MkdirAll(filepath.Join(dir, side), 0o700); err != nil {
			return "", err
		}
		path, err := r.FetchChart(c.Settings, filepath.Join(dir, side), side, timeout)
		if err != nil {
			return "", err
		}
		ch, err := loader.Load(path)
		if err != nil {
			return "", r.ChartError(fmt.Errorf("the %s's chart: %w", side, err))
		}
		names[i] = ch.Name()
	}
	if names[0] == names[1] {
		return "", nil
	}
	return names[0] + " → " + names[1], nil
}

// planHelmsmanUninstall plans `helm uninstall` of the release r, as the
// base installed it: offline, its chart rendered with its values in its
// namespace, every object through the planner's delete path (as the
// uninstall verb plans it against a cluster); with --live, against the
// release stored in the cluster.
func (c *Config) planHelmsmanUninstall(ctx context.Context, req GitOpsRequest, r *gitops.Release, dir string) (*Planned, error) {
	if req.Live {
		rc := *c
		rc.Namespace, rc.StorageNamespace, rc.Helm, rc.Cluster = r.Namespace, r.StorageNamespace, nil, nil
		pu, err := rc.PlanUninstall(ctx, UninstallRequest{ReleaseName: r.Name, Timeout: req.Render.TimeLimit()})
		if err != nil {
			return nil, err
		}
		return &Planned{Plan: pu.Plan}, nil
	}
	chart, values, err := c.gitOpsSide(r, dir, "base", req.Render.TimeLimit())
	if err != nil {
		return nil, err
	}
	target, err := req.Render.OfflineTarget()
	if err != nil {
		return nil, err
	}
	opts := req.Render
	opts.Namespace = r.Namespace
	opts.Values.ValueFiles = []string{values}
	opts.SkipCRDs = true
	c.progress("Rendering %s (the release the uninstall deletes)", chart)
	res, err := render.RenderOffline(ctx, c.Settings, r.Name, render.Base{}, chart, opts, target)
	if err != nil {
		return nil, c.offlineFailed(err)
	}
	installed := res.Next
	in := planner.Input{
		Release: plan.Release{Name: r.Name, Namespace: r.Namespace, Revision: 1, CurrentRevision: 1,
			Chart: chartRef(installed.Chart), Operation: plan.OperationUninstall, ApplyMethod: plan.ApplyMethodCSA},
		PreviousManifest: installed.Manifest,
		PreviousName:     "base chart " + r.Chart.String(),
		Hooks:            hookManifests(installed.Hooks), // pre/post-delete run from them
		PreviousHooks:    hookManifests(installed.Hooks),
	}
	offline := planner.Offline{Release: r.Name, Namespace: r.Namespace}
	p, err := c.planner(offline.Parts(), "").Plan(ctx, in)
	if err != nil {
		return nil, err
	}
	var escapeOnly *redact.Sanitizer
	p.Notes = append(p.Notes, escapeOnly.Text(fmt.Sprintf("offline: the release as the base's chart %s and values render it in namespace %s; helm uninstall deletes its objects", r.Chart, r.Namespace), redact.MessageLimit))
	for _, ch := range p.Changes {
		if ch.Action == plan.ActionDelete && ch.ID.Group == "apps" && ch.ID.Kind == "StatefulSet" && ch.Before != nil {
			if claims := expectedClaimNames(ch.Before, ch.ID.Name); len(claims) > 0 {
				p.Notes = append(p.Notes, leftPrefix+escapeOnly.Text(fmt.Sprintf("%s: the PersistentVolumeClaims of its volumeClaimTemplates (%s): helm uninstall never deletes them (helm#5156) unless its persistentVolumeClaimRetentionPolicy does", ch.ID, joinNames(claims)), redact.MessageLimit))
			}
		}
	}
	return &Planned{Plan: p, Rendered: res}, nil
}

// markLostClaims marks, in the uninstall of a release the orchestrator
// who reinstalls (Helmsman's move or replaced chart; helmfile's release
// marked installed: false beside the same release in another namespace),
// each StatefulSet whose claims the reinstalled release does not find
// again: helm uninstall leaves the claims where they are, and the new
// StatefulSet (another namespace, or name, or claim template) creates
// new, empty ones. That is the data the release loses, which needs an
// acknowledgement; a reinstall that keeps the StatefulSet's namespace,
// name and templates finds its claims again. Uninstalls and installs are
// paired by their reference's name.
func markLostClaims(out []GitOpsPlanned, reinstalled map[string]bool, who string) {
	installs := map[string]*plan.Plan{}
	for _, g := range out {
		if g.Planned != nil && g.Change.Base == nil && g.Change.Head != nil {
			installs[g.Change.Ref.Name] = g.Planned.Plan
		}
	}
	for _, g := range out {
		if g.Planned == nil || g.Change.Head != nil || g.Change.Base == nil || g.Planned.Plan.Release.Op() != plan.OperationUninstall {
			continue
		}
		next, ok := installs[g.Change.Ref.Name]
		if !ok || !reinstalled[g.Change.Ref.Name] {
			continue
		}
		p := g.Planned.Plan
		for i := range p.Changes {
			c := &p.Changes[i]
			if c.Action != plan.ActionDelete || c.ID.Group != "apps" || c.ID.Kind != "StatefulSet" || c.Before == nil {
				continue
			}
			lost := lostTemplates(c.Before, c.ID.Namespace, c.ID.Name, next)
			if len(lost) == 0 {
				continue
			}
			var escapeOnly *redact.Sanitizer
			claims := expectedClaimNames(c.Before, c.ID.Name)
			c.Destructive, c.Class = true, plan.ClassDataLoss
			c.Reasons = append(c.Reasons, plan.Reason{Path: "spec.volumeClaimTemplates", Source: plan.SourceHelm,
				Message: escapeOnly.Text(fmt.Sprintf("%s reinstalls the release: helm uninstall leaves the claims of template(s) %s (%s) in namespace %s, and the reinstalled release's StatefulSet does not use them: it starts on new, empty volumes", who, joinNames(lost), joinNames(claims), c.ID.Namespace), redact.MessageLimit)})
			c.Fingerprint = plan.Fingerprint(*c)
		}
	}
}

// lostTemplates are the claim templates of the StatefulSet ns/name (obj)
// that the install plan next does not create a StatefulSet of the same
// namespace and name with.
func lostTemplates(obj *unstructured.Unstructured, ns, name string, next *plan.Plan) []string {
	var kept []string
	for _, c := range next.Changes {
		if c.ID.Group == "apps" && c.ID.Kind == "StatefulSet" && c.ID.Namespace == ns && c.ID.Name == name && c.After != nil {
			kept = live.ClaimTemplates(c.After)
		}
	}
	var lost []string
	for _, t := range live.ClaimTemplates(obj) {
		found := false
		for _, k := range kept {
			found = found || k == t
		}
		if !found {
			lost = append(lost, t)
		}
	}
	return lost
}

// expectedClaimNames are the claims a StatefulSet's templates make for its
// replicas (ordinals from spec.ordinals.start).
func expectedClaimNames(sts *unstructured.Unstructured, name string) []string {
	replicas, ok, _ := unstructured.NestedInt64(sts.Object, "spec", "replicas")
	if !ok {
		if f, ok2, _ := unstructured.NestedFloat64(sts.Object, "spec", "replicas"); ok2 {
			replicas = int64(f)
		} else {
			replicas = 1
		}
	}
	start, _, _ := unstructured.NestedInt64(sts.Object, "spec", "ordinals", "start")
	var out []string
	for _, t := range live.ClaimTemplates(sts) {
		for i := start; i < start+replicas; i++ {
			out = append(out, live.ClaimName(t, name, i))
		}
	}
	return out
}

func joinNames(names []string) string {
	const shown = 8
	if len(names) > shown {
		return fmt.Sprintf("%s, … %d in all", joinNames(names[:shown]), len(names))
	}
	out := ""
	for i, n := range names {
		if i > 0 {
			out += ", "
		}
		out += n
	}
	return out
}

// helmRepository is the URL of the repository named name in Helm's
// repositories.yaml (`helm repo add`), for Helmsman's
// preconfiguredHelmRepos.
func (c *Config) helmRepository(name string) (string, bool) {
	f, err := repo.LoadFile(c.Settings.RepositoryConfig)
	if err != nil {
		return "", false
	}
	if e := f.Get(name); e != nil {
		return e.URL, true
	}
	return "", false
}
