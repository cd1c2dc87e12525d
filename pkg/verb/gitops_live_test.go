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

// TestArgoSyncOf: an Application's syncPolicy says how Argo CD applies it.
func TestArgoSyncOf(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy map[string]interface{}
		want   argoSync
	}{
		{"none", nil, argoSync{}},
		{"automated without prune", map[string]interface{}{"automated": map[string]interface{}{}}, argoSync{}},
		{"prune", map[string]interface{}{"automated": map[string]interface{}{"prune": true}}, argoSync{Prune: true}},
		{"server-side", map[string]interface{}{"syncOptions": []interface{}{"CreateNamespace=true", "ServerSideApply=true"}}, argoSync{ServerSide: true, CreateNamespace: true}},
		{"spaces not trimmed, as Argo CD's HasOption", map[string]interface{}{"syncOptions": []interface{}{" Replace=true ", "ServerSideApply=true ", "CreateNamespace=false"}}, argoSync{}},
		{"replace", map[string]interface{}{"syncOptions": []interface{}{"Replace=true"}}, argoSync{Replace: true}},
		{"replace wins over server-side", map[string]interface{}{"syncOptions": []interface{}{"ServerSideApply=true", "Replace=true"}}, argoSync{Replace: true}},
		{"options turned off", map[string]interface{}{"syncOptions": []interface{}{"ServerSideApply=false", "Replace=false"}}, argoSync{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := map[string]interface{}{}
			if tc.policy != nil {
				spec["syncPolicy"] = tc.policy
			}
			if got := argoSyncOf(&gitops.Doc{Object: map[string]interface{}{"spec": spec}}); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestArgoSyncForObject: an object's sync-options annotation overrides
// the Application's syncOptions as gitops-engine's applyObject reads it,
// and the planner is told the object's apply method.
func TestArgoSyncForObject(t *testing.T) {
	for _, tc := range []struct {
		name       string
		app        argoSync
		annotation string
		want       argoSync
		method     string
	}{
		{"no annotation", argoSync{ServerSide: true, Prune: true}, "", argoSync{ServerSide: true, Prune: true}, plan.ApplyMethodSSA},
		{"server-side for one object", argoSync{}, "ServerSideApply=true", argoSync{ServerSide: true}, plan.ApplyMethodSSA},
		{"client-side for one object", argoSync{ServerSide: true}, "Prune=false, ServerSideApply=false", argoSync{}, plan.ApplyMethodCSA},
		{"replace for one object", argoSync{ServerSide: true}, "Replace=true", argoSync{Replace: true}, plan.ApplyMethodCSA},
		{"replace wins over the object's server-side", argoSync{}, "ServerSideApply=true,Replace=true", argoSync{Replace: true}, plan.ApplyMethodCSA},
		{"the Application's replace is not turned off", argoSync{Replace: true}, "Replace=false,ServerSideApply=true", argoSync{Replace: true}, plan.ApplyMethodCSA},
		{"other options change nothing", argoSync{ServerSide: true}, "Prune=false,Validate=false", argoSync{ServerSide: true}, plan.ApplyMethodSSA},
		{"an option's prefix is not the option", argoSync{}, "ServerSideApply=trueish", argoSync{}, plan.ApplyMethodCSA},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]interface{}{"name": "cm", "namespace": "shop"}}}
			if tc.annotation != "" {
				obj.SetAnnotations(map[string]string{argoSyncOptions: tc.annotation})
			}
			if got := tc.app.forObject(obj); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			rel := argoApplier(argoTracking{App: "store"}, tc.app).Release(plan.Release{Name: "store", ApplyMethod: plan.ApplyMethodCSA}, obj)
			if rel.ApplyMethod != tc.method || rel.ForceReplace != tc.want.Replace || rel.ForceConflicts != tc.want.ServerSide || rel.Name != "store" {
				t.Errorf("release %+v, want method %s, replace %v", rel, tc.method, tc.want.Replace)
			}
			a := argoApplier(argoTracking{App: "store", Label: true}, tc.app)
			a.Mark(obj, manifest.ObjectID{Kind: "ConfigMap", Namespace: "shop", Name: "cm"})
			if got, want := obj.GetAnnotations()[redact.LastAppliedAnnotation] != "", !tc.want.ServerSide && !tc.want.Replace; got != want {
				t.Errorf("last-applied configuration set: %v, want %v", got, want)
			}
		})
	}
}

// TestArgoTracks: an object is the Application's by its label, or by a
// tracking annotation that names the object itself (for a cluster-scoped
// object, whatever namespace it names: Argo CD writes the destination's).
func TestArgoTracks(t *testing.T) {
	deploy := manifest.ObjectID{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web"}
	role := manifest.ObjectID{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "reader"}
	for _, tc := range []struct {
		name         string
		id           manifest.ObjectID
		labels, anns map[string]string
		label        bool
		instance     string
	}{
		{"untracked", deploy, nil, nil, false, ""},
		{"label", deploy, map[string]string{argoInstanceLabel: "store"}, nil, true, ""},
		{"another app's label", deploy, map[string]string{argoInstanceLabel: "other"}, nil, false, ""},
		{"annotation", deploy, nil, map[string]string{argoTrackingID: "store:apps/Deployment:shop/web"}, false, "store"},
		{"annotation of an app in another namespace", deploy, nil, map[string]string{argoTrackingID: "argocd_store:apps/Deployment:shop/web"}, false, "argocd_store"},
		{"copied annotation", deploy, nil, map[string]string{argoTrackingID: "store:apps/Deployment:shop/other"}, false, ""},
		{"annotation copied from another namespace", deploy, nil, map[string]string{argoTrackingID: "store:apps/Deployment:other/web"}, false, ""},
		{"another app's annotation", deploy, nil, map[string]string{argoTrackingID: "other:apps/Deployment:shop/web"}, false, ""},
		{"cluster-scoped, the destination namespace named", role, nil, map[string]string{argoTrackingID: "store:rbac.authorization.k8s.io/ClusterRole:shop/reader"}, false, "store"},
		{"cluster-scoped, no namespace named", role, nil, map[string]string{argoTrackingID: "store:rbac.authorization.k8s.io/ClusterRole:/reader"}, false, "store"},
		{"cluster-scoped, another kind named", role, nil, map[string]string{argoTrackingID: "store:rbac.authorization.k8s.io/Role:shop/reader"}, false, ""},
		{"malformed", role, nil, map[string]string{argoTrackingID: "store:rbac.authorization.k8s.io/ClusterRole:reader"}, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			label, instance := argoTracking{App: "store", Namespace: "shop"}.tracks(live.ItemMeta{ID: tc.id, Labels: tc.labels, Annotations: tc.anns}, "argocd")
			if label != tc.label || instance != tc.instance {
				t.Errorf("got label %v instance %q, want %v %q", label, instance, tc.label, tc.instance)
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
		tracking      argoTracking
		sync          argoSync
		label, anno   string
		lastApplied   bool
		keptByDefault bool
		clusterScoped bool
	}{
		{"label, client-side, no prune", argoTracking{App: "store", Label: true}, argoSync{}, "store", "", true, true, false},
		{"annotation, prune", argoTracking{App: "store", Annotation: true}, argoSync{Prune: true}, "", "store:/ConfigMap:shop/cm", true, false, false},
		{"annotation of an instance", argoTracking{App: "store", Instance: "argocd_store", Annotation: true}, argoSync{Prune: true}, "", "argocd_store:/ConfigMap:shop/cm", true, false, false},
		{"both, server-side", argoTracking{App: "store", Label: true, Annotation: true}, argoSync{ServerSide: true, Prune: true}, "store", "store:/ConfigMap:shop/cm", false, false, false},
		{"replace", argoTracking{App: "store", Label: true}, argoSync{Replace: true}, "store", "", false, true, false},
		{"a cluster-scoped object names the destination", argoTracking{App: "store", Namespace: "shop", Annotation: true}, argoSync{Prune: true}, "", "store:/ConfigMap:shop/cm", true, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := argoApplier(tc.tracking, tc.sync)
			obj, objID := newObj(), id
			if tc.clusterScoped {
				obj.SetNamespace("")
				objID.Namespace = ""
			}
			a.Mark(obj, objID)
			if got := obj.GetLabels()[argoInstanceLabel]; got != tc.label {
				t.Errorf("label %q, want %q", got, tc.label)
			}
			if got := obj.GetAnnotations()[argoTrackingID]; got != tc.anno {
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
			pinned.SetAnnotations(map[string]string{argoSyncOptions: "Delete=false, Prune=false"})
			if a.Kept(pinned) == "" {
				t.Error("an object with sync option Prune=false is pruned")
			}
		})
	}
}

// TestArgoManagedNamespace: the Namespace Argo CD creates with
// CreateNamespace=true: its name alone, or with managedNamespaceMetadata
// its labels and annotations and ServerSideApply=true.
func TestArgoManagedNamespace(t *testing.T) {
	for _, tc := range []struct {
		name        string
		policy      map[string]interface{}
		managed     bool
		labels, ann map[string]string
	}{
		{"no syncPolicy", nil, false, nil, nil},
		{"CreateNamespace alone", map[string]interface{}{"syncOptions": []interface{}{"CreateNamespace=true"}}, false, nil, nil},
		{"managed metadata", map[string]interface{}{"managedNamespaceMetadata": map[string]interface{}{
			"labels": map[string]interface{}{"team": "shop"}, "annotations": map[string]interface{}{"owner": "ops"}}},
			true, map[string]string{"team": "shop"}, map[string]string{"owner": "ops", argoSyncOptions: "ServerSideApply=true"}},
		{"managed, empty", map[string]interface{}{"managedNamespaceMetadata": map[string]interface{}{}},
			true, nil, map[string]string{argoSyncOptions: "ServerSideApply=true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := map[string]interface{}{}
			if tc.policy != nil {
				spec["syncPolicy"] = tc.policy
			}
			obj, managed := argoManagedNamespace(&gitops.Doc{Object: map[string]interface{}{"spec": spec}}, "shop")
			if obj.GetName() != "shop" || obj.GetKind() != "Namespace" || managed != tc.managed {
				t.Fatalf("got %v managed %v, want Namespace shop managed %v", obj.Object, managed, tc.managed)
			}
			if got := obj.GetLabels(); len(got) != len(tc.labels) || got["team"] != tc.labels["team"] {
				t.Errorf("labels %v, want %v", got, tc.labels)
			}
			if got := obj.GetAnnotations(); len(got) != len(tc.ann) || got["owner"] != tc.ann["owner"] || got[argoSyncOptions] != tc.ann[argoSyncOptions] {
				t.Errorf("annotations %v, want %v", got, tc.ann)
			}
			if obj.GetLabels()[argoInstanceLabel] != "" || obj.GetAnnotations()[argoTrackingID] != "" {
				t.Error("the created namespace is tracked; Argo CD does not track it")
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
			u.SetLabels(map[string]string{argoInstanceLabel: "store"})
		}
		if m.annotation {
			gv, _ := schema.ParseGroupVersion(apiVersion)
			u.SetAnnotations(map[string]string{argoTrackingID: argoTrackingValue("store", "shop", manifest.ObjectID{Group: gv.Group, Kind: kind, Namespace: ns, Name: name})})
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
