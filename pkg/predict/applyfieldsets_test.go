package predict

import (
	"encoding/json"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

// TestApplyByFieldSetsIsTheMerge compares what ApplyByFieldSets shows with
// what the field manager's whole pipeline decides (DecideApply without the
// shortcut) on the built-in kinds' real schemas (client-go's, generated
// from the same OpenAPI the server publishes: atomic and granular maps,
// atomic, set and associative lists): wherever the shortcut decides, the
// verdict, the merged object and its managed fields (times aside) must be
// the pipeline's. The live objects are made as the server makes them:
// applied by helm through the field manager, a Secret's stringData folded
// into data, defaulted fields no manager owns, other managers' writes.
func TestApplyByFieldSetsIsTheMerge(t *testing.T) {
	tc := applyconfigurations.NewTypeConverter(clientgoscheme.Scheme)
	const cm = `{apiVersion: v1, kind: ConfigMap, metadata: {name: cm, namespace: ns, labels: {app: a, v: "1"}}, data: {key: a, other: b}}`
	const secret = `{apiVersion: v1, kind: Secret, metadata: {name: s, namespace: ns}, type: Opaque, stringData: {password: pw-1}}`
	const deploy = `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, namespace: ns, labels: {v: "1"}},
	  spec: {replicas: 1, selector: {matchLabels: {app: d}}, template: {metadata: {labels: {app: d}},
	    spec: {tolerations: [{key: k, operator: Exists}], containers: [{name: c, image: "nginx:1.25", command: [a, b],
	      env: [{name: A, value: "1"}, {name: B, value: "2"}], ports: [{containerPort: 80}]}]}}}}`
	const svc = `{apiVersion: v1, kind: Service, metadata: {name: svc, namespace: ns, labels: {v: "1"}}, spec: {selector: {app: a}, ports: [{port: 80}]}}`
	// Fields the server defaults on create, which no manager owns.
	deployDefaults := func(o map[string]interface{}) {
		spec := o["spec"].(map[string]interface{})
		spec["revisionHistoryLimit"] = int64(10)
		spec["progressDeadlineSeconds"] = int64(600)
		spec["strategy"] = map[string]interface{}{"type": "RollingUpdate", "rollingUpdate": map[string]interface{}{"maxSurge": "25%", "maxUnavailable": "25%"}}
		pod := spec["template"].(map[string]interface{})["spec"].(map[string]interface{})
		pod["restartPolicy"], pod["dnsPolicy"] = "Always", "ClusterFirst"
		c := pod["containers"].([]interface{})[0].(map[string]interface{})
		c["imagePullPolicy"], c["terminationMessagePath"] = "IfNotPresent", "/dev/termination-log"
		c["ports"].([]interface{})[0].(map[string]interface{})["protocol"] = "TCP"
	}
	svcDefaults := func(o map[string]interface{}) {
		spec := o["spec"].(map[string]interface{})
		spec["clusterIP"], spec["type"], spec["sessionAffinity"] = "10.0.0.10", "ClusterIP", "None"
		port := spec["ports"].([]interface{})[0].(map[string]interface{})
		port["protocol"], port["targetPort"] = "TCP", int64(80)
	}
	type write struct {
		manager, subresource string
		apply                bool
		obj                  string // the applied configuration, or a change of the live object (merge patch)
	}
	cases := []struct {
		name      string
		installed string
		defaults  func(map[string]interface{})
		writes    []write
		next      string
		// want is what the shortcut shows (ApplyAsk: not shown).
		want ApplyVerdict
	}{
		{name: "unchanged configmap", installed: cm, next: cm, want: ApplyNoop},
		{name: "granular map value changed", installed: cm, next: replace(cm, "key: a", "key: changed"), want: ApplyChange},
		{name: "label changed, another label owned by an Update manager", installed: cm,
			writes: []write{{manager: "kubectl-label", obj: `{metadata: {labels: {theirs: x}}}`}},
			next:   replace(cm, `v: "1"`, `v: "2"`), want: ApplyChange},
		{name: "changed field owned by an Update manager (conflict)", installed: cm,
			writes: []write{{manager: "kubectl-edit", obj: `{data: {key: edited}}`}},
			next:   replace(cm, "key: a", "key: changed"), want: ApplyAsk},
		{name: "field owned by an Update manager, unchanged by the chart (drift)", installed: cm,
			writes: []write{{manager: "kubectl-edit", obj: `{data: {key: edited}}`}},
			next:   replace(cm, `v: "1"`, `v: "2"`), want: ApplyAsk},
		{name: "key removed from the chart (released)", installed: cm, next: replace(cm, ", other: b", ""), want: ApplyAsk},
		{name: "key added by the chart", installed: cm, next: replace(cm, "other: b", "other: b, new: c"), want: ApplyAsk},
		{name: "unchanged secret written with stringData", installed: secret, next: secret, want: ApplyNoop},
		{name: "secret stringData changed", installed: secret, next: replace(secret, "pw-1", "pw-2"), want: ApplyChange},
		{name: "unchanged deployment with defaults", installed: deploy, defaults: deployDefaults, next: deploy, want: ApplyNoop},
		{name: "image changed beside defaulted fields", installed: deploy, defaults: deployDefaults,
			next: replace(deploy, "nginx:1.25", "nginx:1.26"), want: ApplyChange},
		{name: "atomic list reordered", installed: deploy, defaults: deployDefaults,
			next: replace(deploy, "command: [a, b]", "command: [b, a]"), want: ApplyChange},
		{name: "atomic list of structs changed", installed: deploy, defaults: deployDefaults,
			next: replace(deploy, "operator: Exists", "operator: Equal, value: v"), want: ApplyChange},
		{name: "associative list reordered", installed: deploy, defaults: deployDefaults,
			next: replace(deploy, `env: [{name: A, value: "1"}, {name: B, value: "2"}]`, `env: [{name: B, value: "2"}, {name: A, value: "1"}]`), want: ApplyChange},
		{name: "associative list item changed", installed: deploy, defaults: deployDefaults,
			next: replace(deploy, `{name: B, value: "2"}`, `{name: B, value: "3"}`), want: ApplyChange},
		{name: "atomic map changed", installed: deploy, defaults: deployDefaults,
			next: replace(deploy, "selector: {matchLabels: {app: d}}", "selector: {matchLabels: {app: e}}"), want: ApplyChange},
		{name: "status and an annotation owned by the controller, label changed", installed: deploy, defaults: deployDefaults,
			writes: []write{
				{manager: "kube-controller-manager", obj: `{metadata: {annotations: {deployment.kubernetes.io/revision: "1"}}}`},
				{manager: "kube-controller-manager", subresource: "status", obj: `{status: {observedGeneration: 1, replicas: 1}}`},
			},
			next: replace(deploy, `v: "1"`, `v: "2"`), want: ApplyChange},
		{name: "container shared with another Apply manager", installed: deploy, defaults: deployDefaults,
			writes: []write{{manager: "env-injector", apply: true, obj: `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, namespace: ns},
			  spec: {selector: {matchLabels: {app: d}}, template: {metadata: {labels: {app: d}}, spec: {containers: [{name: c, env: [{name: C, value: "1"}]}]}}}}`}},
			next: replace(deploy, "nginx:1.25", "nginx:1.26"), want: ApplyAsk},
		{name: "replicas owned through the scale subresource", installed: deploy, defaults: deployDefaults,
			writes: []write{{manager: "scaler", subresource: "scale", obj: `{spec: {replicas: 2}}`}},
			next:   replace(deploy, `v: "1"`, `v: "2"`), want: ApplyAsk},
		{name: "service port changed (list keyed by port and protocol)", installed: svc, defaults: svcDefaults,
			next: replace(svc, "port: 80", "port: 8080"), want: ApplyAsk},
		{name: "service label changed beside defaulted fields", installed: svc, defaults: svcDefaults,
			next: replace(svc, `v: "1"`, `v: "2"`), want: ApplyChange},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			installed := yamlObject(t, c.installed)
			liveObj := serverApply(t, tc, nil, installed, FieldManager, "")
			if c.defaults != nil {
				c.defaults(liveObj.Object)
			}
			for _, w := range c.writes {
				if w.apply {
					liveObj = serverApply(t, tc, liveObj, yamlObject(t, w.obj), w.manager, w.subresource)
					continue
				}
				liveObj = serverUpdate(t, tc, liveObj, w.obj, w.manager, w.subresource)
			}
			next := yamlObject(t, c.next)
			shown := ApplyByFieldSets(tc, liveObj, next)
			if shown.Verdict != c.want {
				t.Fatalf("shown from field sets: %v, want %v", shown.Verdict, c.want)
			}
			full := decideApply(tc, liveObj, next, false)
			if shown.Verdict == ApplyAsk {
				t.Logf("not shown; the field manager decides %v (%s)", full.Verdict, full.Why)
				return
			}
			if full.Verdict != shown.Verdict {
				t.Fatalf("shown %v; the field manager decides %v (%s)", shown.Verdict, full.Verdict, full.Why)
			}
			if shown.Verdict != ApplyChange {
				return
			}
			if a, b := withoutManagedFields(shown.Merged), withoutManagedFields(full.Merged); !equality.Semantic.DeepEqual(a.Object, b.Object) {
				t.Errorf("merged object shown:\n%v\nthe field manager's:\n%v", a.Object, b.Object)
			}
			if a, b := timeless(shown.Merged.GetManagedFields()), timeless(full.Merged.GetManagedFields()); !equality.Semantic.DeepEqual(a, b) {
				t.Errorf("managed fields shown:\n%v\nthe field manager's:\n%v", a, b)
			}
		})
	}
}

// replace is s with old replaced once; a case naming text its object does
// not hold is a mistake of the table.
func replace(s, old, new string) string {
	if !strings.Contains(s, old) {
		panic("no " + old + " in " + s)
	}
	return strings.Replace(s, old, new, 1)
}

func yamlObject(t testing.TB, doc string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
		t.Fatalf("%s: %v", doc, err)
	}
	return obj
}

func fieldManagerOf(t testing.TB, tc managedfields.TypeConverter, obj *unstructured.Unstructured, subresource string) *managedfields.FieldManager {
	t.Helper()
	gvk := obj.GroupVersionKind()
	fm, err := managedfields.NewDefaultFieldManager(tc, sameVersion{}, noDefaults{}, unstructuredCreater{}, gvk, gvk.GroupVersion(), subresource, nil)
	if err != nil {
		t.Fatal(err)
	}
	return fm
}

// serverApply applies config onto liveObj (nil: creates it) as the API
// server does, forced, and stores a Secret's stringData as it does.
func serverApply(t *testing.T, tc managedfields.TypeConverter, liveObj, config *unstructured.Unstructured, manager, subresource string) *unstructured.Unstructured {
	t.Helper()
	if liveObj == nil {
		liveObj = &unstructured.Unstructured{}
		liveObj.SetGroupVersionKind(config.GroupVersionKind())
	}
	out, err := fieldManagerOf(t, tc, config, subresource).Apply(liveObj.DeepCopy(), config.DeepCopy(), manager, true)
	if err != nil {
		t.Fatalf("applying as %s: %v", manager, err)
	}
	u := out.(*unstructured.Unstructured)
	storedForm(u)
	return u
}

// serverUpdate writes the merge patch change onto liveObj as manager's
// update (kubectl edit, a controller) is recorded.
func serverUpdate(t *testing.T, tc managedfields.TypeConverter, liveObj *unstructured.Unstructured, change, manager, subresource string) *unstructured.Unstructured {
	t.Helper()
	next := liveObj.DeepCopy()
	merge(next.Object, yamlObject(t, change).Object)
	out, err := fieldManagerOf(t, tc, liveObj, subresource).Update(liveObj.DeepCopy(), next, manager)
	if err != nil {
		t.Fatalf("updating as %s: %v", manager, err)
	}
	return out.(*unstructured.Unstructured)
}

// merge sets patch's values into obj, maps merged key by key.
func merge(obj, patch map[string]interface{}) {
	for k, v := range patch {
		if pm, ok := v.(map[string]interface{}); ok {
			if om, ok := obj[k].(map[string]interface{}); ok {
				merge(om, pm)
				continue
			}
		}
		obj[k] = v
	}
}

// TestMergePatchIsJSONPatch compares mergePatch with jsonpatch's
// CreateMergePatch of the two objects' JSON, which DeriveApply used before:
// numbers of either Go type, nulls, nil maps and slices, nested objects,
// arrays, added and removed keys.
func TestMergePatchIsJSONPatch(t *testing.T) {
	type m = map[string]interface{}
	type l = []interface{}
	cases := []struct {
		name string
		a, b m
	}{
		{"equal", m{"a": "x", "n": int64(1)}, m{"a": "x", "n": int64(1)}},
		{"int and float of one value", m{"n": int64(80)}, m{"n": float64(80)}},
		{"number changed", m{"n": int64(80)}, m{"n": int64(8080)}},
		{"string to number", m{"n": "80"}, m{"n": int64(80)}},
		{"added and removed", m{"gone": "x", "kept": true}, m{"kept": true, "new": l{"a"}}},
		{"nested label changed", m{"metadata": m{"labels": m{"v": "1", "app": "a"}, "name": "n"}}, m{"metadata": m{"labels": m{"v": "2", "app": "a"}, "name": "n"}}},
		{"nested unchanged", m{"spec": m{"x": m{"y": int64(1)}}}, m{"spec": m{"x": m{"y": float64(1)}}}},
		{"array reordered", m{"a": l{"x", "y"}}, m{"a": l{"y", "x"}}},
		{"array of objects with equal numbers", m{"a": l{m{"p": int64(1)}}}, m{"a": l{m{"p": float64(1)}}}},
		{"array of objects changed", m{"a": l{m{"p": int64(1)}}}, m{"a": l{m{"p": int64(2)}}}},
		{"null to value", m{"a": nil}, m{"a": "x"}},
		{"value to null", m{"a": "x"}, m{"a": nil}},
		{"nil map to empty map", m{"a": m(nil)}, m{"a": m{}}},
		{"nil map to null", m{"a": m(nil)}, m{"a": nil}},
		{"nil slice to empty slice", m{"a": l(nil)}, m{"a": l{}}},
		{"empty map to map", m{"a": m{}}, m{"a": m{"k": "v"}}},
		{"map to array", m{"a": m{"k": "v"}}, m{"a": l{"k"}}},
		{"bools", m{"a": true, "b": false}, m{"a": false, "b": false}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			aj, err := json.Marshal(c.a)
			if err != nil {
				t.Fatal(err)
			}
			bj, err := json.Marshal(c.b)
			if err != nil {
				t.Fatal(err)
			}
			want, err := jsonpatch.CreateMergePatch(aj, bj)
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.Marshal(mergePatch(c.a, c.b))
			if err != nil {
				t.Fatal(err)
			}
			var g, w interface{}
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(want, &w); err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(g, w) {
				t.Errorf("mergePatch %s, CreateMergePatch %s", got, want)
			}
		})
	}
}

// BenchmarkDecideApply is DecideApply on a Helm 4 release's objects of the
// bench chart (test/e2e BenchmarkUpgrade) with the built-in schemas:
// unchanged (a no-op), and with a label changed (a chart bump); "pipeline"
// is the field manager's whole pipeline, which DecideApply ran before
// ApplyByFieldSets showed changes. Run with -benchmem.
func BenchmarkDecideApply(b *testing.B) {
	tc := applyconfigurations.NewTypeConverter(clientgoscheme.Scheme)
	const deploy = `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d-3, namespace: ns, labels: {app.kubernetes.io/version: "1", app.kubernetes.io/managed-by: Helm},
	  annotations: {meta.helm.sh/release-name: bench, meta.helm.sh/release-namespace: ns}},
	  spec: {replicas: 0, selector: {matchLabels: {app: d3}}, template: {metadata: {labels: {app: d3}},
	    spec: {containers: [{name: c, image: "nginx:1.25"}]}}}}`
	const cm = `{apiVersion: v1, kind: ConfigMap, metadata: {name: cm-0, namespace: ns, labels: {app.kubernetes.io/version: "1", app.kubernetes.io/managed-by: Helm},
	  annotations: {meta.helm.sh/release-name: bench, meta.helm.sh/release-namespace: ns}}, data: {key: value-0}}`
	for _, k := range []struct{ name, doc string }{{"configmap", cm}, {"deployment", deploy}} {
		b.Run(k.name, func(b *testing.B) {
			installed := yamlObject(b, k.doc)
			liveObj, err := fieldManagerOf(b, tc, installed, "").Apply(&unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": installed.GetAPIVersion(), "kind": installed.GetKind()}}, installed.DeepCopy(), FieldManager, true)
			if err != nil {
				b.Fatal(err)
			}
			live := liveObj.(*unstructured.Unstructured)
			bumped := yamlObject(b, replace(k.doc, `app.kubernetes.io/version: "1"`, `app.kubernetes.io/version: "2"`))
			for _, c := range []struct {
				name        string
				config      *unstructured.Unstructured
				byFieldSets bool
				want        ApplyVerdict
			}{
				{"unchanged", installed, true, ApplyNoop},
				{"label changed", bumped, true, ApplyChange},
				{"label changed/pipeline", bumped, false, ApplyChange},
			} {
				b.Run(c.name, func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						if d := decideApply(tc, live, c.config, c.byFieldSets); d.Verdict != c.want {
							b.Fatalf("%v (%s), want %v", d.Verdict, d.Why, c.want)
						}
					}
				})
			}
		})
	}
}
