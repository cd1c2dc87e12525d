package gitops

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Argo CD's names and rules, as its source has them (argoproj/argo-cd
// common/common.go, util/argo/resource_tracking.go; argoproj/gitops-engine
// pkg/sync/common/types.go, pkg/sync/sync_context.go pruneObject,
// pkg/utils/kube/resource_ops.go newApplyOptionsCommon):
//   - objects are tracked by the label app.kubernetes.io/instance=<app>
//     (Argo CD ≤ 2.x's default) or the annotation
//     argocd.argoproj.io/tracking-id: <app>:<group>/<kind>:<namespace>/<name>
//     (BuildAppInstanceValue; Argo CD 3.x's default);
//   - a sync applies with kubectl's apply code (client-side, keeping
//     kubectl.kubernetes.io/last-applied-configuration) unless
//     ServerSideApply=true: then server-side as field manager
//     argocd-controller (ArgoCDSSAManager), with ForceConflicts; Replace=true
//     replaces (PUT) instead, whatever ServerSideApply says (applyObject);
//   - an object no longer rendered is pruned only with prune (for an
//     automated sync, syncPolicy.automated.prune), and never when it carries
//     argocd.argoproj.io/sync-options: Prune=false (SyncOptionDisablePrune).
const (
	ArgoInstanceLabel = "app.kubernetes.io/instance"
	ArgoTrackingID    = "argocd.argoproj.io/tracking-id"
	ArgoSyncOptions   = "argocd.argoproj.io/sync-options"
	ArgoFieldManager  = "argocd-controller"
)

// ArgoSync is how an Application's syncPolicy says Argo CD applies it.
type ArgoSync struct {
	ServerSide, Replace, Prune bool
	// CreateNamespace: Argo CD creates the destination namespace when it
	// is missing and the render does not hold it.
	CreateNamespace bool
}

// ArgoSyncOf reads spec.syncPolicy of the Application d: its syncOptions
// and automated.prune.
func ArgoSyncOf(d *Doc) ArgoSync {
	var s ArgoSync
	if d == nil {
		return s
	}
	opts, _, _ := unstructured.NestedStringSlice(d.Object, "spec", "syncPolicy", "syncOptions")
	s.ServerSide = hasArgoOption(opts, "ServerSideApply=true")
	s.Replace = hasArgoOption(opts, "Replace=true")
	s.CreateNamespace = hasArgoOption(opts, "CreateNamespace=true")
	// gitops-engine's applyObject replaces before it considers a
	// server-side apply.
	s.ServerSide = s.ServerSide && !s.Replace
	s.Prune, _, _ = unstructured.NestedBool(d.Object, "spec", "syncPolicy", "automated", "prune")
	return s
}

// ArgoObjectOptions are the options of obj's sync-options annotation,
// split as gitops-engine's HasAnnotationOption splits them (pkg/sync/
// resource/annotations.go: on commas, spaces trimmed).
func ArgoObjectOptions(obj *unstructured.Unstructured) []string {
	v := obj.GetAnnotations()[ArgoSyncOptions]
	if v == "" {
		return nil
	}
	opts := strings.Split(v, ",")
	for i := range opts {
		opts[i] = strings.TrimSpace(opts[i])
	}
	return opts
}

// hasArgoOption reports whether opts (syncOptions, or an annotation's
// options) hold opt, compared exactly as Argo CD's SyncOptions.HasOption
// compares an Application's: only the annotation's options are trimmed
// (ArgoObjectOptions).
func hasArgoOption(opts []string, opt string) bool {
	for _, o := range opts {
		if o == opt {
			return true
		}
	}
	return false
}

// ForObject is the sync of the rendered object obj: its sync-options
// annotation overrides the Application's syncOptions as gitops-engine's
// applyObject reads it (argoproj/argo-cd gitops-engine/pkg/sync/
// sync_context.go): Replace=true replaces it whatever the Application
// says; ServerSideApply=false applies it client-side and
// ServerSideApply=true server-side (shouldUseServerSideApply); a replace
// still wins over a server-side apply.
func (s ArgoSync) ForObject(obj *unstructured.Unstructured) ArgoSync {
	opts := ArgoObjectOptions(obj)
	if len(opts) == 0 {
		return s
	}
	s.Replace = s.Replace || hasArgoOption(opts, "Replace=true")
	switch {
	case hasArgoOption(opts, "ServerSideApply=false"):
		s.ServerSide = false
	case hasArgoOption(opts, "ServerSideApply=true"):
		s.ServerSide = true
	}
	s.ServerSide = s.ServerSide && !s.Replace
	return s
}

// Method names how s applies an object, for the plan's notes.
func (s ArgoSync) Method() string {
	switch {
	case s.Replace:
		return "replaced (PUT)"
	case s.ServerSide:
		return "applied server-side as " + ArgoFieldManager
	}
	return "applied client-side (kubectl apply)"
}

// Kept says why Argo CD leaves the live object liveObj, which the head no
// longer renders, in the cluster ("" when it prunes it): pruneObject reads
// the live object's annotation, and prunes only with prune on.
func (s ArgoSync) Kept(liveObj *unstructured.Unstructured) string {
	if hasArgoOption(ArgoObjectOptions(liveObj), "Prune=false") {
		return "no longer rendered: left in the cluster, OutOfSync (" + ArgoSyncOptions + ": Prune=false)"
	}
	if !s.Prune {
		return "no longer rendered: left in the cluster, OutOfSync (prune is off: Argo CD prunes only with syncPolicy.automated.prune)"
	}
	return ""
}

// ArgoManagedNamespace is the Namespace Argo CD creates for the
// Application app with CreateNamespace=true, as argo-cd's syncNamespace
// (controller/sync_namespace.go) and gitops-engine's autoCreateNamespace
// (pkg/sync/sync_context.go) build it: its name alone, untracked; with
// spec.syncPolicy.managedNamespaceMetadata, its labels and annotations and
// the sync option ServerSideApply=true. managed reports the latter.
func ArgoManagedNamespace(app *Doc, ns string) (obj *unstructured.Unstructured, managed bool) {
	obj = &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]interface{}{"name": ns}}}
	if app == nil {
		return obj, false
	}
	md, ok, _ := unstructured.NestedMap(app.Object, "spec", "syncPolicy", "managedNamespaceMetadata")
	if !ok || md == nil {
		return obj, false
	}
	labels, _, _ := unstructured.NestedStringMap(md, "labels")
	annotations, _, _ := unstructured.NestedStringMap(md, "annotations")
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[ArgoSyncOptions] = "ServerSideApply=true"
	if len(labels) > 0 {
		obj.SetLabels(labels)
	}
	obj.SetAnnotations(annotations)
	return obj, true
}
