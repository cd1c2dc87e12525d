package guard

import (
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestObjects: the policy and its binding carry the guard's labels, name
// each other, and deny only DELETE of the guarded kinds.
func TestObjects(t *testing.T) {
	objs, err := Objects()
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 || objs[0].GetKind() != PolicyGVK.Kind || objs[1].GetKind() != BindingGVK.Kind {
		t.Fatalf("want the policy then the binding, got %v", objs)
	}
	for _, o := range objs {
		if !ours(o) || o.GetName() != Name {
			t.Errorf("%s %s: labels %v, want the guard's %s", o.GetKind(), o.GetName(), o.GetLabels(), Selector)
		}
		if _, found := o.Object["status"]; found {
			t.Errorf("%s carries a status", o.GetKind())
		}
	}
	if p := Binding().Spec.PolicyName; p != Name {
		t.Errorf("the binding names policy %q", p)
	}
	for _, r := range Policy().Spec.MatchConstraints.ResourceRules {
		if len(r.Operations) != 1 || r.Operations[0] != "DELETE" {
			t.Errorf("rule %v: want DELETE only", r)
		}
	}
	if Policy().Annotations[SpecAnnotation] == "" {
		t.Error("no spec digest")
	}
}

// TestDestroys: each guarded kind says what its deletion destroys, from
// the table of destructive kinds.
func TestDestroys(t *testing.T) {
	tests := []struct {
		kind schema.GroupKind
		want string
	}{
		{schema.GroupKind{Kind: "PersistentVolumeClaim"}, "deletes its volume's data"},
		{schema.GroupKind{Kind: "PersistentVolume"}, "reclaimPolicy is Delete"},
		{schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}, "every custom resource"},
		{schema.GroupKind{Kind: "Namespace"}, "everything in it"},
		{schema.GroupKind{Group: "apps", Kind: "StatefulSet"}, "--cascade=orphan"},
	}
	if len(tests) != len(guardedKinds) {
		t.Fatalf("%d guarded kinds, %d tested", len(guardedKinds), len(tests))
	}
	for _, tt := range tests {
		if got := Destroys(tt.kind); !strings.Contains(got, tt.want) {
			t.Errorf("%v: %q, want it to say %q", tt.kind, got, tt.want)
		}
	}
}

// TestMessageEchoesNamesOnly: the denial may echo what names the object
// and nothing else of it (a messageExpression can echo any field).
func TestMessageEchoesNamesOnly(t *testing.T) {
	msg := Policy().Spec.Validations[0].MessageExpression
	for _, ref := range regexp.MustCompile(`oldObject(\.[a-zA-Z]+)+`).FindAllString(msg, -1) {
		switch ref {
		case "oldObject.metadata.name", "oldObject.metadata.namespace", "oldObject.metadata.uid":
		default:
			t.Errorf("the message reads %s", ref)
		}
	}
	if strings.Contains(msg, "object.") && strings.Contains(strings.ReplaceAll(msg, "oldObject.", ""), "object.") {
		t.Error("the message reads object")
	}
	if !strings.Contains(msg, "kubectl annotate") || !strings.Contains(msg, AckAnnotation) {
		t.Errorf("the message does not say how to acknowledge: %s", msg)
	}
}
