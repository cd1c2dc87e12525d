package apply

import (
	"context"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/kube"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/helmsdk"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/releasestate"
)

// sdk is the seam between Apply and the Helm SDK that runs the planned
// revision: Helm 3's action for a release applied with client-side patches
// (helm3), Helm 4's for one applied with server-side apply (helm4, see
// helm4.go and docs/helm4.md). Everything around it (the stale-plan and
// pending-release refusals, the recreate journal and its restore, the
// failure read-back) is the same for both.
type sdk interface {
	// run runs Helm's upgrade (install when Rendered.Install) of the
	// planned revision, with a post-renderer that returns the planned
	// manifest and a release storage that stores the planned hooks and
	// notes (plannedGuard), and returns the revision as stored.
	run(ctx context.Context) (*release.Release, error)
	// started reports whether Helm wrote to the release storage.
	started() bool
	// describe adds line to the description of the failed revision
	// version, keeping the rest of its record as the SDK stored it.
	describe(version int, line string)
}

// sdk returns the Helm SDK that applies the planned revision as Helm would:
// Helm 4's for a server-side apply (the release recorded apply_method ssa,
// or --server-side=true), Helm 3's otherwise.
func (req *Request) sdk(ctx context.Context, log func(string, ...interface{})) (sdk, error) {
	// What Helm stores as a failed revision's description holds the API
	// server's error: through the printer, as every text from elsewhere.
	describe := func(s string) string { return req.Sanitizer.Record(s, redact.RecordLimit) }
	guard := &plannedGuard{ctx: ctx, next: req.Rendered.Next, sanitize: describe}
	if req.ApplyMethod == plan.ApplyMethodSSA {
		return newHelm4(req, guard, log)
	}
	if req.Render.ForceConflicts {
		// Helm 4 refuses it for a client-side apply too.
		return nil, errForceConflictsCSA
	}
	return newHelm3(req, guard, log), nil
}

// helm3 runs Helm 3's action: three-way patches, as `helm upgrade` of Helm 3
// (or Helm 4 with --server-side=false) applies them.
type helm3 struct {
	req   *Request
	cfg   action.Configuration
	store *plannedStore
	log   func(string, ...interface{})
}

func newHelm3(req *Request, guard *plannedGuard, log func(string, ...interface{})) *helm3 {
	run := *req.Config
	if run.Log == nil {
		run.Log = log
	} else if req.Sanitizer != nil {
		run.Log = req.Sanitizer.Logf(run.Log)
	}
	if kc, ok := run.KubeClient.(*kube.Client); ok && req.Sanitizer != nil {
		// Helm's kube client logs the API server's errors as they come.
		kc.Log = req.Sanitizer.Logf(kc.Log)
	}
	store := &plannedStore{Driver: req.Config.Releases.Driver, plannedGuard: guard}
	run.Releases = &storage.Storage{Driver: store, MaxHistory: req.Config.Releases.MaxHistory, Log: req.Config.Releases.Log}
	if run.Releases.Log == nil {
		run.Releases.Log = log
	}
	return &helm3{req: req, cfg: run, store: store, log: log}
}

func (h *helm3) started() bool { return h.store.started() }

func (h *helm3) describe(version int, line string) {
	next := h.store.next
	if err := releasestate.DescribeFailed(h.req.Config, next.Namespace, next.Name, version, line); err != nil {
		h.log("warning: adding the restore to the description of revision %d: %v", version, err)
	}
}

func (h *helm3) run(ctx context.Context) (*release.Release, error) {
	req, next := h.req, h.store.next
	if req.Rendered.Install {
		// As `helm upgrade --install` does for a release that does not
		// exist (or whose revisions are all uninstalled).
		inst := req.Render.NewInstall(&h.cfg, next.Name, next.Namespace)
		inst.Description = req.description()
		inst.Force = req.Force
		inst.Replace = req.Rendered.Last != nil
		inst.PostRenderer = plannedManifest{manifest: next.Manifest}
		return inst.RunWithContext(ctx, req.Rendered.Chart, helmsdk.CopyValues(req.Rendered.Values))
	}
	if req.Rendered.RollbackTo > 0 {
		return h.rollback()
	}
	up := req.Render.NewUpgrade(&h.cfg, next.Namespace)
	up.Description = req.description()
	up.Force = req.Force
	up.PostRenderer = plannedManifest{manifest: next.Manifest}
	return up.RunWithContext(ctx, next.Name, req.Rendered.Chart, helmsdk.CopyValues(req.Rendered.Values))
}

// rollback runs Helm's rollback action to the planned revision
// (Rendered.RollbackTo, named: not "the previous one", which could have
// moved), with helm rollback's flags as the plan was made with; Helm
// stores "Rollback to N" as the new revision's description. It returns the
// revision as Helm stored it, its description followed by the audit line
// (Request.Description).
func (h *helm3) rollback() (*release.Release, error) {
	req, next := h.req, h.store.next
	rb := action.NewRollback(&h.cfg)
	rb.Version = req.Rendered.RollbackTo
	rb.Timeout = req.Render.TimeLimit()
	rb.Wait, rb.WaitForJobs = req.Render.Wait, req.Render.WaitForJobs
	rb.DisableHooks = req.Render.DisableHooks
	rb.CleanupOnFail = req.Render.CleanupOnFail
	rb.MaxHistory = req.Render.MaxHistory
	rb.Force = req.Force
	h.store.audit = req.description()
	if err := rb.Run(next.Name); err != nil {
		return nil, err
	}
	return h.cfg.Releases.Get(next.Name, next.Version)
}
