package planner

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/clusterfake"
)

// ssaCluster is a cluster answering like clusterfake.Server over the
// ConfigMap ssaLive, whose answers are always asked for; it has no schemas,
// so every apply is sent.
func ssaCluster(srv *clusterfake.Server) Cluster {
	c := Offline{}.Parts()
	c.Offline, c.Objects, c.DryRuns, c.Observers = false, srv, srv, clusterfake.Observed("a fake server")
	return c
}

const ssaLive = `
apiVersion: v1
kind: ConfigMap
metadata:
  name: r-cm
  namespace: h4
  annotations: {meta.helm.sh/release-name: r, meta.helm.sh/release-namespace: h4}
  labels: {app.kubernetes.io/managed-by: Helm}
  managedFields:
  - manager: helm
    operation: Apply
    apiVersion: v1
    fieldsType: FieldsV1
    fieldsV1: {"f:data": {"f:other": {}}, "f:metadata": {"f:annotations": {"f:meta.helm.sh/release-name": {}, "f:meta.helm.sh/release-namespace": {}}, "f:labels": {"f:app.kubernetes.io/managed-by": {}}}}
  - manager: someone-else
    operation: Apply
    apiVersion: v1
    fieldsType: FieldsV1
    fieldsV1: {"f:data": {"f:key": {}}}
data: {key: hand-edited, other: x}
`

func cmManifest(data string) string {
	return "---\n# Source: c/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: r-cm}\ndata: {" + data + "}\n"
}

func planSSA(t *testing.T, next string, method string, force bool) (plan.Change, *clusterfake.Server) {
	t.Helper()
	return planRelease(t, next, plan.Release{ApplyMethod: method, ForceConflicts: force}, "")
}

// planRelease plans next against the live ConfigMap whose data.key owner
// owns ("" for someone-else) for rel (name and namespace set here).
func planRelease(t *testing.T, next string, rel plan.Release, owner string) (plan.Change, *clusterfake.Server) {
	t.Helper()
	rel.Name, rel.Namespace = "r", "h4"
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(ssaLive), &obj.Object); err != nil {
		t.Fatal(err)
	}
	cl := &clusterfake.Server{Live: obj, Owner: owner}
	p, err := New(ssaCluster(cl), "v1.37.2").Plan(context.Background(), Input{
		Release:          rel,
		PreviousManifest: cmManifest("key: a, other: x"), NextManifest: next,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range p.Changes {
		if c.ID.Name == "r-cm" {
			return c, cl
		}
	}
	t.Fatalf("no change of r-cm in %+v", p.Changes)
	return plan.Change{}, nil
}

// TestSSAConflict: the chart sets data.key, which another manager owns. The
// plan blocks as Helm 4's upgrade fails, and names the field and its owner;
// with --force-conflicts the change is destructive and acknowledgeable.
func TestSSAConflict(t *testing.T) {
	// The upgrade does not even change data.key: Helm 4 still fails.
	c, cl := planSSA(t, cmManifest("key: a, other: y"), plan.ApplyMethodSSA, false)
	if cl.Patches != 0 || len(cl.Applies) != 2 || cl.Applies[0] || !cl.Applies[1] {
		t.Errorf("requests: %d patches, applies with force %v; want an apply, then a forced one", cl.Patches, cl.Applies)
	}
	if c.Action != plan.ActionUpdate || c.Class != plan.ClassInvalid || !c.Destructive || !c.Blocking {
		t.Fatalf("without --force-conflicts: %s %s destructive %v blocking %v", c.Action, c.Class, c.Destructive, c.Blocking)
	}
	r := c.Reasons[0]
	if r.Path != "data.key" || r.Manager != "someone-else" || r.Before != "hand-edited" || r.After != "a" ||
		!strings.Contains(r.Message, `"someone-else"`) || !strings.Contains(r.Message, "--force-conflicts") || !strings.Contains(r.Message, "in-place") {
		t.Errorf("conflict reason %+v", r)
	}
	if len(c.Reasons) != 1 || len(c.Notes) != 1 || !strings.Contains(c.Notes[0], "with --force-conflicts the update would be in-place: data.key") {
		t.Errorf("reasons %+v notes %q: want the conflict only, and what forcing would do as a note", c.Reasons, c.Notes)
	}
	if len(c.Drift) != 0 {
		t.Errorf("drift %+v: the conflicting field is not reverted, the upgrade fails", c.Drift)
	}
	blocked := plan.Fingerprint(c)

	c, _ = planSSA(t, cmManifest("key: a, other: y"), plan.ApplyMethodSSA, true)
	if c.Class != plan.ClassInPlace || !c.Destructive || c.Blocking {
		t.Fatalf("with --force-conflicts: %s destructive %v blocking %v", c.Class, c.Destructive, c.Blocking)
	}
	if r := c.Reasons[0]; r.Path != "data.key" || r.Manager != "someone-else" || !strings.Contains(r.Message, "takes the field") {
		t.Errorf("forced conflict reason %+v", r)
	}
	if c.Fingerprint == "" || c.Fingerprint == blocked {
		t.Errorf("fingerprint %q (blocked %q)", c.Fingerprint, blocked)
	}
	for _, d := range c.Drift {
		if d.Path == "data.key" && (!d.Reverted || d.Manager != "someone-else") {
			t.Errorf("forced drift %+v: reverted, taken from someone-else", d)
		}
	}
}

// TestSSAKeepsOthersFields: the chart no longer sets data.key, which another
// manager owns. Helm 3's patch would delete it; Helm 4's apply keeps it, and
// the drift says who owns it.
func TestSSAKeepsOthersFields(t *testing.T) {
	c, cl := planSSA(t, cmManifest("other: x"), plan.ApplyMethodSSA, false)
	if len(cl.Applies) != 1 {
		t.Errorf("applies %v, want one", cl.Applies)
	}
	if c.Action != plan.ActionNoop || c.Destructive {
		t.Fatalf("%s %s destructive %v; want a noop (the field is kept)", c.Action, c.Class, c.Destructive)
	}
	if len(c.Drift) != 1 || c.Drift[0].Path != "data.key" || c.Drift[0].Reverted || c.Drift[0].Manager != "someone-else" {
		t.Errorf("drift %+v, want data.key kept, owned by someone-else", c.Drift)
	}
}

// TestCSAUnchanged: a client-side release is still planned with the
// three-way patch, never an apply.
func TestCSAUnchanged(t *testing.T) {
	_, cl := planSSA(t, cmManifest("key: a, other: y"), plan.ApplyMethodCSA, false)
	if len(cl.Applies) != 0 || cl.Patches != 1 {
		t.Errorf("csa: %d applies, %d patches; want the patch only", len(cl.Applies), cl.Patches)
	}
}

// TestSSAFromClientSide: --server-side=true on a client-side release. Helm
// 4 first hands Helm's own client-side fields (helm, Update) to its apply,
// so a "conflict" with helm does not happen; one with another manager does.
func TestSSAFromClientSide(t *testing.T) {
	next := cmManifest("key: b, other: x")
	c, cl := planRelease(t, next, plan.Release{ApplyMethod: plan.ApplyMethodSSA, ToServerSide: true}, "helm")
	if len(cl.Applies) != 2 || c.Class != plan.ClassInPlace || c.Destructive || c.Blocking {
		t.Errorf("moving to ssa, data.key owned by helm/Update: applies %v, %s destructive %v blocking %v; want an in-place update, no conflict",
			cl.Applies, c.Class, c.Destructive, c.Blocking)
	}
	c, _ = planRelease(t, next, plan.Release{ApplyMethod: plan.ApplyMethodSSA, ToServerSide: true}, "")
	if c.Class != plan.ClassInvalid || !c.Blocking || c.Reasons[0].Manager != "someone-else" {
		t.Errorf("moving to ssa, data.key owned by someone-else: %s blocking %v reasons %+v; want the conflict", c.Class, c.Blocking, c.Reasons)
	}
}

// TestSSACreate: Helm 4 creates new objects with the same server-side
// apply; Helm 3 with a create.
func TestSSACreate(t *testing.T) {
	next := cmManifest("other: x") + strings.Replace(cmManifest("k: v"), "r-cm", "r-new", 1)
	_, cl := planSSA(t, next, plan.ApplyMethodSSA, false)
	if cl.Creates != 0 || len(cl.Applies) != 2 {
		t.Errorf("ssa: %d creates, applies %v; want two applies (update and create)", cl.Creates, cl.Applies)
	}
	_, cl = planSSA(t, next, plan.ApplyMethodCSA, false)
	if cl.Creates != 1 || len(cl.Applies) != 0 {
		t.Errorf("csa: %d creates, applies %v; want one create", cl.Creates, cl.Applies)
	}
}

// TestSameContentIsSemanticDeepEqual: sameContent answers as
// equality.Semantic.DeepEqual, which configurationChange used before, on
// the values unstructured content holds.
func TestSameContentIsSemanticDeepEqual(t *testing.T) {
	type m = map[string]interface{}
	type l = []interface{}
	shared := m{"a": l{"x", int64(1)}}
	cases := []struct {
		name string
		a, b interface{}
	}{
		{"equal maps", m{"a": "x", "n": int64(1)}, m{"a": "x", "n": int64(1)}},
		{"shared map", shared, shared},
		{"value differs", m{"a": "x"}, m{"a": "y"}},
		{"int and float", m{"n": int64(1)}, m{"n": float64(1)}},
		{"key differs", m{"a": "x"}, m{"b": "x"}},
		{"nil and empty map", m{"a": m(nil)}, m{"a": m{}}},
		{"nil and empty slice", m{"a": l(nil)}, m{"a": l{}}},
		{"null and empty map", m{"a": nil}, m{"a": m{}}},
		{"empty map and null", m{"a": m{}}, m{"a": nil}},
		{"slices equal", l{m{"a": true}, "s"}, l{m{"a": true}, "s"}},
		{"slices reordered", l{"a", "b"}, l{"b", "a"}},
		{"string and map", m{"a": "x"}, m{"a": m{"x": "y"}}},
		{"bools", m{"a": true}, m{"a": false}},
		{"other types", m{"a": []string{"x"}}, m{"a": []string{"x"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := equality.Semantic.DeepEqual(c.a, c.b)
			if got := sameContent(c.a, c.b); got != want {
				t.Errorf("sameContent %v, equality.Semantic.DeepEqual %v", got, want)
			}
			if got := sameContent(c.b, c.a); got != want {
				t.Errorf("reversed: sameContent %v, equality.Semantic.DeepEqual %v", got, want)
			}
		})
	}
}
