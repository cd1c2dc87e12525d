package e2e

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/helmtest"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// TestCRDDropsServedVersion: a chart whose crds/ CRD drops a served version
// while 3 custom resources exist is destructive (exit 2), names the count
// and says that helm upgrade will not apply it; the plan sends no write.
// Once acknowledged, the upgrade goes through without touching the CRD.
func TestCRDDropsServedVersion(t *testing.T) {
	c := testcluster.Get(t)
	c.RequireOwnCluster(t) // leaves a CRD behind
	ns := c.Namespace(t)
	group := ns + ".example.com" // one CRD per test namespace
	gadgets := ""
	for i := range 3 {
		gadgets += fmt.Sprintf("---\napiVersion: %s/v1\nkind: Gadget\nmetadata: {name: g%d}\nspec: {size: %d}\n", group, i, i)
	}
	c.Helm(t, "install", "app", writeChart(t, "app", "1.0.0", map[string]string{"crds/gadgets.yaml": helmtest.GadgetCRD(group, false), "gadgets.yaml": gadgets}), "-n", ns)

	v2 := writeChart(t, "app", "2.0.0", map[string]string{"crds/gadgets.yaml": helmtest.GadgetCRD(group, true), "gadgets.yaml": gadgets})
	before := auditMark(t, c)
	p, r := planJSON(t, c, "app", v2, "-n", ns, "--detailed-exitcode")
	if r.Code != 2 {
		t.Errorf("exit %d, want 2 (blocked)\n%s", r.Code, r.Stderr)
	}
	ch := p.change(t, "CustomResourceDefinition", "gadgets."+group)
	if ch.Action != "update" || ch.Class != "manual" || !ch.Destructive || ch.Blocking || ch.Fingerprint == "" {
		t.Fatalf("CRD: %+v, want a destructive manual update with a fingerprint", ch)
	}
	var reasons []string
	for _, reason := range ch.Reasons {
		reasons = append(reasons, reason.Path+": "+reason.Message)
	}
	text := strings.Join(append(reasons, ch.Notes...), "\n")
	for _, want := range []string{
		"spec.versions[v1alpha1]: served version v1alpha1 removed",
		"3 existing Gadget resource(s) in all namespaces are affected",
		"helm upgrade never applies crds/",
		"kubectl apply -f app/crds/gadgets.yaml",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("reasons and notes lack %q:\n%s", want, text)
		}
	}
	if p.Summary["manual"] != 1 {
		t.Errorf("summary %v, want manual 1", p.Summary)
	}
	assertOnlyDryRunWrites(t, c, ns, before)

	// Acknowledged, nothing else changes: no pending change (the upgrade
	// does not apply crds/), and the apply leaves the CRD as it is.
	ack := "CustomResourceDefinition/gadgets." + group + "@" + ch.Fingerprint
	// (Helm's spelling --dry-run=server plans as --dry-run does.)
	if r := run(t, c, "app", v2, "-n", ns, "--dry-run=server", "--detailed-exitcode", "--ack", ack); r.Code != 0 {
		t.Errorf("acknowledged: exit %d, want 0\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if r := run(t, c, "app", v2, "-n", ns, "--ack", ack); r.Code != 0 {
		t.Fatalf("apply: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	crd, err := c.Dynamic(t).Resource(crdGVR).Get(t.Context(), "gadgets."+group, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	if len(versions) != 2 {
		t.Errorf("the live CRD has %d versions after the upgrade, want 2 (Helm does not apply crds/)", len(versions))
	}
}

// TestInstallCreatesCRDs: an install of a chart whose crds/ CRD its
// templates use plans the CRD as a create and the custom resources as not
// validated (their kind is not served yet), not as a refused create; the
// apply installs both, as helm install does, and the watch follows the
// custom resource.
func TestInstallCreatesCRDs(t *testing.T) {
	c := testcluster.Get(t)
	c.RequireOwnCluster(t) // leaves a CRD behind
	ns := c.Namespace(t)
	group := ns + ".example.com"
	chart := writeChart(t, "app", "1.0.0", map[string]string{"crds/gadgets.yaml": helmtest.GadgetCRD(group, false),
		"gadget.yaml": fmt.Sprintf("apiVersion: %s/v1\nkind: Gadget\nmetadata: {name: g}\nspec: {size: 1}\n", group)})
	p, r := planJSON(t, c, "app", chart, "-n", ns, "--install")
	if r.Code != 0 {
		t.Fatalf("exit %d, want 0\n%s", r.Code, r.Stderr)
	}
	crd := p.change(t, "CustomResourceDefinition", "gadgets."+group)
	gadget := p.change(t, "Gadget", "g")
	if crd.Action != "create" || crd.Class != "" || gadget.Action != "create" || gadget.Blocking ||
		!strings.Contains(strings.Join(gadget.Notes, "\n"), "its CustomResourceDefinition is created by this release") {
		t.Fatalf("CRD %+v\nGadget %+v", crd, gadget)
	}
	r = run(t, c, "app", chart, "-n", ns, "--install")
	if r.Code != 0 {
		t.Fatalf("install: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	// The rollout watch follows the Gadget, whose kind was not served
	// when the run connected (issue 39).
	saysAll(t, "stderr", r.Stderr, "Rollout: 2 of 2 object(s) current") // the CRD and the Gadget
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "gadgets"}
	if _, err := c.Dynamic(t).Resource(gvr).Namespace(ns).Get(t.Context(), "g", metav1.GetOptions{}); err != nil {
		t.Errorf("the installed Gadget: %v", err)
	}
}

// TestCustomResourceFieldsPruned (issue 26): a chart whose custom resource
// uses a field its crds/ CRD adds, on a cluster that keeps the older CRD
// (Helm never upgrades crds/), plans a warning on the custom resource that
// names the dropped field, the CRD version, the installed CRD, the chart's
// CRD, and quotes the server's own warning; exit 0, and
// --detailed-exitcode counts it (3).
func TestCustomResourceFieldsPruned(t *testing.T) {
	c := testcluster.Get(t)
	c.RequireOwnCluster(t) // leaves a CRD behind
	ns := c.Namespace(t)
	group := ns + ".example.com" // one CRD per test namespace
	gadget := func(spec string) string {
		return "apiVersion: " + group + "/v1\nkind: Gadget\nmetadata: {name: g}\nspec: {" + spec + "}\n"
	}
	c.Helm(t, "install", "app", writeChart(t, "app", "1.0.0", map[string]string{"crds/gadgets.yaml": helmtest.GadgetCRD(group, true), "g.yaml": gadget("size: 1")}), "-n", ns)

	newer := strings.ReplaceAll(helmtest.GadgetCRD(group, true), "properties: {size: {type: integer}}", "properties: {size: {type: integer}, color: {type: string}}")
	v2 := writeChart(t, "app", "2.0.0", map[string]string{"crds/gadgets.yaml": newer, "g.yaml": gadget("size: 1, color: red")})
	if r := run(t, c, "app", v2, "-n", ns, "--dry-run"); r.Code != 0 || !strings.Contains(r.Stdout, "warning: the server drops fields the chart sets: spec.color") {
		t.Errorf("exit %d, want 0 with the warning in the text report\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	p, r := planJSON(t, c, "app", v2, "-n", ns, "--detailed-exitcode")
	if r.Code != 3 {
		t.Errorf("--detailed-exitcode: exit %d, want 3 (the stored object is not the render)\n%s", r.Code, r.Stderr)
	}
	g := p.change(t, "Gadget", "g")
	notes := strings.Join(g.Notes, "\n")
	if !slices.Equal(g.Pruned, []string{"spec.color"}) || !strings.Contains(notes, "version "+group+"/v1") ||
		!strings.Contains(notes, "CustomResourceDefinition/gadgets."+group) ||
		!strings.Contains(notes, "the CustomResourceDefinition installed in the cluster (gadgets."+group+")") ||
		!strings.Contains(notes, `the API server warns: unknown field "spec.color"`) {
		t.Errorf("Gadget/g: pruned %v, notes:\n%s", g.Pruned, notes)
	}
	if crd := p.change(t, "CustomResourceDefinition", "gadgets."+group); crd.Class != "manual" {
		t.Errorf("the chart's newer CRD: class %q, want manual: %+v", crd.Class, crd)
	}

	// Level with the chart's CRD (applied by hand, as the manual change
	// says), nothing is dropped: an ordinary update.
	mustBin(t, c, c.Kubectl, "apply", "-f", filepath.Join(v2, "crds", "gadgets.yaml"))
	waitFor(t, "the newer CRD serving spec.color", func() bool {
		p, _ := planJSON(t, c, "app", v2, "-n", ns)
		g := p.change(t, "Gadget", "g")
		return len(g.Pruned) == 0 && g.Action == "update"
	})
}

// TestCRDValidationChanges (issue 26): a crds/ CRD that differs from the
// cluster's only in validation is a manual update listing each difference
// with its old and new value: not destructive when it widens (exit 0 with
// --detailed-exitcode: the upgrade does not make it), destructive when it
// narrows (exit 2 until acknowledged). The same CRD as the cluster's, as
// the server stores it (with its defaults), is a noop.
func TestCRDValidationChanges(t *testing.T) {
	c := testcluster.Get(t)
	c.RequireOwnCluster(t) // leaves a CRD behind
	ns := c.Namespace(t)
	group := ns + ".example.com"
	const size = "size: {type: integer}"
	withSize := func(schema string) string {
		return strings.ReplaceAll(helmtest.GadgetCRD(group, true), size, schema)
	}
	gadget := "apiVersion: " + group + "/v1\nkind: Gadget\nmetadata: {name: g}\nspec: {size: 7}\n"
	installed := withSize("size: {type: integer, maximum: 10}")
	c.Helm(t, "install", "app", writeChart(t, "app", "1.0.0", map[string]string{"crds/gadgets.yaml": installed, "g.yaml": gadget}), "-n", ns)

	for _, tt := range []struct {
		name, schema string
		destructive  bool
		code         int
		want         string // in the CRD's reasons
	}{
		{name: "same", schema: "size: {type: integer, maximum: 10}"},
		{name: "wider", schema: "size: {type: integer, maximum: 20}", code: 0,
			want: "spec.versions[v1].schema.openAPIV3Schema.properties[spec].properties[size].maximum: field spec.size: maximum 10 → 20, wider"},
		{name: "narrower", schema: "size: {type: integer, maximum: 5}", destructive: true, code: 2,
			want: "spec.versions[v1].schema.openAPIV3Schema.properties[spec].properties[size].maximum: field spec.size: maximum 10 → 5, stricter"},
		{name: "enum", schema: "size: {type: integer, maximum: 10, enum: [1, 7]}", destructive: true, code: 2,
			want: "properties[size].enum: field spec.size: restricted to enum [1, 7], stricter"},
		{name: "cel rule", schema: "size: {type: integer, maximum: 10, x-kubernetes-validations: [{rule: 'self % 2 == 1'}]}", destructive: true, code: 2,
			want: `properties[size].x-kubernetes-validations: field spec.size: validation rule "self % 2 == 1" added, stricter`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			chart := writeChart(t, "app", "1.0.1", map[string]string{"crds/gadgets.yaml": withSize(tt.schema), "g.yaml": gadget})
			before := auditMark(t, c)
			p, r := planJSON(t, c, "app", chart, "-n", ns, "--detailed-exitcode")
			if r.Code != tt.code {
				t.Errorf("--detailed-exitcode: exit %d, want %d\n%s", r.Code, tt.code, r.Stderr)
			}
			ch := p.change(t, "CustomResourceDefinition", "gadgets."+group)
			if tt.want == "" {
				if ch.Action != "noop" {
					t.Errorf("the cluster's own CRD: %+v, want noop", ch)
				}
				return
			}
			var reasons []string
			for _, reason := range ch.Reasons {
				reasons = append(reasons, reason.Path+": "+reason.Message)
			}
			text := strings.Join(append(reasons, ch.Notes...), "\n")
			if ch.Action != "update" || ch.Class != "manual" || ch.Destructive != tt.destructive ||
				!strings.Contains(text, tt.want) || !strings.Contains(text, "kubectl apply -f app/crds/gadgets.yaml") {
				t.Errorf("CRD: action %s class %s destructive %v, want a manual update (destructive %v) with %q and the kubectl apply hint:\n%s",
					ch.Action, ch.Class, ch.Destructive, tt.destructive, tt.want, text)
			}
			if tt.destructive && !strings.Contains(text, "1 existing Gadget resource(s)") {
				t.Errorf("a narrowing change names the resources it affects:\n%s", text)
			}
			assertOnlyDryRunWrites(t, c, ns, before)
		})
	}
}
