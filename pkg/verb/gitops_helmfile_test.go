package verb

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/gitops"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// TestHelmfileMoveLosesClaims: a release helmfile apply uninstalls
// (installed: false) while the head installs the same release in another
// namespace is a move: the uninstalled StatefulSet's claims are left
// behind and the new one starts on empty volumes, data loss as for
// Helmsman's move. An uninstall alone, or beside another release's
// install, only deletes.
func TestHelmfileMoveLosesClaims(t *testing.T) {
	sts := func(ns string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": map[string]interface{}{"name": "shop-db", "namespace": ns},
			"spec": map[string]interface{}{"replicas": int64(1), "volumeClaimTemplates": []interface{}{
				map[string]interface{}{"metadata": map[string]interface{}{"name": "data"}}}}}}
	}
	id := func(ns string) manifest.ObjectID {
		return manifest.ObjectID{Group: "apps", Kind: "StatefulSet", Namespace: ns, Name: "shop-db"}
	}
	rel := func(ns, name string) *gitops.Release {
		return &gitops.Release{Object: gitops.ObjectRef{Kind: gitops.KindHelmfileRelease, Namespace: ns, Name: name}, Name: name, Namespace: ns}
	}
	uninstall := func(ns, name string) GitOpsPlanned {
		p := &plan.Plan{Release: plan.Release{Operation: plan.OperationUninstall}, Changes: []plan.Change{
			{ID: id(ns), Action: plan.ActionDelete, Class: plan.ClassRecreatable, Before: sts(ns)}}}
		return GitOpsPlanned{Change: gitops.Change{Ref: rel(ns, name).Object, Base: rel(ns, name)}, Planned: &Planned{Plan: p}}
	}
	install := func(ns, name string) GitOpsPlanned {
		p := &plan.Plan{Release: plan.Release{Operation: plan.OperationInstall}, Changes: []plan.Change{
			{ID: id(ns), Action: plan.ActionCreate, After: sts(ns)}}}
		return GitOpsPlanned{Change: gitops.Change{Ref: rel(ns, name).Object, Head: rel(ns, name)}, Planned: &Planned{Plan: p}}
	}
	for _, tc := range []struct {
		name string
		out  []GitOpsPlanned
		want plan.Class
	}{
		{"moved to another namespace", []GitOpsPlanned{uninstall("a", "shop@default"), install("b", "shop@default")}, plan.ClassDataLoss},
		{"uninstalled alone", []GitOpsPlanned{uninstall("a", "shop@default")}, plan.ClassRecreatable},
		{"another release installed", []GitOpsPlanned{uninstall("a", "shop@default"), install("b", "cart@default")}, plan.ClassRecreatable},
		{"another environment's install", []GitOpsPlanned{uninstall("a", "shop@staging"), install("b", "shop@production")}, plan.ClassRecreatable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			markLostClaims(tc.out, helmfileUninstalls(tc.out), "helmfile apply")
			c := tc.out[0].Planned.Plan.Changes[0]
			if c.Class != tc.want || c.Destructive != (tc.want == plan.ClassDataLoss) {
				t.Errorf("the uninstall's StatefulSet: %s destructive %v, want %s", c.Class, c.Destructive, tc.want)
			}
			if tc.want == plan.ClassDataLoss && (len(c.Reasons) == 0 || c.Reasons[0].Message != "helmfile apply reinstalls the release: helm uninstall leaves the claims of template(s) data (data-shop-db-0) in namespace a, and the reinstalled release's StatefulSet does not use them: it starts on new, empty volumes") {
				t.Errorf("reasons %+v, want the claims helmfile apply leaves behind", c.Reasons)
			}
		})
	}
}
