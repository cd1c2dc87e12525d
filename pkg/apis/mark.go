package apis

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
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
	MarkObjects(p, Objects(prev), Objects(next), manifest.CRDKinds(next), check)
	return nil
}

// Object is what Mark needs of a manifest's object: its identity and kind.
type Object struct {
	ID  manifest.ObjectID
	GVK schema.GroupVersionKind
}

// Objects lists the objects of s as Mark needs them: far smaller than s,
// so a planner can keep them after dropping s.
func Objects(s *manifest.Set) []Object {
	objs := s.Objects()
	out := make([]Object, len(objs))
	for i, o := range objs {
		out[i] = Object{ID: o.ID, GVK: o.GVK}
	}
	return out
}

// MarkObjects is Mark over the objects of both manifests, already parsed:
// newCRDs are the kinds whose CRD the new render brings (the planner judges
// those).
func MarkObjects(p *plan.Plan, prev, next []Object, newCRDs map[schema.GroupKind]bool, check Checker) {
	byID := map[manifest.ObjectID]*plan.Change{}
	for i := range p.Changes {
		byID[p.Changes[i].ID] = &p.Changes[i]
	}
	nextGVK := make(map[manifest.ObjectID]schema.GroupVersionKind, len(next))
	for _, o := range next {
		nextGVK[o.ID] = o.GVK
		c := byID[o.ID]
		if c == nil || newCRDs[o.GVK.GroupKind()] {
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
	for _, o := range prev {
		c := byID[o.ID]
		if c == nil || newCRDs[o.GVK.GroupKind()] {
			continue
		}
		if s := check(o.GVK); s.Removed {
			fix := "rewrite the stored release's manifest to served API versions with helm mapkubeapis (github.com/helm/helm-mapkubeapis), then upgrade"
			if gvk, ok := nextGVK[o.ID]; ok && gvk == o.GVK {
				fix = "update the chart to a served API version, " + fix
			}
			invalid(c, plan.Reason{Path: "apiVersion", Source: s.Source, Message: fmt.Sprintf(
				"the release's current manifest holds %s %s %q: %s. Helm cannot build the current release to diff against and refuses the whole upgrade (resource mapping not found). Fix: %s",
				o.GVK.GroupVersion(), o.GVK.Kind, o.ID.Name, s.Message, fix)})
		}
	}
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

// ForCluster checks against a cluster's discovery data (mapper) for the
// group versions it serves; the table adds the replacement to a removal and
// reports deprecations for the cluster's minor (0 when unknown: none).
// Only built-in groups are judged: a custom resource whose CRD is missing is
// not an API removal.
func ForCluster(mapper meta.RESTMapper, minor int) Checker {
	table := ForMinor(minor)
	return func(gvk schema.GroupVersionKind) Served {
		_, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if meta.IsNoMatchError(err) && builtinGroup(gvk.Group) {
			msg := fmt.Sprintf("the cluster does not serve %s %s", gvk.GroupVersion(), gvk.Kind)
			if row := Find(gvk.GroupVersion().String(), gvk.Kind); row != nil && row.Removed > 0 {
				msg += fmt.Sprintf(" (removed in Kubernetes 1.%d): use %s", row.Removed, row.Replacement)
			}
			return Served{Removed: true, Message: msg, Source: plan.SourceServer}
		}
		if s := table(gvk); s.Deprecated {
			return s
		}
		return Served{}
	}
}

// builtinGroup reports whether group is one of Kubernetes' own API groups:
// the core group, the groups without a dot (apps, batch, ...) and *.k8s.io.
func builtinGroup(group string) bool {
	return group == "" || !strings.Contains(group, ".") || strings.HasSuffix(group, ".k8s.io")
}
