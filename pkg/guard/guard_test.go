package guard

import (
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestObjects: the policy, its binding, the marker and its binding carry
// the guard's labels and name each other; the policy sees DELETE and
// UPDATE of the guarded kinds only, the marker CREATE of claims only.
func TestObjects(t *testing.T) {
	objs, err := Objects()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{PolicyGVK.Kind, BindingGVK.Kind, MarkerGVK.Kind, MarkerBindingGVK.Kind}
	if len(objs) != len(want) {
		t.Fatalf("want %v, got %v", want, objs)
	}
	for i, o := range objs {
		if o.GetKind() != want[i] {
			t.Errorf("object %d: %s, want %s", i, o.GetKind(), want[i])
		}
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
	if p := MarkerBinding().Spec.PolicyName; p != Name {
		t.Errorf("the marker's binding names policy %q", p)
	}
	for _, r := range Policy().Spec.MatchConstraints.ResourceRules {
		if len(r.Operations) != 2 || r.Operations[0] != "DELETE" || r.Operations[1] != "UPDATE" {
			t.Errorf("rule %v: want DELETE and UPDATE", r)
		}
	}
	for _, r := range Marker().Spec.MatchConstraints.ResourceRules {
		if len(r.Operations) != 1 || r.Operations[0] != "CREATE" || len(r.Resources) != 1 || r.Resources[0] != "persistentvolumeclaims" {
			t.Errorf("marker rule %v: want CREATE of claims only", r)
		}
	}
	if Policy().Annotations[SpecAnnotation] == "" || Marker().Annotations[SpecAnnotation] == "" {
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
	if len(tests) != len(guardedKinds()) {
		t.Fatalf("%d guarded kinds, %d tested", len(guardedKinds()), len(tests))
	}
	for _, tt := range tests {
		if got := Destroys(tt.kind); !strings.Contains(got, tt.want) {
			t.Errorf("%v: %q, want it to say %q", tt.kind, got, tt.want)
		}
	}
}

// TestMessageEchoesNamesOnly: each denial may echo what names the object
// and nothing else of it (a messageExpression can echo any field).
func TestMessageEchoesNamesOnly(t *testing.T) {
	for _, v := range Policy().Spec.Validations {
		msg := v.MessageExpression
		for _, ref := range regexp.MustCompile(`oldObject(\.[a-zA-Z]+)+`).FindAllString(msg, -1) {
			switch ref {
			case "oldObject.metadata.name", "oldObject.metadata.namespace", "oldObject.metadata.uid":
			default:
				t.Errorf("the message reads %s", ref)
			}
		}
		if strings.Contains(strings.ReplaceAll(msg, "oldObject.", ""), "object.") || strings.Contains(msg, "request.options") {
			t.Errorf("the message reads the new object or the request's options: %s", msg)
		}
		if !strings.Contains(msg, "kubectl annotate") || !strings.Contains(msg, AckAnnotation) {
			t.Errorf("the message does not say how to acknowledge: %s", msg)
		}
	}
}
