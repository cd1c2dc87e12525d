package plan

import "testing"

func TestFingerprintSkipsRegenerated(t *testing.T) {
	change := func(random string) Change {
		return Change{APIVersion: "apps/v1", Action: ActionUpdate, Class: ClassRecreateRequired, Reasons: []Reason{
			{Path: "spec.selector", Before: "a", After: "b"},
			{Path: "spec.template.metadata.annotations[rollme]", Before: "x", After: random, Regenerated: true},
		}}
	}
	if Fingerprint(change("1")) != Fingerprint(change("2")) {
		t.Error("a regenerated value changes the fingerprint")
	}
	other := change("1")
	other.Reasons[0].After = "c"
	if Fingerprint(other) == Fingerprint(change("1")) {
		t.Error("a real value does not change the fingerprint")
	}
}
