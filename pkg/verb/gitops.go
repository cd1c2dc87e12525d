package verb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/gitops"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/planner"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
)

// GitOpsRequest is a GitOps plan: the base and head checkouts (a file or
// a directory each) and the offline render flags every release's plan
// shares (--kube-version, --api-versions, --timeout, …).
type GitOpsRequest struct {
	Base, Head string
	Render     render.Options
	Rules      planner.UserRules
	// Live plans each HelmRelease against the release helm-controller
	// stored in the cluster (see planGitOpsLive), each Application against
	// its live objects (planArgoLive).
	Live bool
	// Helmsman is how the job runs Helmsman, whose desired state files
	// are planned too (see planHelmsman); Apply how Helm applies a plan.
	Helmsman gitops.HelmsmanOptions
	Apply    ApplyMode
	// Helmfile is how the job runs helmfile (see planHelmfile).
	Helmfile gitops.HelmfileOptions
	// LookupSecrets are the namespaces whose Secrets a pull request's
	// chart may read through `lookup` under Live (render.SecretLookups);
	// none by default.
	LookupSecrets []string
}

// GitOpsPlanned is one changed HelmRelease or Application and its plan;
// Planned is nil when the head removes it (not planned: see Note).
type GitOpsPlanned struct {
	Change  gitops.Change
	Planned *Planned
	Note    string
	// Unchanged: nothing changes in the cluster (Note says why: Helmsman
	// leaves a protected release alone).
	Unchanged bool
}

// PlanGitOps plans every HelmRelease and Argo CD Application that renders
// differently in req.Head than in req.Base, offline, exactly as
// `--offline --from-chart BASE_CHART --from-values BASE_VALUES HEAD_CHART
// -f HEAD_VALUES` plans it: each side's chart fetched from the repository
// its object names, its values merged as its controller merges them, the
// release name and namespace its controller uses, helm-controller's
// post-renderers applied in process. Nothing reaches a cluster.
func (c *Config) PlanGitOps(ctx context.Context, req GitOpsRequest) ([]GitOpsPlanned, error) {
	base, err := gitops.Load(req.Base)
	if err != nil {
		return nil, fmt.Errorf("base %w", err)
	}
	head, err := gitops.Load(req.Head)
	if err != nil {
		return nil, fmt.Errorf("head %w", err)
	}
	// Every Secret of the files is masked wherever its values could be
	// echoed: in a render, a report, an error about a value put at a
	// targetPath.
	for _, side := range []*gitops.Side{base, head} {
		for _, d := range side.Docs {
			if d.Ref.Kind == "Secret" && d.Ref.APIVersion == "v1" {
				c.Sanitizer.Add(&unstructured.Unstructured{Object: d.Object})
			}
		}
	}
	changes, err := gitops.Changes(base, head)
	// Resolving found the single values the releases take from Secrets:
	// masked before any error or render is printed.
	for _, side := range []*gitops.Side{base, head} {
		for _, v := range side.SecretValues() {
			c.Sanitizer.AddValue(v)
		}
	}
	if err != nil {
		return nil, err
	}
	// Charts and values files live here for the run only (values may hold
	// a Secret's: the directory is the user's alone, and removed).
	dir, err := os.MkdirTemp("", "safe-upgrade-gitops-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := make([]GitOpsPlanned, 0, len(changes))
	for i, ch := range changes {
		if ch.Head == nil {
			out = append(out, GitOpsPlanned{Change: ch, Note: removedNote(ch.Base)})
			continue
		}
		c.progress("Planning %s (%s:%d)", ch.Ref, ch.File, ch.Line)
		planned, err := c.planGitOpsChange(ctx, req, ch, head, filepath.Join(dir, fmt.Sprint(i)))
		if err != nil {
			return nil, locateChange(err, ch.Ref, ch.File, ch.Line)
		}
		out = append(out, GitOpsPlanned{Change: ch, Planned: planned})
	}
	helmsman, err := c.planHelmsman(ctx, req, dir)
	if err != nil {
		return nil, err
	}
	helmfile, err := c.planHelmfile(ctx, req, dir)
	if err != nil {
		return nil, err
	}
	return append(append(out, helmsman...), helmfile...), nil
}

// locateChange names the change ref at file:line in err, unless err names
// its object already (a gitops.NamedError).
func locateChange(err error, ref gitops.ObjectRef, file string, line int) error {
	var named *gitops.NamedError
	if errors.As(err, &named) {
		return err
	}
	return fmt.Errorf("%s (%s:%d): %w", ref, file, line, err)
}

// planGitOpsChange plans one change: the base side (when the base has the
// object; else an empty base, which the head installs into) against the
// head (of the checkout head), in dir.
func (c *Config) planGitOpsChange(ctx context.Context, req GitOpsRequest, ch gitops.Change, head *gitops.Side, dir string) (*Planned, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	headChart, headValues, err := c.gitOpsSide(ch.Head, dir, "head", req.Render.TimeLimit())
	if err != nil {
		return nil, err
	}
	opts := req.Render
	opts.Namespace = ch.Head.Namespace
	opts.Values.ValueFiles = []string{headValues}
	opts.PostRender = gitops.Renderer(ch.Head.PostRenderers)
	opts.SkipCRDs = ch.Head.SkipsCRDs(ch.Base == nil)
	if req.Live && ch.Head.Object.Kind != gitops.KindApplication {
		return c.planGitOpsLive(ctx, req, ch, headChart, opts)
	}
	// New in the head: its controller installs it (helm-controller) or
	// renders it with helm template (Argo CD), both as an install.
	offline := &OfflineBase{Install: true}
	if ch.Base != nil {
		chart, values, err := c.gitOpsSide(ch.Base, dir, "base", req.Render.TimeLimit())
		if err != nil {
			return nil, err
		}
		offline = &OfflineBase{Chart: chart, Values: []string{values}, PostRender: gitops.Renderer(ch.Base.PostRenderers)}
	}
	if req.Live {
		return c.planArgoLive(ctx, req, ch, head.Doc(ch.Head.Object), headChart, opts, offline)
	}
	planned, err := c.Plan(ctx, PlanRequest{ReleaseName: ch.Head.Name, ChartRef: headChart, Render: opts, Rules: req.Rules, Offline: offline, Apply: req.Apply})
	if err != nil {
		return nil, err
	}
	planned.Plan.Notes = append(planned.Plan.Notes, gitOpsNotes(ch)...)
	return planned, nil
}

// helmControllerFieldManager is the field manager helm-controller's Helm
// applies as (its kube client's ManagedFieldsManager).
const helmControllerFieldManager = "helm-controller"

// planGitOpsLive plans a HelmRelease's head against the release
// helm-controller stored, in the cluster of the kubeconfig: three-way, as
// `helm safe-upgrade RELEASE CHART -n NAMESPACE --install --dry-run` with
// the reconstructed chart and values (an install when helm-controller has
// not installed it yet). Helm's records are read in the HelmRelease's
// storage namespace and its objects planned in its release namespace, as
// helm-controller configures Helm (its storage driver on the storage
// namespace, its kube client on the release namespace: helm-controller's
// internal/action ConfigFactory, WithStorage).
func (c *Config) planGitOpsLive(ctx context.Context, req GitOpsRequest, ch gitops.Change, chart string, opts render.Options) (*Planned, error) {
	h := ch.Head
	// A configuration of the release's namespace sharing the run's masker,
	// sanitiser and request counters: errors and reports stay masked.
	rc := *c
	rc.Namespace, rc.StorageNamespace, rc.Helm, rc.Cluster = h.Namespace, h.StorageNamespace, nil, nil
	opts.Install, opts.StorageNamespace = true, h.StorageNamespace
	lookups := &render.SecretLookups{Namespaces: req.LookupSecrets}
	opts.SecretLookups = lookups
	pr := PlanRequest{ReleaseName: h.Name, ChartRef: chart, Render: opts, Rules: req.Rules, Apply: req.Apply}
	if h.Object.Kind == gitops.KindHelmRelease {
		// helm-controller applies as its own field manager and,
		// server-side, always forces conflicts (its internal/action
		// upgrade.go: "We always force conflicts on server-side apply");
		// seen on the real controller: planned as Helm's manager, every
		// field it set was a conflict. Helmsman and helmfile run helm.
		pr.Render.ForceConflicts = true
		pr.FieldManager = helmControllerFieldManager
	}
	planned, err := rc.Plan(ctx, pr)
	note := c.refusedLookupsNote(lookups)
	if err != nil {
		if note != "" {
			err = fmt.Errorf("%w; %s", err, note)
		}
		return nil, err
	}
	if note != "" {
		planned.Plan.Notes = append(planned.Plan.Notes, note)
	}
	planned.Plan.Notes = append(planned.Plan.Notes, gitOpsNotes(ch)...)
	planned.Plan.Notes = append(planned.Plan.Notes, liveNote(planned.Plan.Release.Operation, h))
	return planned, nil
}

// liveNote says what a live plan compared: the stored release, or, when
// none is stored yet, the install against what is live.
func liveNote(op plan.Operation, h *gitops.Release) string {
	if op == plan.OperationInstall {
		return fmt.Sprintf("--live: no release %s is stored in namespace %s: planned as its install, against the live objects in namespace %s", h.Name, h.StorageNamespace, h.Namespace)
	}
	return fmt.Sprintf("--live: planned against release %s as stored in namespace %s, three-way with the live objects in namespace %s", h.Name, h.StorageNamespace, h.Namespace)
}

// gitOpsSide fetches r's chart into dir (each request within timeout) and
// writes its values there: the chart path and the values file of one side.
func (c *Config) gitOpsSide(r *gitops.Release, dir, side string, timeout time.Duration) (string, string, error) {
	sideDir := filepath.Join(dir, side)
	if err := os.MkdirAll(sideDir, 0o700); err != nil {
		return "", "", err
	}
	c.progress("Fetching the %s chart %s", side, r.Chart)
	chart, err := r.FetchChart(c.Settings, sideDir, side, timeout)
	if err != nil {
		return "", "", err
	}
	data, err := sigsyaml.Marshal(r.Values)
	if err != nil {
		return "", "", fmt.Errorf("%s values: %w", side, err)
	}
	values := filepath.Join(sideDir, "values.yaml")
	if err := os.WriteFile(values, data, 0o600); err != nil {
		return "", "", err
	}
	return chart, values, nil
}

// gitOpsNotes are what a reviewer of the plan should know of its
// reconstruction: which object and chart versions it compares, and what
// its controller does otherwise; escaped, as they quote the repository
// (file paths, chart names and versions).
func gitOpsNotes(ch gitops.Change) []string {
	h := ch.Head
	notes := []string{fmt.Sprintf("%s (%s:%d): release %s in namespace %s", ch.Ref, ch.File, ch.Line, h.Name, h.Namespace)}
	if h.StorageNamespace != h.Namespace {
		notes[0] += ", its Helm records in namespace " + h.StorageNamespace
	}
	if ch.Base != nil && (h.UpgradeCRDs == "Create" || h.UpgradeCRDs == "CreateReplace") {
		// Helm's upgrade never applies crds/; helm-controller then does.
		notes = append(notes, "upgrade.crds "+h.UpgradeCRDs+": helm-controller also applies the chart's crds/ on upgrade, which Helm's upgrade (and this plan) leaves out")
	}
	switch b := ch.Base; {
	case b == nil:
		notes = append(notes, fmt.Sprintf("new in the head: installs chart %s", h.Chart))
	case b.Chart != h.Chart:
		notes = append(notes, fmt.Sprintf("chart %s → %s", b.Chart, h.Chart))
	}
	if b := ch.Base; b != nil && (b.Name != h.Name || b.Namespace != h.Namespace) {
		notes = append(notes, fmt.Sprintf("the release moves from %s/%s to %s/%s: the controller installs a new release (helm-controller uninstalls the old one); the plan compares their objects", b.Namespace, b.Name, h.Namespace, h.Name))
	}
	notes = append(notes, h.Notes...)
	var escapeOnly *redact.Sanitizer
	for i, n := range notes {
		notes[i] = escapeOnly.Text(n, redact.MessageLimit)
	}
	return notes
}

// removedNote says what removing a release from the repository does.
func removedNote(r *gitops.Release) string {
	if r.Object.Kind == gitops.KindApplication {
		return fmt.Sprintf("removed from the head: Argo CD deletes the Application and, with its resources-finalizer, every object of it; not planned offline (plan it with: helm safe-upgrade uninstall %s -n %s --dry-run, only an approximation: Argo CD stores no Helm release)", r.Name, r.Namespace)
	}
	return fmt.Sprintf("removed from the head: helm-controller uninstalls release %s (storage namespace %s) when the HelmRelease is deleted; not planned offline (plan it with: helm safe-upgrade uninstall %s -n %s --dry-run)", r.Name, r.StorageNamespace, r.Name, r.StorageNamespace)
}
