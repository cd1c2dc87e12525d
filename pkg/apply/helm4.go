package apply

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	chart3 "helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	driver3 "helm.sh/helm/v3/pkg/storage/driver"
	action4 "helm.sh/helm/v4/pkg/action"
	common4 "helm.sh/helm/v4/pkg/chart/common"
	chart4 "helm.sh/helm/v4/pkg/chart/v2"
	kube4 "helm.sh/helm/v4/pkg/kube"
	release4 "helm.sh/helm/v4/pkg/release"
	rcommon4 "helm.sh/helm/v4/pkg/release/common"
	rel4 "helm.sh/helm/v4/pkg/release/v1"
	storage4 "helm.sh/helm/v4/pkg/storage"
	driver4 "helm.sh/helm/v4/pkg/storage/driver"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/yaml"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/helmsdk"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/releasestate"
)

// errForceConflictsCSA is Helm 4's refusal of --force-conflicts for a
// client-side apply (its kube client: "forceConflicts enabled when
// serverSideApply disabled"), given before anything is written instead of
// after Helm stored a revision that then fails.
var errForceConflictsCSA = errors.New("--force-conflicts applies only to a server-side apply (Helm 4 refuses it with --server-side=false or on a client-side release)")

// helm4 runs Helm 4's action (helm.sh/helm/v4, the version of the helm
// binary it stands for) for a server-side apply: the stored record says
// apply_method ssa, objects are applied with field manager "helm" and
// operation Apply (forced only with --force-conflicts), a release Helm 3
// applied has its client-side field managers handed over first, hooks are
// created as Helm 4 creates them. See docs/helm4.md for why the SDK and not
// an imitation.
//
// Helm 4 sends a post-renderer's output through kyaml and files it again,
// so the manifest it builds is the planned one re-serialised: its store
// (plannedStore4) checks that it holds exactly the planned objects and
// stores the planned manifest byte for byte in their place.
type helm4 struct {
	req   *Request
	cfg   *action4.Configuration
	store *plannedStore4
}

// storageDrivers maps Helm 3's storage driver names to HELM_DRIVER values.
// The memory driver cannot be shared between the two SDKs.
var storageDrivers = map[string]string{
	driver3.SecretsDriverName:    "secret",
	driver3.ConfigMapsDriverName: "configmap",
	driver3.SQLDriverName:        "sql",
}

func newHelm4(req *Request, guard *plannedGuard, log func(string, ...interface{})) (*helm4, error) {
	switch {
	case req.Force:
		return nil, errors.New("--force-replace (--force) replaces objects with PUT; Helm 4 refuses it with server-side apply (pass --server-side=false to apply client-side)")
	case req.Render.RecreatePods:
		return nil, errors.New("--recreate-pods does not exist in Helm 4, which applies server-side releases")
	}
	drv, ok := storageDrivers[req.Config.Releases.Name()]
	if !ok {
		return nil, fmt.Errorf("server-side apply (Helm 4) cannot use the %s release storage", req.Config.Releases.Name())
	}
	getter, ok := req.Config.RESTClientGetter.(genericclioptions.RESTClientGetter)
	if !ok {
		return nil, fmt.Errorf("server-side apply needs a kubeconfig-based client, not %T", req.Config.RESTClientGetter)
	}
	cfg := action4.NewConfiguration(action4.ConfigurationSetLogger(logHandler{log: log}))
	if err := cfg.Init(getter, req.Rendered.Next.Namespace, drv); err != nil {
		return nil, fmt.Errorf("helm 4 release storage (HELM_DRIVER=%q): %w", drv, err)
	}
	// Helm 4's driver decodes a record unbounded: its reads go through
	// the bounded decoder, as Helm 3's do (releasestate.NewConfiguration).
	bounded := releasestate.BoundStorage4(cfg.Releases, req.Rendered.Next.Namespace, cfg.KubernetesClientSet)
	store := &plannedStore4{Driver: bounded.Driver, plannedGuard: guard}
	releases := storage4.Init(store)
	releases.SetLogger(logHandler{log: log})
	releases.MaxHistory = req.Render.MaxHistory
	cfg.Releases = releases
	return &helm4{req: req, cfg: cfg, store: store}, nil
}

func (h *helm4) started() bool { return h.store.started() }

func (h *helm4) describe(version int, line string) {
	next := h.store.next
	if err := releasestate.DescribeFailed(h.req.Config, next.Namespace, next.Name, version, line); err != nil {
		h.cfg.Logger().Warn(fmt.Sprintf("adding the restore to the description of revision %d: %v", version, err))
	}
}

func (h *helm4) run(ctx context.Context) (*release.Release, error) {
	req, next, o := h.req, h.store.next, h.req.Render
	ch, err := convertChart(req.Rendered.Chart)
	if err != nil {
		return nil, err
	}
	vals := helmsdk.PlainValues(req.Rendered.Values)
	wait := kube4.HookOnlyStrategy
	if o.Wait {
		wait = kube4.StatusWatcherStrategy // helm 4's --wait without a value
	}
	if req.Rendered.RollbackTo > 0 {
		return h.rollback(wait)
	}
	var out release4.Releaser
	if req.Rendered.Install {
		inst := action4.NewInstall(h.cfg)
		inst.ReleaseName, inst.Namespace = next.Name, next.Namespace
		inst.Replace = req.Rendered.Last != nil
		inst.ServerSideApply, inst.ForceConflicts = true, o.ForceConflicts
		o.SetInstall(inst)
		inst.WaitStrategy, inst.RollbackOnFailure = wait, o.Atomic
		inst.Description = req.description()
		inst.PostRenderer, inst.PostRenderStrategy = plannedManifest{manifest: next.Manifest}, action4.PostRenderStrategyNoHooks
		out, err = inst.RunWithContext(ctx, ch, vals)
	} else {
		up := action4.NewUpgrade(h.cfg)
		up.Namespace = next.Namespace
		up.ServerSideApply, up.ForceConflicts = "true", o.ForceConflicts
		o.SetUpgrade(up)
		up.WaitStrategy, up.RollbackOnFailure = wait, o.Atomic
		up.Description = req.description()
		up.PostRenderer, up.PostRenderStrategy = plannedManifest{manifest: next.Manifest}, action4.PostRenderStrategyNoHooks
		out, err = up.RunWithContext(ctx, next.Name, ch, vals)
	}
	return h.stored(out), err
}

// rollback runs Helm 4's rollback action to the planned revision, as
// helm3.rollback does Helm 3's, with --force-conflicts as given and
// --server-side as the plan resolved it: this SDK runs only a planned
// server-side apply, which the plan decided by Helm 4's own rule ("auto"
// follows the apply method of the revision rolled back to), so "true" is
// what Helm 4 would resolve and cannot drift from the plan. The
// description stays Helm's "Rollback to N" with the audit line added by
// the store (Helm 4's own Description would replace it).
func (h *helm4) rollback(wait kube4.WaitStrategy) (*release.Release, error) {
	req, next, o := h.req, h.store.next, h.req.Render
	rb := action4.NewRollback(h.cfg)
	rb.Version = req.Rendered.RollbackTo
	rb.Timeout = o.TimeLimit()
	rb.WaitStrategy, rb.WaitForJobs = wait, o.WaitForJobs
	rb.DisableHooks = o.DisableHooks
	rb.CleanupOnFail = o.CleanupOnFail
	rb.MaxHistory = o.MaxHistory
	rb.ServerSideApply, rb.ForceConflicts = "true", o.ForceConflicts
	h.store.audit = req.description()
	if err := rb.Run(next.Name); err != nil {
		return nil, err
	}
	return h.req.Config.Releases.Get(next.Name, next.Version)
}

// stored reads back, through Helm 3's storage, the revision Helm 4 returned
// (nil when it returned none or it cannot be read).
func (h *helm4) stored(r release4.Releaser) *release.Release {
	rel, err := v1Release(r)
	if err != nil || rel == nil {
		return nil
	}
	got, err := h.req.Config.Releases.Get(rel.Name, rel.Version)
	if err != nil {
		return nil
	}
	return got
}

func v1Release(r release4.Releaser) (*rel4.Release, error) {
	switch rel := r.(type) {
	case *rel4.Release:
		return rel, nil
	case nil:
		return nil, nil
	}
	return nil, fmt.Errorf("unsupported release type %T", r)
}

// plannedStore4 is plannedStore on Helm 4's release storage.
type plannedStore4 struct {
	driver4.Driver
	*plannedGuard
	// audit is plannedStore's: added to a rollback's "Rollback to N".
	audit string
}

// Create stores rls, the planned revision with the planned manifest, hooks
// and notes.
func (s *plannedStore4) Create(key string, r release4.Releaser) error {
	rls, err := v1Release(r)
	if err != nil || rls == nil {
		return fmt.Errorf("release record %s: %w", key, err)
	}
	pending := rls.Info != nil && (rls.Info.Status == rcommon4.StatusPendingUpgrade || rls.Info.Status == rcommon4.StatusPendingInstall ||
		rls.Info.Status == rcommon4.StatusPendingRollback)
	planned, err := s.create(key, rls.Name, rls.Version, pending, func() bool { return sameObjects(rls.Manifest, s.next.Manifest) })
	if err != nil {
		return err
	}
	if planned {
		hooks, err := convertHooks(s.next.Hooks)
		if err != nil {
			return fmt.Errorf("release record %s: %w", key, err)
		}
		rls.Manifest = s.next.Manifest
		rls.Hooks = hooks
		rls.Info.Notes = s.next.Info.Notes
		if s.audit != "" {
			rls.Info.Description += "; " + s.audit
		}
	}
	s.sanitize4(rls)
	return s.Driver.Create(key, rls)
}

// Update stores rls (status updates, a superseded revision).
func (s *plannedStore4) Update(key string, r release4.Releaser) error {
	if err := s.beforeWrite(key); err != nil {
		return err
	}
	if rls, err := v1Release(r); err == nil {
		s.sanitize4(rls)
	}
	return s.Driver.Update(key, r)
}

// Delete deletes a record (MaxHistory pruning, a rolled-back install).
func (s *plannedStore4) Delete(key string) (release4.Releaser, error) {
	if err := s.beforeWrite(key); err != nil {
		return nil, err
	}
	return s.Driver.Delete(key)
}

func (s *plannedStore4) sanitize4(rls *rel4.Release) {
	if s.sanitize != nil && rls != nil && rls.Info != nil {
		rls.Info.Description = s.sanitize(rls.Info.Description)
	}
}

// sameObjects reports whether two manifests hold the same objects, in any
// order and however serialised.
func sameObjects(a, b string) bool {
	x, errA := objectsOf(a)
	y, errB := objectsOf(b)
	return errA == nil && errB == nil && slices.Equal(x, y)
}

// objectsOf returns the documents of a manifest as canonical JSON, sorted;
// empty documents are left out, as Helm leaves them out.
func objectsOf(manifest string) ([]string, error) {
	var out []string
	for _, doc := range releaseutil.SplitManifests(manifest) {
		js, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			return nil, err
		}
		var v interface{}
		if err := json.Unmarshal(js, &v); err != nil {
			return nil, err
		}
		if v == nil {
			continue
		}
		canon, _ := json.Marshal(v)
		out = append(out, string(canon))
	}
	slices.Sort(out)
	return out, nil
}

// convertChart converts a chart loaded with Helm 3's SDK to Helm 4's
// chart/v2 type (apiVersion v1 and v2 charts; the field names and JSON
// forms are the same), with its dependencies.
func convertChart(c *chart3.Chart) (*chart4.Chart, error) {
	data, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("chart %s: %w", c.Name(), err)
	}
	out := new(chart4.Chart)
	if err := json.Unmarshal(data, out); err != nil {
		return nil, fmt.Errorf("chart %s: %w", c.Name(), err)
	}
	out.Values = helmsdk.PlainValues(c.Values)
	for _, f := range c.Raw {
		out.Raw = append(out.Raw, &common4.File{Name: f.Name, Data: f.Data})
	}
	var deps []*chart4.Chart
	for _, d := range c.Dependencies() {
		dc, err := convertChart(d)
		if err != nil {
			return nil, fmt.Errorf("chart %s: %w", c.Name(), err)
		}
		deps = append(deps, dc)
	}
	out.SetDependencies(deps...)
	return out, nil
}

// convertHooks copies the planned hooks into Helm 4's type (same fields,
// same JSON).
func convertHooks(hooks []*release.Hook) ([]*rel4.Hook, error) {
	data, err := json.Marshal(hooks)
	if err != nil {
		return nil, err
	}
	var out []*rel4.Hook
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("converting the planned hooks: %w", err)
	}
	return out, nil
}

// logHandler sends Helm 4's structured log to a printf-style log (already
// sanitised by Apply): "message key=value ...".
type logHandler struct {
	log   func(string, ...interface{})
	attrs []slog.Attr
}

func (logHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h logHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	for _, a := range h.attrs {
		fmt.Fprintf(&b, " %s", a)
	}
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s", a)
		return true
	})
	h.log("%s", b.String())
	return nil
}

func (h logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return logHandler{log: h.log, attrs: append(slices.Clip(h.attrs), attrs...)}
}

func (h logHandler) WithGroup(string) slog.Handler { return h }
