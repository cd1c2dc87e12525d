package apply

import (
	"bytes"
	"context"
	"fmt"
	"sync"

	"helm.sh/helm/v3/pkg/postrender"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
)

// plannedManifest is the post-renderer Apply gives Helm's action: it ignores
// what the chart rendered and returns the planned manifest.
//
// In Helm v3.22 (pkg/action/action.go renderResources) the post-renderer
// receives the rendered non-hook manifests only (hooks and NOTES.txt are
// split off before), as one "---"-separated stream with "# Source:" comments,
// CRDs from crds/ excluded; what it returns becomes the release's Manifest
// as is (manifestDoc.String() in upgrade.go and install.go), which Helm then
// builds and applies. The user's own --post-renderer ran when the plan was
// rendered, so its output is already in the planned manifest.
type plannedManifest struct {
	manifest string
}

var _ postrender.PostRenderer = plannedManifest{}

// Run returns the planned manifest, whatever Helm rendered.
func (p plannedManifest) Run(*bytes.Buffer) (*bytes.Buffer, error) {
	return bytes.NewBufferString(p.manifest), nil
}

// plannedStore wraps the release storage driver of the action Apply runs.
// When Helm stores the new revision (the pending-install/-upgrade record it
// creates first, before touching the cluster) plannedStore:
//
//   - refuses it when ctx is done and nothing was written yet, so a
//     cancellation that lands while Helm is still rendering writes nothing;
//   - refuses it when its revision is not the planned one (the release moved
//     after checkRelease) or its manifest is not the planned one (Helm did
//     not use the post-renderer's output);
//   - replaces its hooks and notes by the planned ones. Helm re-renders the
//     chart and does not post-render hooks, so without this a hook using
//     randAlphaNum would differ from the plan. Storage.Create hands the
//     driver the very *release.Release whose Hooks the action then runs
//     (upgrade.go performUpgrade → releasingUpgrade → execHook; install.go
//     RunWithContext → performInstall → execHook), so the replacement is
//     what runs and what is stored.
//
// The checks are plannedGuard's, shared with Helm 4's store (helm4.go).
type plannedStore struct {
	driver.Driver
	*plannedGuard
	// audit, when set, is added to the description Helm gives the planned
	// revision ("Rollback to N; safe-upgrade: …"): Helm's rollback action
	// takes no description of its own.
	audit string
}

// plannedGuard is what the planned store of either Helm SDK checks when
// Helm writes to the release storage.
type plannedGuard struct {
	ctx  context.Context
	next *release.Release // the planned revision
	// sanitize cleans the descriptions Helm stores (a failed revision's
	// holds the API server's error).
	sanitize func(string) string

	mu sync.Mutex
	// written is set once Helm wrote to the storage; created once it
	// created the planned revision (a rollback by --atomic creates another).
	written, created bool
}

// beforeWrite refuses the first write when ctx is done.
func (s *plannedGuard) beforeWrite(key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.written {
		return nil
	}
	if err := s.ctx.Err(); err != nil {
		return fmt.Errorf("release record %s: not written, the apply was cancelled: %w", key, context.Cause(s.ctx))
	}
	s.written = true
	return nil
}

// started reports whether Helm wrote to the release storage.
func (s *plannedGuard) started() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.written
}

// create checks the record Helm is about to create under key: the release
// name, revision and whether it is a pending install, upgrade or rollback, and
// whether its manifest is the planned one (asked only of the planned
// revision). planned reports whether it is the planned revision, whose
// hooks and notes the caller then replaces by the planned ones.
func (s *plannedGuard) create(key, name string, version int, pending bool, planManifest func() bool) (planned bool, err error) {
	s.mu.Lock()
	planned = !s.created && name == s.next.Name && pending
	s.created = s.created || planned
	s.mu.Unlock()
	if planned && version != s.next.Version {
		return false, &StaleError{Name: name, Namespace: s.next.Namespace, Planned: s.next.Version - 1, Current: version - 1}
	}
	if planned && !planManifest() {
		return false, fmt.Errorf("release %q revision %d: Helm rendered a manifest other than the planned one; nothing was applied", name, version)
	}
	return planned, s.beforeWrite(key)
}

// Create stores rls, the planned revision with the planned hooks and notes.
func (s *plannedStore) Create(key string, rls *release.Release) error {
	pending := rls.Info != nil && (rls.Info.Status == release.StatusPendingUpgrade || rls.Info.Status == release.StatusPendingInstall ||
		rls.Info.Status == release.StatusPendingRollback)
	planned, err := s.create(key, rls.Name, rls.Version, pending, func() bool { return rls.Manifest == s.next.Manifest })
	if err != nil {
		return err
	}
	if planned {
		rls.Hooks = copyHooks(s.next.Hooks)
		rls.Info.Notes = s.next.Info.Notes
		if s.audit != "" {
			rls.Info.Description += "; " + s.audit
		}
	}
	s.sanitizeDescription(rls)
	return s.Driver.Create(key, rls)
}

// Update stores rls (Helm's status updates, and on a replacing install the
// superseded previous revision).
func (s *plannedStore) Update(key string, rls *release.Release) error {
	if err := s.beforeWrite(key); err != nil {
		return err
	}
	s.sanitizeDescription(rls)
	return s.Driver.Update(key, rls)
}

// sanitizeDescription rewrites the description Helm is about to store
// (`Upgrade "x" failed: <the API server's error>`) without Secret values.
func (s *plannedStore) sanitizeDescription(rls *release.Release) {
	if s.sanitize != nil && rls != nil && rls.Info != nil {
		rls.Info.Description = s.sanitize(rls.Info.Description)
	}
}

// Delete deletes a record (MaxHistory pruning, an atomic install's uninstall).
func (s *plannedStore) Delete(key string) (*release.Release, error) {
	if err := s.beforeWrite(key); err != nil {
		return nil, err
	}
	return s.Driver.Delete(key)
}

// copyHooks copies the planned hooks: Helm records LastRun and default
// delete policies on the hooks it runs, and the plan must not change.
func copyHooks(hooks []*release.Hook) []*release.Hook {
	out := make([]*release.Hook, len(hooks))
	for i, h := range hooks {
		c := *h
		c.Events = append([]release.HookEvent(nil), h.Events...)
		c.DeletePolicies = append([]release.HookDeletePolicy(nil), h.DeletePolicies...)
		c.OutputLogPolicies = append([]release.HookOutputLogPolicy(nil), h.OutputLogPolicies...)
		out[i] = &c
	}
	return out
}
