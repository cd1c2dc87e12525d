package apis

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// Served is what a target cluster does with one group/version/kind.
type Served struct {
	// Removed: the target does not serve it. Deprecated: it does, with a
	// warning.
	Removed, Deprecated bool
	// Message says which and what to use instead.
	Message string
	// Source says who knows: the table (offline) or the cluster's discovery.
	Source plan.Source
}

// Checker answers for one group/version/kind.
type Checker func(gvk schema.GroupVersionKind) Served

// ForMinor checks against the table for Kubernetes 1.minor.
func ForMinor(minor int) Checker {
	return func(gvk schema.GroupVersionKind) Served {
		row := Find(gvk.GroupVersion().String(), gvk.Kind)
		switch {
		case row.RemovedIn(minor):
			return Served{Removed: true, Message: row.RemovedMessage(gvk, minor), Source: plan.SourceCatalogue}
		case row.DeprecatedIn(minor):
			return Served{Deprecated: true, Message: row.DeprecatedMessage(gvk, minor), Source: plan.SourceCatalogue}
		}
		return Served{}
	}
}

// Mark applies check to the objects of both manifests of a plan.
//
// An object of the new render whose API the target does not serve makes the
// upgrade fail (Helm cannot build it): its change is invalid and blocking.
// An object of the previous manifest (the last release, or the offline base)
// whose API the target does not serve makes Helm's upgrade fail too, before
// anything is changed ("unable to build kubernetes objects from current
// release manifest ... resource mapping not found"): its change is invalid,
// with the fix (rewrite the stored release with helm-mapkubeapis). A
// deprecated API gets a note. namespace and scoper must be the ones the plan
// was built with, so that the objects' identities match.
func Mark(p *plan.Plan, prevManifest, nextManifest, namespace string, scoper manifest.Scoper, check Checker) error {
	prev, err := manifest.Split("previous manifest", prevManifest, namespace, scoper)
	if err != nil {
		return err
	}
	next, err := manifest.Split("new render", nextManifest, namespace, scoper)
	if err != nil {
		return err
	}
	byID := map[manifest.ObjectID]*plan.Change{}
	for i := range p.Changes {
		byID[p.Changes[i].ID] = &p.Changes[i]
	}
	for _, o := range next.Objects() {
		c := byID[o.ID]
		if c == nil {
			continue
		}
		s := check(o.GVK)
		switch {
		case s.Removed:
			invalid(c, plan.Reason{Path: "apiVersion", Message: s.Message + "; Helm's upgrade fails on it", Source: s.Source})
		case s.Deprecated:
			c.Notes = append(c.Notes, "deprecated API: "+s.Message)
		}
	}
	for _, o := range prev.Objects() {
		c := byID[o.ID]
		if c == nil {
			continue
		}
		if s := check(o.GVK); s.Removed {
			fix := "rewrite the stored release's manifest to served API versions with helm mapkubeapis (github.com/helm/helm-mapkubeapis), then upgrade"
			if n := next.Get(o.ID); n != nil && n.GVK == o.GVK {
				fix = "update the chart to a served API version, " + fix
			}
			invalid(c, plan.Reason{Path: "apiVersion", Source: s.Source, Message: fmt.Sprintf(
				"the release's current manifest holds %s %s %q: %s. Helm cannot build the current release to diff against and refuses the whole upgrade (resource mapping not found). Fix: %s",
				o.GVK.GroupVersion(), o.GVK.Kind, o.ID.Name, s.Message, fix)})
		}
	}
	return nil
}

// invalid makes a change invalid and blocking, the reason first.
func invalid(c *plan.Change, r plan.Reason) {
	for _, have := range c.Reasons {
		if have.Path == r.Path && have.Message == r.Message {
			return
		}
	}
	if c.Action == plan.ActionNoop {
		// Unchanged, but Helm still has to build it: the upgrade fails.
		c.Action = plan.ActionUpdate
	}
	c.Class = plan.ClassInvalid
	c.Destructive, c.Blocking = true, true
	c.Reasons = append([]plan.Reason{r}, c.Reasons...)
	c.Fingerprint = plan.Fingerprint(*c)
}
