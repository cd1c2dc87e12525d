package predict

import (
	"encoding/base64"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

func object(apiVersion, kind string, labels, annotations map[string]interface{}, more map[string]interface{}) *unstructured.Unstructured {
	meta := map[string]interface{}{"name": "x", "namespace": "ns", "resourceVersion": "7"}
	if labels != nil {
		meta["labels"] = labels
	}
	if annotations != nil {
		meta["annotations"] = annotations
	}
	obj := map[string]interface{}{"apiVersion": apiVersion, "kind": kind, "metadata": meta}
	for k, v := range more {
		obj[k] = v
	}
	return &unstructured.Unstructured{Object: obj}
}

// payload is a ConfigMap's or a Secret's data and binaryData.
type payload map[string]map[string]string

// TestDerive is the table of which patches are derived without the server
// (and to what), and which are not, and why.
func TestDerive(t *testing.T) {
	chart := map[string]interface{}{"helm.sh/chart": "app-1.0.0", "app": "web"}
	cm := object("v1", "ConfigMap", chart, nil, map[string]interface{}{"data": map[string]interface{}{"k": "v"}})
	pw := base64.StdEncoding.EncodeToString([]byte("pw"))
	secret := func(typ string) *unstructured.Unstructured {
		more := map[string]interface{}{"data": map[string]interface{}{"password": pw}}
		if typ != "" {
			more["type"] = typ
		}
		return object("v1", "Secret", chart, nil, more)
	}
	chartLabels := map[string]string{"helm.sh/chart": "app-1.0.0", "app": "web"}
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	immutable := func(o *unstructured.Unstructured) *unstructured.Unstructured {
		o = o.DeepCopy()
		o.Object["immutable"] = true
		return o
	}
	withBinary := cm.DeepCopy()
	withBinary.Object["binaryData"] = map[string]interface{}{"b": "eA=="}
	mib := strings.Repeat("x", 1024*1024)
	deleting := cm.DeepCopy()
	deleting.SetDeletionTimestamp(&metav1.Time{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)})
	deploySpec := map[string]interface{}{"spec": map[string]interface{}{"template": map[string]interface{}{
		"metadata": map[string]interface{}{"labels": map[string]interface{}{"app": "web"}},
		"spec":     map[string]interface{}{"containers": []interface{}{map[string]interface{}{"name": "app", "image": "nginx:1"}}},
	}}}
	tests := []struct {
		name  string
		live  *unstructured.Unstructured
		patch string
		pt    types.PatchType
		// why is a substring of the reason the server must be asked; ""
		// means derived, with labels and annotations as given.
		why                 string
		labels, annotations map[string]string
		// payload is the derived object's data and binaryData; nil: live's.
		payload payload
	}{
		{name: "configmap label (a chart version bump)", live: cm, patch: `{"metadata":{"labels":{"helm.sh/chart":"app-2.0.0"}}}`,
			labels: map[string]string{"helm.sh/chart": "app-2.0.0", "app": "web"}},
		{name: "label removed", live: cm, patch: `{"metadata":{"labels":{"app":null}}}`,
			labels: map[string]string{"helm.sh/chart": "app-1.0.0"}},
		{name: "every label removed: no empty map", live: cm, patch: `{"metadata":{"labels":{"app":null,"helm.sh/chart":null}}}`},
		{name: "configmap annotation", live: cm, patch: `{"metadata":{"annotations":{"note":"x"}}}`,
			labels: map[string]string{"helm.sh/chart": "app-1.0.0", "app": "web"}, annotations: map[string]string{"note": "x"}},
		{name: "configmap data", live: cm, patch: `{"data":{"k":"w"}}`,
			labels: chartLabels, payload: payload{"data": {"k": "w"}}},
		{name: "label and data", live: cm, patch: `{"data":{"k":"w"},"metadata":{"labels":{"a":"b"}}}`,
			labels: map[string]string{"helm.sh/chart": "app-1.0.0", "app": "web", "a": "b"}, payload: payload{"data": {"k": "w"}}},
		{name: "metadata beyond labels", live: cm, patch: `{"metadata":{"finalizers":["x"]}}`, why: "patch sets metadata.finalizers"},
		{name: "owner references", live: cm, patch: `{"metadata":{"ownerReferences":[]}}`, why: "metadata.ownerReferences"},
		{name: "a patch directive", live: cm, patch: `{"metadata":{"labels":{"$patch":"replace","a":"b"}}}`, why: "directive"},
		{name: "invalid label value", live: cm, patch: `{"metadata":{"labels":{"app":"not valid!"}}}`, why: "refuses"},
		{name: "invalid label key", live: cm, patch: `{"metadata":{"labels":{"-bad":"x"}}}`, why: "refuses"},
		{name: "annotations over 256 KiB", live: cm, patch: `{"metadata":{"annotations":{"big":"` + strings.Repeat("x", 256*1024) + `"}}}`, why: "refuses"},
		{name: "being deleted", live: deleting, patch: `{"metadata":{"labels":{"a":"b"}}}`, why: "being deleted"},
		{name: "a merge patch (not a built-in kind)", live: cm, patch: `{"metadata":{"labels":{"a":"b"}}}`, pt: types.MergePatchType, why: "not a strategic merge patch"},

		{name: "service label", live: object("v1", "Service", chart, nil, nil), patch: `{"metadata":{"labels":{"app":"api"}}}`,
			labels: map[string]string{"helm.sh/chart": "app-1.0.0", "app": "api"}},
		{name: "service annotation (validated, warned about)", live: object("v1", "Service", chart, nil, nil),
			patch: `{"metadata":{"annotations":{"service.beta.kubernetes.io/load-balancer-source-ranges":"x"}}}`, why: "metadata.annotations"},
		{name: "service selector is spec, not metadata", live: object("v1", "Service", chart, nil, nil), patch: `{"spec":{"selector":{"app":"api"}}}`, why: "patch sets spec"},
		{name: "deployment label", live: object("apps/v1", "Deployment", chart, nil, nil), patch: `{"metadata":{"labels":{"app":"api"}}}`,
			labels: map[string]string{"helm.sh/chart": "app-1.0.0", "app": "api"}},
		{name: "deployment annotation bumps the generation", live: object("apps/v1", "Deployment", chart, nil, nil), patch: `{"metadata":{"annotations":{"a":"b"}}}`, why: "metadata.annotations"},
		{name: "pod template labels are spec", live: object("apps/v1", "Deployment", chart, nil, deploySpec),
			patch: `{"spec":{"template":{"metadata":{"labels":{"app":"api"}}}}}`, why: "patch sets spec beyond container images"},
		// An image change is derived only where the pod template warnings
		// are certainly empty (TestDeriveImages).
		{name: "deployment image, no live spec", live: object("apps/v1", "Deployment", chart, nil, nil),
			patch: `{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:2"}]}}}}`, why: "live spec is not a map"},
		{name: "daemonset image", live: object("apps/v1", "DaemonSet", chart, nil, nil),
			patch: `{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:2"}]}}}}`, why: "patch sets spec"},
		{name: "statefulset image", live: object("apps/v1", "StatefulSet", chart, nil, nil),
			patch: `{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:2"}]}}}}`, why: "not derived"},
		{name: "job image (an immutable template)", live: object("batch/v1", "Job", chart, nil, nil),
			patch: `{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:2"}]}}}}`, why: "patch sets spec"},
		{name: "cronjob image", live: object("batch/v1", "CronJob", chart, nil, nil),
			patch: `{"spec":{"jobTemplate":{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:2"}]}}}}}}`, why: "not derived"},
		{name: "job label", live: object("batch/v1", "Job", chart, nil, nil), patch: `{"metadata":{"labels":{"app":"api"}}}`,
			labels: map[string]string{"helm.sh/chart": "app-1.0.0", "app": "api"}},
		{name: "statefulset: warnings on every update", live: object("apps/v1", "StatefulSet", chart, nil, nil), patch: `{"metadata":{"labels":{"a":"b"}}}`, why: "not derived"},
		{name: "namespace: a forced label, PodSecurity", live: object("v1", "Namespace", chart, nil, nil), patch: `{"metadata":{"labels":{"a":"b"}}}`, why: "not derived"},
		{name: "role: escalation check on every update", live: object("rbac.authorization.k8s.io/v1", "Role", chart, nil, nil), patch: `{"metadata":{"labels":{"a":"b"}}}`, why: "not derived"},
		{name: "pvc: storage-class annotation", live: object("v1", "PersistentVolumeClaim", chart, nil, nil), patch: `{"metadata":{"labels":{"a":"b"}}}`, why: "not derived"},
		{name: "custom resource", live: object("example.com/v1", "Widget", chart, nil, nil), patch: `{"metadata":{"labels":{"a":"b"}}}`, why: "not derived"},

		{name: "secret label, stringData as stored", live: secret("Opaque"), patch: `{"metadata":{"labels":{"app":"db"}},"stringData":{"password":"pw"}}`,
			labels: map[string]string{"helm.sh/chart": "app-1.0.0", "app": "db"}},
		{name: "secret without a type is Opaque", live: secret(""), patch: `{"stringData":{"password":"pw"}}`,
			labels: map[string]string{"helm.sh/chart": "app-1.0.0", "app": "web"}},
		{name: "secret stringData changes", live: secret("Opaque"), patch: `{"stringData":{"password":"new"}}`,
			labels: chartLabels, payload: payload{"data": {"password": b64("new")}}},
		{name: "secret stringData adds a key", live: secret("Opaque"), patch: `{"stringData":{"user":"u"}}`,
			labels: chartLabels, payload: payload{"data": {"password": pw, "user": b64("u")}}},
		{name: "secret data", live: secret("Opaque"), patch: `{"data":{"password":"eA=="}}`,
			labels: chartLabels, payload: payload{"data": {"password": "eA=="}}},
		{name: "tls secret: validated and warned about", live: secret("kubernetes.io/tls"), patch: `{"metadata":{"labels":{"a":"b"}}}`, why: "kubernetes.io/tls"},
		{name: "service account token secret", live: secret("kubernetes.io/service-account-token"), patch: `{"metadata":{"annotations":{"a":"b"}}}`, why: "service-account-token"},
		// Payload (data, binaryData, stringData) of ConfigMaps and Opaque Secrets.
		{name: "configmap key removed", live: cm, patch: `{"data":{"k":null}}`, labels: chartLabels, payload: payload{}},
		{name: "configmap key added, none removed", live: cm, patch: `{"data":{"n":"x","gone":null}}`,
			labels: chartLabels, payload: payload{"data": {"k": "v", "n": "x"}}},
		{name: "configmap binaryData re-encoded as the server stores it", live: withBinary, patch: `{"binaryData":{"b":"eR==","c":"e\nQ=="}}`,
			labels: chartLabels, payload: payload{"data": {"k": "v"}, "binaryData": {"b": "eQ==", "c": "eQ=="}}},
		{name: "configmap binaryData not base64", live: cm, patch: `{"binaryData":{"b":"eQ"}}`, why: "not base64"},
		{name: "configmap data exactly 1 MiB", live: cm, patch: `{"data":{"k":"` + mib + `"}}`,
			labels: chartLabels, payload: payload{"data": {"k": mib}}},
		{name: "configmap data over 1 MiB", live: cm, patch: `{"data":{"n":"x","k":"` + mib + `"}}`, why: "over 1 MiB"},
		{name: "configmap data and binaryData over 1 MiB together", live: withBinary, patch: `{"data":{"k":"` + mib + `"}}`, why: "over 1 MiB"},
		{name: "configmap invalid key", live: cm, patch: `{"data":{"bad key!":"x"}}`, why: "key the server refuses"},
		{name: "configmap key in data and binaryData", live: withBinary, patch: `{"data":{"b":"x"}}`, why: "both data and binaryData"},
		{name: "configmap data removed whole", live: cm, patch: `{"data":null}`, why: "data is not a map"},
		{name: "configmap directive in data", live: cm, patch: `{"data":{"$patch":"replace","k":"w"}}`, why: "directive"},
		{name: "configmap data value not a string", live: cm, patch: `{"data":{"k":1}}`, why: "not a string"},
		{name: "immutable configmap data", live: immutable(cm), patch: `{"data":{"k":"w"}}`, why: "immutable"},
		{name: "immutable configmap label", live: immutable(cm), patch: `{"metadata":{"labels":{"app":"api"}}}`,
			labels: map[string]string{"helm.sh/chart": "app-1.0.0", "app": "api"}},
		{name: "patch sets immutable", live: cm, patch: `{"immutable":true,"data":{"k":"w"}}`, why: "patch sets immutable"},
		{name: "secret type changes", live: secret("Opaque"), patch: `{"type":"kubernetes.io/tls"}`, why: "patch sets type"},
		{name: "secret stringData wins over data", live: secret("Opaque"), patch: `{"data":{"password":"eA=="},"stringData":{"password":"pw"}}`,
			labels: chartLabels, payload: payload{"data": {"password": pw}}},
		{name: "secret stringData null", live: secret("Opaque"), patch: `{"stringData":{"password":null}}`, why: "not a string"},
		{name: "secret invalid key", live: secret("Opaque"), patch: `{"stringData":{"a/b":"x"}}`, why: "key the server refuses"},
		{name: "secret over 1 MiB", live: secret("Opaque"), patch: `{"stringData":{"big":"` + mib + `"}}`, why: "over 1 MiB"},
		{name: "immutable secret stringData changes", live: immutable(secret("Opaque")), patch: `{"stringData":{"password":"new"}}`, why: "immutable"},
		{name: "immutable secret stringData as stored", live: immutable(secret("Opaque")), patch: `{"metadata":{"labels":{"app":"db"}},"stringData":{"password":"pw"}}`,
			labels: map[string]string{"helm.sh/chart": "app-1.0.0", "app": "db"}},
		{name: "tls secret data", live: secret("kubernetes.io/tls"), patch: `{"data":{"tls.crt":"eA=="}}`, why: "kubernetes.io/tls"},
		{name: "deployment has no payload", live: object("apps/v1", "Deployment", chart, nil, nil), patch: `{"data":{"k":"v"}}`, why: "patch sets data"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pt := tc.pt
			if pt == "" {
				pt = types.StrategicMergePatchType
			}
			before := tc.live.DeepCopy()
			got, why := Derive(tc.live, []byte(tc.patch), pt)
			if !reflect.DeepEqual(tc.live, before) {
				t.Fatal("Derive changed live")
			}
			if tc.why != "" {
				if got != nil || !strings.Contains(why, tc.why) {
					t.Fatalf("got %v, why %q; want not derived because %q", got != nil, why, tc.why)
				}
				return
			}
			if got == nil {
				t.Fatalf("not derived: %s", why)
			}
			if l := got.GetLabels(); !reflect.DeepEqual(l, tc.labels) && (len(l) != 0 || len(tc.labels) != 0) {
				t.Errorf("labels %v, want %v", l, tc.labels)
			}
			if a := got.GetAnnotations(); !reflect.DeepEqual(a, tc.annotations) && (len(a) != 0 || len(tc.annotations) != 0) {
				t.Errorf("annotations %v, want %v", a, tc.annotations)
			}
			if _, ok := got.Object["metadata"].(map[string]interface{})["labels"]; ok && len(got.GetLabels()) == 0 {
				t.Error("an empty label map: the server stores none")
			}
			if tc.payload != nil {
				for _, f := range []string{"data", "binaryData"} {
					want := tc.payload[f]
					have, _, _ := unstructured.NestedStringMap(got.Object, f)
					if !reflect.DeepEqual(have, want) && (len(have) != 0 || len(want) != 0) {
						t.Errorf("%s %v, want %v", f, have, want)
					}
					if v, ok := got.Object[f]; ok && len(have) == 0 {
						t.Errorf("%s is %v: the server stores no empty map", f, v)
					}
				}
			}
			if _, ok := got.Object["stringData"]; ok {
				t.Error("the derived Secret holds stringData: the server stores data only")
			}
			// Nothing but labels, annotations and (when given) the payload
			// differs from live.
			rest, liveRest := got.DeepCopy(), tc.live.DeepCopy()
			for _, o := range []*unstructured.Unstructured{rest, liveRest} {
				o.SetLabels(nil)
				o.SetAnnotations(nil)
				if tc.payload != nil {
					delete(o.Object, "data")
					delete(o.Object, "binaryData")
				}
			}
			if !reflect.DeepEqual(rest, liveRest) {
				t.Errorf("derived object differs from live beyond metadata:\n%v\n%v", rest.Object, liveRest.Object)
			}
		})
	}
}

// TestDeriveHelmPatches derives from the patches Helm really sends: a chart
// version bump of a ConfigMap and of a Secret written with stringData (Helm
// sends the stringData again on every upgrade, live holds only data).
func TestDeriveHelmPatches(t *testing.T) {
	p := NewPatcher()
	version := func(v string) map[string]interface{} {
		return map[string]interface{}{"helm.sh/chart": "app-" + v}
	}
	tests := []struct {
		name                 string
		original, target     *unstructured.Unstructured
		live                 *unstructured.Unstructured
		derived              bool
		wantLabel, wantWhyIn string
	}{
		{name: "configmap bump",
			original: object("v1", "ConfigMap", version("1"), nil, map[string]interface{}{"data": map[string]interface{}{"k": "v"}}),
			target:   object("v1", "ConfigMap", version("2"), nil, map[string]interface{}{"data": map[string]interface{}{"k": "v"}}),
			live:     object("v1", "ConfigMap", version("1"), nil, map[string]interface{}{"data": map[string]interface{}{"k": "v"}}),
			derived:  true, wantLabel: "app-2"},
		{name: "secret bump with stringData",
			original: object("v1", "Secret", version("1"), nil, map[string]interface{}{"stringData": map[string]interface{}{"pw": "s3"}}),
			target:   object("v1", "Secret", version("2"), nil, map[string]interface{}{"stringData": map[string]interface{}{"pw": "s3"}}),
			live: object("v1", "Secret", version("1"), nil, map[string]interface{}{"type": "Opaque",
				"data": map[string]interface{}{"pw": base64.StdEncoding.EncodeToString([]byte("s3"))}}),
			derived: true, wantLabel: "app-2"},
		{name: "secret value changes",
			original: object("v1", "Secret", version("1"), nil, map[string]interface{}{"stringData": map[string]interface{}{"pw": "s3"}}),
			target:   object("v1", "Secret", version("2"), nil, map[string]interface{}{"stringData": map[string]interface{}{"pw": "s4"}}),
			live: object("v1", "Secret", version("1"), nil, map[string]interface{}{"type": "Opaque",
				"data": map[string]interface{}{"pw": base64.StdEncoding.EncodeToString([]byte("s3"))}}),
			derived: true, wantLabel: "app-2"},
		{name: "configmap value and version",
			original: object("v1", "ConfigMap", version("1"), nil, map[string]interface{}{"data": map[string]interface{}{"k": "v", "old": "o"}}),
			target:   object("v1", "ConfigMap", version("2"), nil, map[string]interface{}{"data": map[string]interface{}{"k": "w"}}),
			live:     object("v1", "ConfigMap", version("1"), nil, map[string]interface{}{"data": map[string]interface{}{"k": "v", "old": "o"}}),
			derived:  true, wantLabel: "app-2"},
		{name: "tls secret value changes",
			original: object("v1", "Secret", version("1"), nil, map[string]interface{}{"type": "kubernetes.io/tls", "stringData": map[string]interface{}{"tls.crt": "a", "tls.key": "b"}}),
			target:   object("v1", "Secret", version("1"), nil, map[string]interface{}{"type": "kubernetes.io/tls", "stringData": map[string]interface{}{"tls.crt": "c", "tls.key": "b"}}),
			live: object("v1", "Secret", version("1"), nil, map[string]interface{}{"type": "kubernetes.io/tls",
				"data": map[string]interface{}{"tls.crt": base64.StdEncoding.EncodeToString([]byte("a")), "tls.key": base64.StdEncoding.EncodeToString([]byte("b"))}}),
			wantWhyIn: "kubernetes.io/tls"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			patch, pt, err := p.Patch(tc.original, tc.target, tc.live)
			if err != nil {
				t.Fatal(err)
			}
			got, why := Derive(tc.live, patch, pt)
			if (got != nil) != tc.derived {
				t.Fatalf("patch %s: derived %v (%s), want %v", patch, got != nil, why, tc.derived)
			}
			if got != nil && got.GetLabels()["helm.sh/chart"] != tc.wantLabel {
				t.Errorf("labels %v", got.GetLabels())
			}
			if got != nil && got.GetKind() == "ConfigMap" {
				// No stringData to fold: the strategic merge patch applied
				// locally is the object the server stores.
				local, err := p.ApplyLocal(tc.live, patch, pt)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got.Object, local.Object) {
					t.Errorf("derived %v\nlocal   %v", got.Object, local.Object)
				}
			}
			if got != nil {
				if _, ok := got.Object["stringData"]; ok {
					t.Error("the derived Secret holds stringData: the server stores data only")
				}
			}
			if !strings.Contains(why, tc.wantWhyIn) {
				t.Errorf("why %q, want %q", why, tc.wantWhyIn)
			}
		})
	}
}
