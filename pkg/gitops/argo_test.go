package gitops

import (
	"testing"
)

// TestArgoSyncOf: an Application's syncPolicy says how Argo CD applies it.
func TestArgoSyncOf(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy map[string]interface{}
		want   ArgoSync
	}{
		{"none", nil, ArgoSync{}},
		{"automated without prune", map[string]interface{}{"automated": map[string]interface{}{}}, ArgoSync{}},
		{"prune", map[string]interface{}{"automated": map[string]interface{}{"prune": true}}, ArgoSync{Prune: true}},
		{"server-side", map[string]interface{}{"syncOptions": []interface{}{"CreateNamespace=true", "ServerSideApply=true"}}, ArgoSync{ServerSide: true, CreateNamespace: true}},
		{"spaces not trimmed, as Argo CD's HasOption", map[string]interface{}{"syncOptions": []interface{}{" Replace=true ", "ServerSideApply=true ", "CreateNamespace=false"}}, ArgoSync{}},
		{"replace", map[string]interface{}{"syncOptions": []interface{}{"Replace=true"}}, ArgoSync{Replace: true}},
		{"replace wins over server-side", map[string]interface{}{"syncOptions": []interface{}{"ServerSideApply=true", "Replace=true"}}, ArgoSync{Replace: true}},
		{"options turned off", map[string]interface{}{"syncOptions": []interface{}{"ServerSideApply=false", "Replace=false"}}, ArgoSync{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := map[string]interface{}{}
			if tc.policy != nil {
				spec["syncPolicy"] = tc.policy
			}
			if got := ArgoSyncOf(&Doc{Object: map[string]interface{}{"spec": spec}}); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestArgoTracks: an object is the Application's by its label, or by a
// tracking annotation that names the object itself (for a cluster-scoped
// object, whatever namespace it names: Argo CD writes the destination's).
func TestArgoTracks(t *testing.T) {
	deploy := ArgoObject{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web"}
	role := ArgoObject{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "reader"}
	for _, tc := range []struct {
		name         string
		id           ArgoObject
		labels, anns map[string]string
		label        bool
		instance     string
	}{
		{"untracked", deploy, nil, nil, false, ""},
		{"label", deploy, map[string]string{ArgoInstanceLabel: "store"}, nil, true, ""},
		{"another app's label", deploy, map[string]string{ArgoInstanceLabel: "other"}, nil, false, ""},
		{"annotation", deploy, nil, map[string]string{ArgoTrackingID: "store:apps/Deployment:shop/web"}, false, "store"},
		{"annotation of an app in another namespace", deploy, nil, map[string]string{ArgoTrackingID: "argocd_store:apps/Deployment:shop/web"}, false, "argocd_store"},
		{"copied annotation", deploy, nil, map[string]string{ArgoTrackingID: "store:apps/Deployment:shop/other"}, false, ""},
		{"annotation copied from another namespace", deploy, nil, map[string]string{ArgoTrackingID: "store:apps/Deployment:other/web"}, false, ""},
		{"another app's annotation", deploy, nil, map[string]string{ArgoTrackingID: "other:apps/Deployment:shop/web"}, false, ""},
		{"cluster-scoped, the destination namespace named", role, nil, map[string]string{ArgoTrackingID: "store:rbac.authorization.k8s.io/ClusterRole:shop/reader"}, false, "store"},
		{"cluster-scoped, no namespace named", role, nil, map[string]string{ArgoTrackingID: "store:rbac.authorization.k8s.io/ClusterRole:/reader"}, false, "store"},
		{"cluster-scoped, another kind named", role, nil, map[string]string{ArgoTrackingID: "store:rbac.authorization.k8s.io/Role:shop/reader"}, false, ""},
		{"malformed", role, nil, map[string]string{ArgoTrackingID: "store:rbac.authorization.k8s.io/ClusterRole:reader"}, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			label, instance := ArgoTracking{App: "store", Namespace: "shop"}.Tracks(tc.id, tc.labels, tc.anns, "argocd")
			if label != tc.label || instance != tc.instance {
				t.Errorf("got label %v instance %q, want %v %q", label, instance, tc.label, tc.instance)
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
			true, map[string]string{"team": "shop"}, map[string]string{"owner": "ops", ArgoSyncOptions: "ServerSideApply=true"}},
		{"managed, empty", map[string]interface{}{"managedNamespaceMetadata": map[string]interface{}{}},
			true, nil, map[string]string{ArgoSyncOptions: "ServerSideApply=true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := map[string]interface{}{}
			if tc.policy != nil {
				spec["syncPolicy"] = tc.policy
			}
			obj, managed := ArgoManagedNamespace(&Doc{Object: map[string]interface{}{"spec": spec}}, "shop")
			if obj.GetName() != "shop" || obj.GetKind() != "Namespace" || managed != tc.managed {
				t.Fatalf("got %v managed %v, want Namespace shop managed %v", obj.Object, managed, tc.managed)
			}
			if got := obj.GetLabels(); len(got) != len(tc.labels) || got["team"] != tc.labels["team"] {
				t.Errorf("labels %v, want %v", got, tc.labels)
			}
			if got := obj.GetAnnotations(); len(got) != len(tc.ann) || got["owner"] != tc.ann["owner"] || got[ArgoSyncOptions] != tc.ann[ArgoSyncOptions] {
				t.Errorf("annotations %v, want %v", got, tc.ann)
			}
			if obj.GetLabels()[ArgoInstanceLabel] != "" || obj.GetAnnotations()[ArgoTrackingID] != "" {
				t.Error("the created namespace is tracked; Argo CD does not track it")
			}
		})
	}
}
