package planner

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/classify"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/predict"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/clusterfake"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

func TestMain(m *testing.M) { testcluster.Main(m) }

// noAdmission is the real cluster with its admission configuration set
// aside: other packages' tests add cluster-wide admission policies, and
// that gate (Observed) is tested on its own (test/e2e derive tests).
func noAdmission(l Live) Cluster {
	c := l.Parts()
	c.Observers = clusterfake.Observed("")
	return c
}

// liveCluster connects to the control plane as the tool does
// (verb.Config.Connect): a dynamic client over a raw REST client, which
// also reads the OpenAPI documents.
func liveCluster(t *testing.T, c *testcluster.Cluster) *live.Cluster {
	t.Helper()
	disco, err := discovery.NewDiscoveryClientForConfig(c.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	groups, err := restmapper.GetAPIGroupResources(disco)
	if err != nil {
		t.Fatal(err)
	}
	cfg := dynamic.ConfigFor(c.RESTConfig)
	cfg.GroupVersion, cfg.APIPath = nil, "/if-you-see-this-search-for-the-break"
	rc, err := rest.UnversionedRESTClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &live.Cluster{Dynamic: dynamic.New(rc), REST: rc, Mapper: restmapper.NewDiscoveryRESTMapper(groups)}
}

const ssaConfigMap = `apiVersion: v1
kind: ConfigMap
metadata: {name: cm}
data: {key: a, other: b}
`

const ssaSecret = `apiVersion: v1
kind: Secret
metadata: {name: s}
stringData: {password: pw-1}
`

const ssaImmutable = `apiVersion: v1
kind: ConfigMap
metadata: {name: frozen}
immutable: true
data: {key: a}
`

const ssaService = `apiVersion: v1
kind: Service
metadata: {name: api}
spec: {selector: {app: api}, ports: [{name: http, port: 80}]}
`

const ssaDeployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 0
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: c
        image: nginx:1.25
        env: [{name: A, value: "1"}, {name: B, value: "2"}]
`

// TestDecideApplyAgreesWithServer (issue 28): for each case, a release
// installed as Helm 4 does (server-side apply, manager helm), the cluster
// changed as users and controllers change it, then the local decision
// (decideApply, with the server's OpenAPI schemas) and the server's real
// unforced dry-run apply of the new configuration. Where the decision is
// a no-op or a conflict, the server must answer exactly that (the same
// conflict error, word for word), also where predict.ApplyNoopByFieldSets
// shows a no-op without the full merge; every case must get the decision it
// lists, so the test fails if the local decision asks the server where it
// should not, or decides where it must ask.
func TestDecideApplyAgreesWithServer(t *testing.T) {
	c := testcluster.Get(t)
	cluster := liveCluster(t, c)
	cases := []struct {
		name       string
		prev, next string
		// change changes the installed object in ns, as another actor.
		change func(t *testing.T, d dynamic.Interface, ns string)
		want   predict.ApplyVerdict
		// conflicts are the server's conflicts (manager path), sorted;
		// checked for every case, whatever the local decision.
		conflicts []string
		// noop is whether the server's answer changes nothing.
		noop bool
		// fast: predict.ApplyNoopByFieldSets shows the no-op from field
		// sets and typed values, without the full merge; changeShown:
		// predict.ApplyByFieldSets shows the change so.
		fast, changeShown bool
		// released is a field the server's answer no longer holds.
		released []string
		// derived: an ApplyChange whose verdict is derived from the merged
		// object (predict.DeriveApply); refused: one the server refuses,
		// so it must be asked.
		derived, refused bool
	}{
		{name: "unchanged object", prev: ssaConfigMap, next: ssaConfigMap, want: predict.ApplyNoop, noop: true, fast: true},
		{name: "unchanged secret written with stringData", prev: ssaSecret, next: ssaSecret, want: predict.ApplyNoop, noop: true, fast: true},
		{name: "unchanged deployment with lists keyed by name", prev: ssaDeployment, next: ssaDeployment, want: predict.ApplyNoop, noop: true, fast: true},
		{name: "changed field owned by helm", prev: ssaConfigMap, next: strings.Replace(ssaConfigMap, "key: a", "key: changed", 1), want: predict.ApplyChange, derived: true, changeShown: true},
		{name: "changed secret value written with stringData", prev: ssaSecret, next: strings.Replace(ssaSecret, "pw-1", "pw-2", 1), want: predict.ApplyChange, derived: true, changeShown: true},
		{name: "changed value of an immutable configmap", prev: ssaImmutable, next: strings.Replace(ssaImmutable, "key: a", "key: changed", 1), want: predict.ApplyChange, refused: true, changeShown: true},
		{name: "changed deployment image", prev: ssaDeployment, next: strings.Replace(ssaDeployment, "nginx:1.25", "nginx:1.26", 1), want: predict.ApplyChange, derived: true, changeShown: true},
		{name: "changed deployment image and env", prev: ssaDeployment, next: strings.Replace(strings.Replace(ssaDeployment, "nginx:1.25", "nginx:1.26", 1), `value: "2"`, `value: "3"`, 1), want: predict.ApplyAsk, changeShown: true},
		{name: "changed service port", prev: ssaService, next: strings.Replace(ssaService, "port: 80", "port: 8080", 1), want: predict.ApplyChange, derived: true},
		{name: "second service port", prev: ssaService, next: strings.Replace(ssaService, "[{name: http, port: 80}]", "[{name: http, port: 80}, {name: dns, port: 53, protocol: UDP, targetPort: dns}]", 1), want: predict.ApplyChange, derived: true},
		{name: "service port refused (no name)", prev: ssaService, next: strings.Replace(ssaService, "[{name: http, port: 80}]", "[{name: http, port: 80}, {port: 81}]", 1), want: predict.ApplyChange, refused: true},
		{name: "field taken by another Apply manager", prev: ssaConfigMap, next: ssaConfigMap,
			change: func(t *testing.T, d dynamic.Interface, ns string) {
				apply(t, d, ns, "configmaps", "cm", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"},"data":{"key":"theirs"}}`, "someone-else")
			},
			want: predict.ApplyConflict, conflicts: []string{"someone-else .data.key"}},
		{name: "field taken by an Update manager (kubectl edit)", prev: ssaConfigMap, next: ssaConfigMap,
			change: func(t *testing.T, d dynamic.Interface, ns string) {
				mergePatch(t, d, ns, "configmaps", "cm", `{"data":{"key":"edited"}}`, "kubectl-edit", "")
			},
			want: predict.ApplyConflict, conflicts: []string{"kubectl-edit .data.key"}},
		{name: "field shared with another Apply manager, same value", prev: ssaConfigMap, next: ssaConfigMap,
			change: func(t *testing.T, d dynamic.Interface, ns string) {
				apply(t, d, ns, "configmaps", "cm", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"},"data":{"key":"a"}}`, "someone-else")
			},
			want: predict.ApplyAsk, noop: true},
		{name: "field removed from the chart (ownership released)", prev: ssaConfigMap, next: strings.Replace(ssaConfigMap, ", other: b", "", 1), want: predict.ApplyChange, derived: true,
			released: []string{"data", "other"}},
		{name: "changed field shared with another Apply manager", prev: ssaConfigMap, next: strings.Replace(ssaConfigMap, "other: b", "other: c", 1),
			change: func(t *testing.T, d dynamic.Interface, ns string) {
				apply(t, d, ns, "configmaps", "cm", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"},"data":{"key":"a"}}`, "someone-else")
			},
			want: predict.ApplyAsk},
		{name: "changed field taken by an Update manager", prev: ssaConfigMap, next: strings.Replace(ssaConfigMap, "key: a", "key: changed", 1),
			change: func(t *testing.T, d dynamic.Interface, ns string) {
				mergePatch(t, d, ns, "configmaps", "cm", `{"data":{"key":"edited"}}`, "kubectl-edit", "")
			},
			want: predict.ApplyAsk, conflicts: []string{"kubectl-edit .data.key"}},
		{name: "list element by merge key taken by another Apply manager", prev: ssaDeployment, next: ssaDeployment,
			change: func(t *testing.T, d dynamic.Interface, ns string) {
				apply(t, d, ns, "deployments", "web", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"nginx:1.25","env":[{"name":"B","value":"3"}]}]}}}}`, "env-injector")
			},
			want: predict.ApplyConflict, conflicts: []string{`env-injector .spec.template.spec.containers[name="c"].env[name="B"].value`}},
		{name: "replicas owned through the scale subresource", prev: ssaDeployment, next: ssaDeployment,
			change: func(t *testing.T, d dynamic.Interface, ns string) {
				mergePatch(t, d, ns, "deployments", "web", `{"spec":{"replicas":2}}`, "scaler", "scale")
			},
			want: predict.ApplyAsk, conflicts: []string{"scaler .spec.replicas"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := c.Namespace(t)
			rel := plan.Release{Name: "r", Namespace: ns, ApplyMethod: plan.ApplyMethodSSA}
			prev, next := ssaObject(t, tc.prev, ns), ssaObject(t, tc.next, ns)
			addHelmMetadata(next.Obj, rel.Name, rel.Namespace)
			installed := prev.Obj.DeepCopy()
			addHelmMetadata(installed, rel.Name, rel.Namespace)
			data, err := json.Marshal(installed.Object)
			if err != nil {
				t.Fatal(err)
			}
			resource := strings.ToLower(prev.GVK.Kind) + "s"
			apply(t, cluster.Dynamic, ns, resource, prev.ID.Name, string(data), predict.FieldManager)
			if tc.change != nil {
				tc.change(t, cluster.Dynamic, ns)
			}
			p := New(noAdmission(Live{Cluster: cluster, Schemas: live.NewSchemas(cluster)}), c.ServerVersion)
			p.Stats = &Stats{}
			ri, _, err := cluster.Resource(next.GVK, ns)
			if err != nil {
				t.Fatal(err)
			}
			// Controllers write status meanwhile: decide and ask about the
			// same resourceVersion.
			var decided predict.ApplyDecision
			var liveObj, answer *unstructured.Unstructured
			var answerErr error
			var serverNoop bool
			testcluster.Eventually(t, "decided and answered on one resourceVersion", func() (bool, string) {
				liveObj, err = ri.Get(t.Context(), next.ID.Name, metav1.GetOptions{})
				if err != nil {
					return false, err.Error()
				}
				decided = p.decideApply(t.Context(), rel, prev, next, liveObj)
				answer, answerErr = predict.DryRunApply(t.Context(), ri, next.Obj, false)
				if answerErr == nil && answer.GetResourceVersion() != liveObj.GetResourceVersion() {
					return false, "the object moved between the GET and the dry-run"
				}
				serverNoop = answerErr == nil && sameAsLive(liveObj, answer)
				return true, ""
			})
			conv, err := p.Cluster.Schemas.TypeConverter(t.Context(), next.GVK.GroupVersion())
			if err != nil {
				t.Fatal(err)
			}
			fast := predict.ApplyNoopByFieldSets(conv, liveObj, next.Obj)
			if fast != tc.fast {
				t.Errorf("no-op shown from field sets: %v, want %v", fast, tc.fast)
			}
			if fast && !serverNoop {
				t.Errorf("no-op shown from field sets; the server answers %v and changes the object", answerErr)
			}
			if shown := predict.ApplyByFieldSets(conv, liveObj, next.Obj).Verdict == predict.ApplyChange; shown != tc.changeShown {
				t.Errorf("change shown from field sets: %v, want %v", shown, tc.changeShown)
			}
			if decided.Verdict != tc.want {
				t.Errorf("local decision %v (%s), want %v", decided.Verdict, decided.Why, tc.want)
			}
			var serverConflicts []string
			for _, cf := range predict.Conflicts(answerErr) {
				serverConflicts = append(serverConflicts, cf.Manager+" "+cf.Path)
			}
			slices.Sort(serverConflicts)
			if !slices.Equal(serverConflicts, tc.conflicts) {
				t.Errorf("server conflicts %q, want %q (error %v)", serverConflicts, tc.conflicts, answerErr)
			}
			if tc.released != nil {
				if _, found, _ := unstructured.NestedFieldNoCopy(answer.Object, tc.released...); answerErr != nil || found {
					t.Errorf("the server's answer still holds %s (error %v)", strings.Join(tc.released, "."), answerErr)
				}
			}
			if serverNoop != tc.noop {
				t.Errorf("the server's answer is a no-op: %v, want %v (error %v)", serverNoop, tc.noop, answerErr)
			}
			switch decided.Verdict {
			case predict.ApplyNoop:
				if !serverNoop {
					t.Errorf("decided a no-op; the server answers %v and changes the object", answerErr)
				}
			case predict.ApplyConflict:
				if answerErr == nil || decided.Err.Error() != answerErr.Error() {
					t.Errorf("decided the conflict %q; the server answers %v", decided.Err, answerErr)
				}
			case predict.ApplyChange:
				derivedAgrees(t, p, liveObj, decided.Merged, answer, answerErr, tc.derived, tc.refused)
			}
			t.Logf("local: %v %s; server: %v; %s", decided.Verdict, decided.Why, answerErr, p.Stats)
		})
	}
}

// derivedAgrees checks an ApplyChange against the server's answer: the
// merged object holds the server's values at every field a derived change
// may set (labels, annotations, payload), the derived object the server's
// spec and generation too; the verdict derived from it
// (predict.DeriveApply, classified as update does) is the server's; and
// a change the server refuses is not derived.
func derivedAgrees(t *testing.T, p *Planner, liveObj, merged, answer *unstructured.Unstructured, answerErr error, derived, refused bool) {
	t.Helper()
	if refused != (answerErr != nil) {
		t.Fatalf("the server's answer: %v, want refused %v", answerErr, refused)
	}
	got, why := predict.DeriveApply(liveObj, merged)
	if derived != (got != nil) {
		t.Fatalf("derived %v (%s), want %v", got != nil, why, derived)
	}
	if refused {
		return
	}
	if err := mergedAgrees(merged, answer); err != "" {
		t.Errorf("merged object: %s", err)
	}
	if !derived {
		return
	}
	if err := mergedAgrees(got, answer); err != "" {
		t.Errorf("derived object: %s", err)
	}
	// What a derived spec change (a Service's ports, container images) sets
	// is checked whole: the spec and the generation the server bumps.
	for _, path := range [][]string{{"spec"}, {"metadata", "generation"}} {
		g, _, _ := unstructured.NestedFieldNoCopy(got.Object, path...)
		w, _, _ := unstructured.NestedFieldNoCopy(answer.Object, path...)
		if !equality.Semantic.DeepEqual(g, w) {
			t.Errorf("derived %s %v, the server's %v", strings.Join(path, "."), g, w)
		}
	}
	gk := liveObj.GroupVersionKind().GroupKind()
	local := p.Classifier.Classify(classify.Update{GroupKind: gk, Live: p.Masker.Object(liveObj), Predicted: p.Masker.Object(got), Local: p.Masker.Object(got), Derived: true})
	server := p.Classifier.Classify(classify.Update{GroupKind: gk, Live: p.Masker.Object(liveObj), Predicted: p.Masker.Object(answer), Local: p.Masker.Object(got)})
	if local.Class != server.Class || local.Noop != server.Noop || !slices.Equal(reasonPaths(local), reasonPaths(server)) {
		t.Errorf("derived verdict %s %v %q, the server's %s %v %q", local.Class, local.Noop, reasonPaths(local), server.Class, server.Noop, reasonPaths(server))
	}
}

// mergedAgrees says where obj differs from the server's answer at the
// fields a derived change may set.
func mergedAgrees(obj, answer *unstructured.Unstructured) string {
	for _, path := range [][]string{{"metadata", "labels"}, {"metadata", "annotations"}, {"data"}, {"binaryData"}, {"stringData"}, {"immutable"}} {
		got, _, _ := unstructured.NestedFieldNoCopy(obj.Object, path...)
		want, _, _ := unstructured.NestedFieldNoCopy(answer.Object, path...)
		if !equality.Semantic.DeepEqual(got, want) {
			return strings.Join(path, ".") + " differs from the server's answer"
		}
	}
	return ""
}

func reasonPaths(v classify.Verdict) []string {
	var out []string
	for _, r := range v.Reasons {
		out = append(out, r.Path)
	}
	return out
}

// ssaObject is one manifest object of ns.
func ssaObject(t *testing.T, doc, ns string) *manifest.Object {
	t.Helper()
	set, err := manifest.Split("case", doc, ns, manifest.ScoperFunc(
		func(schema.GroupVersionKind) (bool, bool, error) { return true, true, nil }))
	if err != nil || set.Len() != 1 {
		t.Fatalf("case manifest: %v", err)
	}
	obj := set.Objects()[0]
	if err := manifest.LoadPair(obj, nil); err != nil {
		t.Fatal(err)
	}
	return obj
}

// apply server-side-applies data (JSON) as manager, forcing conflicts.
func apply(t *testing.T, d dynamic.Interface, ns, resource, name, data, manager string) {
	t.Helper()
	force := true
	gvr := gvrOf(resource)
	if _, err := d.Resource(gvr).Namespace(ns).Patch(t.Context(), name, types.ApplyPatchType, []byte(data),
		metav1.PatchOptions{FieldManager: manager, Force: &force}); err != nil {
		t.Fatalf("apply as %s: %v", manager, err)
	}
}

// mergePatch updates name with a merge patch as manager (an Update
// operation, as kubectl edit or kubectl scale send), on subresource if set.
func mergePatch(t *testing.T, d dynamic.Interface, ns, resource, name, patch, manager, subresource string) {
	t.Helper()
	var sub []string
	if subresource != "" {
		sub = []string{subresource}
	}
	if _, err := d.Resource(gvrOf(resource)).Namespace(ns).Patch(t.Context(), name, types.MergePatchType, []byte(patch),
		metav1.PatchOptions{FieldManager: manager}, sub...); err != nil {
		t.Fatalf("update as %s: %v", manager, err)
	}
}

func gvrOf(resource string) schema.GroupVersionResource {
	if resource == "deployments" {
		return schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: resource}
	}
	return schema.GroupVersionResource{Version: "v1", Resource: resource}
}

// sameAsLive reports whether the server's dry-run answer is the live object
// unchanged, managed fields included.
func sameAsLive(liveObj, answer *unstructured.Unstructured) bool {
	return equality.Semantic.DeepEqual(liveObj.Object, answer.Object)
}
