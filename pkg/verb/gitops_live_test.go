package verb

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/gitops"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
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
// tracking annotation that names the object itself.
func TestArgoTracks(t *testing.T) {
	id := manifest.ObjectID{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web"}
	for _, tc := range []struct {
		name         string
		labels, anns map[string]string
		label        bool
		instance     string
	}{
		{"untracked", nil, nil, false, ""},
		{"label", map[string]string{argoInstanceLabel: "store"}, nil, true, ""},
		{"another app's label", map[string]string{argoInstanceLabel: "other"}, nil, false, ""},
		{"annotation", nil, map[string]string{argoTrackingID: "store:apps/Deployment:shop/web"}, false, "store"},
		{"annotation of an app in another namespace", nil, map[string]string{argoTrackingID: "argocd_store:apps/Deployment:shop/web"}, false, "argocd_store"},
		{"copied annotation", nil, map[string]string{argoTrackingID: "store:apps/Deployment:shop/other"}, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			label, instance := argoTracking{App: "store"}.tracks(live.ItemMeta{ID: id, Labels: tc.labels, Annotations: tc.anns}, "argocd")
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
	}{
		{"label, client-side, no prune", argoTracking{App: "store", Label: true}, argoSync{}, "store", "", true, true},
		{"annotation, prune", argoTracking{App: "store", Annotation: true}, argoSync{Prune: true}, "", "store:/ConfigMap:shop/cm", true, false},
		{"annotation of an instance", argoTracking{App: "store", Instance: "argocd_store", Annotation: true}, argoSync{Prune: true}, "", "argocd_store:/ConfigMap:shop/cm", true, false},
		{"both, server-side", argoTracking{App: "store", Label: true, Annotation: true}, argoSync{ServerSide: true, Prune: true}, "store", "store:/ConfigMap:shop/cm", false, false},
		{"replace", argoTracking{App: "store", Label: true}, argoSync{Replace: true}, "store", "", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := argoApplier(tc.tracking, tc.sync)
			obj := newObj()
			a.Mark(obj, id)
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
