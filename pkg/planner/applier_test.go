package planner

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// TestApplier: with another applier than Helm (Argo CD), each object of the
// render carries its marks instead of Helm's ownership metadata, an object
// of the cluster that the last manifest does not name is adopted rather
// than refused, and an object the render drops is deleted or left as the
// applier says.
func TestApplier(t *testing.T) {
	applier := func(kept string) *Applier {
		return &Applier{Adopted: "applied over",
			Deletes: "no longer rendered: pruned",
			Mark: func(obj *unstructured.Unstructured, id manifest.ObjectID) {
				obj.SetLabels(map[string]string{"app.kubernetes.io/instance": id.Name})
			},
			Kept: func(*unstructured.Unstructured) string { return kept }}
	}
	t.Run("adopted and marked", func(t *testing.T) {
		p, err := New(foreign(), "").Plan(context.Background(), Input{
			Release: plan.Release{Name: "app", Namespace: "prod"}, NextManifest: pvc("data", ""), Applier: applier(""),
		})
		if err != nil {
			t.Fatal(err)
		}
		c := p.Changes[0]
		if c.Blocking || c.Class == plan.ClassInvalid || !strings.Contains(strings.Join(c.Notes, "\n"), "applied over") {
			t.Fatalf("object of the cluster: %+v", c)
		}
		if c.After == nil || c.After.GetLabels()["app.kubernetes.io/instance"] != "data" || c.After.GetAnnotations()[manifest.ReleaseNameAnnotation] == "app" {
			t.Errorf("the applier's marks, not Helm's, are applied: %v", c.After)
		}
	})
	for _, tt := range []struct {
		name, kept string
		action     plan.Action
		want       string
		destr      bool
	}{
		{"pruned", "", plan.ActionDelete, "no longer rendered: pruned; deleting a PersistentVolumeClaim", true},
		{"left", "left in the cluster", plan.ActionNoop, "left in the cluster", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(Offline{Release: "app", Namespace: "prod"}.Parts(), "").Plan(context.Background(), Input{
				Release: plan.Release{Name: "app", Namespace: "prod"}, PreviousManifest: pvc("data", ""), Applier: applier(tt.kept),
			})
			if err != nil {
				t.Fatal(err)
			}
			c := p.Changes[0]
			if c.Action != tt.action || c.Destructive != tt.destr || len(c.Reasons) == 0 || !strings.HasPrefix(c.Reasons[0].Message, tt.want) {
				t.Errorf("%s destructive %v reasons %+v, want %s %v %q", c.Action, c.Destructive, c.Reasons, tt.action, tt.destr, tt.want)
			}
		})
	}
}
