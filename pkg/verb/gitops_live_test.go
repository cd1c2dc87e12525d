package verb

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/release"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/gitops"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
)

// TestArgoSyncForObject: an object's sync-options annotation overrides
// the Application's syncOptions as gitops-engine's applyObject reads it,
// and the planner is told the object's apply method.
func TestArgoSyncForObject(t *testing.T) {
	for _, tc := range []struct {
		name       string
		app        gitops.ArgoSync
		annotation string
		want       gitops.ArgoSync
		method     string
	}{
		{"no annotation", gitops.ArgoSync{ServerSide: true, Prune: true}, "", gitops.ArgoSync{ServerSide: true, Prune: true}, plan.ApplyMethodSSA},
		{"server-side for one object", gitops.ArgoSync{}, "ServerSideApply=true", gitops.ArgoSync{ServerSide: true}, plan.ApplyMethodSSA},
		{"client-side for one object", gitops.ArgoSync{ServerSide: true}, "Prune=false, ServerSideApply=false", gitops.ArgoSync{}, plan.ApplyMethodCSA},
		{"replace for one object", gitops.ArgoSync{ServerSide: true}, "Replace=true", gitops.ArgoSync{Replace: true}, plan.ApplyMethodCSA},
		{"replace wins over the object's server-side", gitops.ArgoSync{}, "ServerSideApply=true,Replace=true", gitops.ArgoSync{Replace: true}, plan.ApplyMethodCSA},
		{"the Application's replace is not turned off", gitops.ArgoSync{Replace: true}, "Replace=false,ServerSideApply=true", gitops.ArgoSync{Replace: true}, plan.ApplyMethodCSA},
		{"other options change nothing", gitops.ArgoSync{ServerSide: true}, "Prune=false,Validate=false", gitops.ArgoSync{ServerSide: true}, plan.ApplyMethodSSA},
		{"an option's prefix is not the option", gitops.ArgoSync{}, "ServerSideApply=trueish", gitops.ArgoSync{}, plan.ApplyMethodCSA},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]interface{}{"name": "cm", "namespace": "shop"}}}
			if tc.annotation != "" {
				obj.SetAnnotations(map[string]string{gitops.ArgoSyncOptions: tc.annotation})
			}
			if got := tc.app.ForObject(obj); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			rel := argoApplier(gitops.ArgoTracking{App: "store"}, tc.app).Release(plan.Release{Name: "store", ApplyMethod: plan.ApplyMethodCSA}, obj)
			if rel.ApplyMethod != tc.method || rel.ForceReplace != tc.want.Replace || rel.ForceConflicts != tc.want.ServerSide || rel.Name != "store" {
				t.Errorf("release %+v, want method %s, replace %v", rel, tc.method, tc.want.Replace)
			}
			a := argoApplier(gitops.ArgoTracking{App: "store", Label: true}, tc.app)
			a.Mark(obj, manifest.ObjectID{Kind: "ConfigMap", Namespace: "shop", Name: "cm"})
			if got, want := obj.GetAnnotations()[redact.LastAppliedAnnotation] != "", !tc.want.ServerSide && !tc.want.Replace; got != want {
				t.Errorf("last-applied configuration set: %v, want %v", got, want)
			}
		})
	}
}

// TestArgoApplier: the marks Argo CD adds before it applies (its tracking,
// kubectl's last-applied configuration for a client-side apply), and what
// it leaves when the render drops an object.
func TestArgoApplier(t *testing.T) {
	id := manifest.ObjectID{Kind: "ConfigMap", Namespace: "shop", Name: "cm"}
	newObj := func() *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]interface{}{"name": "cm", "namespace": "shop"}, "data": map[string]interface{}{"k": "v"}}}
	}
	for _, tc := range []struct {
		name          string
		tracking      gitops.ArgoTracking
		sync          gitops.ArgoSync
		label, anno   string
		lastApplied   bool
		keptByDefault bool
		clusterScoped bool
	}{
		{"label, client-side, no prune", gitops.ArgoTracking{App: "store", Label: true}, gitops.ArgoSync{}, "store", "", true, true, false},
		{"annotation, prune", gitops.ArgoTracking{App: "store", Annotation: true}, gitops.ArgoSync{Prune: true}, "", "store:/ConfigMap:shop/cm", true, false, false},
		{"annotation of an instance", gitops.ArgoTracking{App: "store", Instance: "argocd_store", Annotation: true}, gitops.ArgoSync{Prune: true}, "", "argocd_store:/ConfigMap:shop/cm", true, false, false},
		{"both, server-side", gitops.ArgoTracking{App: "store", Label: true, Annotation: true}, gitops.ArgoSync{ServerSide: true, Prune: true}, "store", "store:/ConfigMap:shop/cm", false, false, false},
		{"replace", gitops.ArgoTracking{App: "store", Label: true}, gitops.ArgoSync{Replace: true}, "store", "", false, true, false},
		{"a cluster-scoped object names the destination", gitops.ArgoTracking{App: "store", Namespace: "shop", Annotation: true}, gitops.ArgoSync{Prune: true}, "", "store:/ConfigMap:shop/cm", true, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := argoApplier(tc.tracking, tc.sync)
			obj, objID := newObj(), id
			if tc.clusterScoped {
				obj.SetNamespace("")
				objID.Namespace = ""
			}
			a.Mark(obj, objID)
			if got := obj.GetLabels()[gitops.ArgoInstanceLabel]; got != tc.label {
				t.Errorf("label %q, want %q", got, tc.label)
			}
			if got := obj.GetAnnotations()[gitops.ArgoTrackingID]; got != tc.anno {
				t.Errorf("tracking annotation %q, want %q", got, tc.anno)
			}
			applied := obj.GetAnnotations()[redact.LastAppliedAnnotation]
			if (applied != "") != tc.lastApplied {
				t.Fatalf("last-applied configuration %q, want one: %v", applied, tc.lastApplied)
			}
			if applied != "" {
				// kubectl's: the object as sent, without the annotation.
				var was map[string]interface{}
				if err := json.Unmarshal([]byte(applied), &was); err != nil {
					t.Fatal(err)
				}
				md := was["metadata"].(map[string]interface{})
				if anns, _ := md["annotations"].(map[string]interface{}); anns[redact.LastAppliedAnnotation] != nil || was["data"].(map[string]interface{})["k"] != "v" {
					t.Errorf("last-applied configuration %s", applied)
				}
			}
			if got := a.Kept(newObj()) != ""; got != tc.keptByDefault {
				t.Errorf("kept %v, want %v", got, tc.keptByDefault)
			}
			pinned := newObj()
			pinned.SetAnnotations(map[string]string{gitops.ArgoSyncOptions: "Delete=false, Prune=false"})
			if a.Kept(pinned) == "" {
				t.Error("an object with sync option Prune=false is pruned")
			}
		})
	}
}

// TestArgoLive: the live objects the plan takes for an Application's are
// those Argo CD's cluster cache takes (gitops-engine GetManagedLiveObjs):
// tracked by the method the live objects show, without owner references,
// in every namespace the renders name; and the head's objects.
func TestArgoLive(t *testing.T) {
	type mark struct{ label, annotation, owned bool }
	obj := func(apiVersion, kind, ns, name string, m mark) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind,
			"metadata": map[string]any{"name": name, "namespace": ns}}}
		if m.label {
			u.SetLabels(map[string]string{gitops.ArgoInstanceLabel: "store"})
		}
		if m.annotation {
			gv, _ := schema.ParseGroupVersion(apiVersion)
			u.SetAnnotations(map[string]string{gitops.ArgoTrackingID: gitops.ArgoTrackingValue("store", "shop", gitops.ArgoObject{Group: gv.Group, Kind: kind, Namespace: ns, Name: name})})
		}
		if m.owned {
			u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "CronJob", Name: "backup", UID: "u"}})
		}
		return u
	}
	web := func(m mark) *unstructured.Unstructured { return obj("apps/v1", "Deployment", "shop", "web", m) }
	cm := func(ns, name string, m mark) *unstructured.Unstructured { return obj("v1", "ConfigMap", ns, name, m) }
	// A StatefulSet's claim carries its pod template's labels, the
	// instance label among them, and no tracking annotation.
	claim := func(m mark) *unstructured.Unstructured {
		return obj("v1", "PersistentVolumeClaim", "shop", "data-db-0", m)
	}
	job := func(m mark) *unstructured.Unstructured { return obj("batch/v1", "Job", "shop", "backup-29000000", m) }
	const base = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: old}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: extra, namespace: jobs}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: cache}
---
apiVersion: batch/v1
kind: Job
metadata: {name: setup}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: reader}
`
	const head = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
`
	none, label, ann, both := mark{}, mark{label: true}, mark{annotation: true}, mark{label: true, annotation: true}
	for _, tc := range []struct {
		name        string
		objs        []*unstructured.Unstructured
		want        []string
		label, anno bool
	}{
		{"label tracking: the label tracks", []*unstructured.Unstructured{web(label), cm("shop", "old", label), claim(label)},
			[]string{"Deployment.apps/shop/web", "ConfigMap/shop/old", "PersistentVolumeClaim/shop/data-db-0"}, true, false},
		{"annotation tracking: the label alone tracks nothing", []*unstructured.Unstructured{web(ann), cm("shop", "old", ann), claim(label)},
			[]string{"Deployment.apps/shop/web", "ConfigMap/shop/old"}, false, true},
		{"annotation+label: the label alone tracks nothing", []*unstructured.Unstructured{web(both), cm("shop", "old", both), claim(label), cm("shop", "copied", label)},
			[]string{"Deployment.apps/shop/web", "ConfigMap/shop/old"}, true, true},
		{"an owned object is its owner's, by label", []*unstructured.Unstructured{web(label), job(mark{label: true, owned: true})},
			[]string{"Deployment.apps/shop/web"}, true, false},
		{"an owned object is its owner's, by annotation", []*unstructured.Unstructured{web(ann), job(mark{annotation: true, owned: true})},
			[]string{"Deployment.apps/shop/web"}, false, true},
		{"a head object is read whatever it carries", []*unstructured.Unstructured{web(mark{owned: true}), cm("shop", "old", ann)},
			[]string{"Deployment.apps/shop/web", "ConfigMap/shop/old"}, false, true},
		{"a cluster-scoped object's annotation names the destination namespace", []*unstructured.Unstructured{web(ann), obj("rbac.authorization.k8s.io/v1", "ClusterRole", "", "reader", ann)},
			[]string{"Deployment.apps/shop/web", "ClusterRole.rbac.authorization.k8s.io/reader"}, false, true},
		{"a namespace the base names is read too", []*unstructured.Unstructured{web(ann), cm("jobs", "extra", ann), cm("jobs", "stray", none), cm("elsewhere", "x", ann)},
			[]string{"Deployment.apps/shop/web", "ConfigMap/jobs/extra"}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mapper := meta.NewDefaultRESTMapper(nil)
			listKinds := map[schema.GroupVersionResource]string{}
			for _, gvk := range []schema.GroupVersionKind{{Group: "apps", Version: "v1", Kind: "Deployment"}, {Version: "v1", Kind: "ConfigMap"},
				{Version: "v1", Kind: "PersistentVolumeClaim"}, {Group: "batch", Version: "v1", Kind: "Job"}} {
				mapper.Add(gvk, meta.RESTScopeNamespace)
				m, _ := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
				listKinds[m.Resource] = gvk.Kind + "List"
			}
			role := schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}
			mapper.Add(role, meta.RESTScopeRoot)
			listKinds[role.GroupVersion().WithResource("clusterroles")] = "ClusterRoleList"
			objs := make([]runtime.Object, len(tc.objs))
			for i, o := range tc.objs {
				objs[i] = o
			}
			c := &Config{Cluster: &live.Cluster{Dynamic: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, objs...), Mapper: mapper},
				Sanitizer: redact.NewSanitizer(redact.NewMasker())}
			res := &render.Result{Next: &release.Release{Manifest: head, Namespace: "shop"}, Previous: &release.Release{Manifest: base}}
			f, err := c.argoLive(context.Background(), "argocd", "store", res)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, id := range f.order {
				got = append(got, id.String())
			}
			sort.Strings(got)
			sort.Strings(tc.want)
			if strings.Join(got, " ") != strings.Join(tc.want, " ") || len(f.live) != len(f.order) {
				t.Errorf("live objects %v, want %v", got, tc.want)
			}
			if f.tracking.Label != tc.label || f.tracking.Annotation != tc.anno {
				t.Errorf("tracking %+v, want label %v annotation %v", f.tracking, tc.label, tc.anno)
			}
			if len(f.failed) > 0 {
				t.Errorf("failed: %v", f.failed)
			}
		})
	}
}
