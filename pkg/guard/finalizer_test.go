package guard

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// TestFinalizerHoldsTheGuard: the guard's objects carry its finalizer;
// status tells one being deleted (still in force) and one without the
// finalizer (an older guard); install refuses, writing nothing, while one
// is being deleted; releasing the finalizer keeps anyone else's.
func TestFinalizerHoldsTheGuard(t *testing.T) {
	objs, err := Objects()
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if f := o.GetFinalizers(); len(f) != 1 || f[0] != Finalizer {
			t.Errorf("%s: finalizers %v, want %s", o.GetKind(), f, Finalizer)
		}
	}
	deleting := objs[1].DeepCopy()
	ts := metav1.NewTime(time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC))
	deleting.SetDeletionTimestamp(&ts)
	older := objs[0].DeepCopy()
	older.SetFinalizers(nil)
	tests := []struct {
		name string
		objs []*unstructured.Unstructured
		want string
	}{
		{"being deleted", []*unstructured.Unstructured{objs[0], deleting}, "being deleted since 2026-12-03T09:00:00Z but still in force"},
		{"without the finalizer", []*unstructured.Unstructured{older, objs[1]}, "of another version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, dyn := fakeCluster(true, tt.objs[0], tt.objs[1])
			lines, current, err := Status(context.Background(), r)
			if err != nil || current || !strings.Contains(strings.Join(lines, "\n"), tt.want) {
				t.Errorf("status: %q current %v err %v, want it to say %q", lines, current, err, tt.want)
			}
			if tt.name != "being deleted" {
				return // the fake client cannot take a server-side apply
			}
			if _, err := Install(context.Background(), r); err == nil || !strings.Contains(err.Error(), "guard uninstall") || len(writes(dyn)) != 0 {
				t.Errorf("install while being deleted: %v, wrote %v", err, writes(dyn))
			}
		})
	}

	shared := objs[0].DeepCopy()
	shared.SetUID("u1")
	shared.SetFinalizers([]string{"example.com/other", Finalizer})
	r, dyn := fakeCluster(true, shared)
	res, _, err := r.Resource(PolicyGVK, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := releaseFinalizer(context.Background(), res, Name, types.UID("u1")); err != nil {
		t.Fatal(err)
	}
	got, err := dyn.Resource(policyGVR).Get(context.Background(), Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if f := got.GetFinalizers(); len(f) != 1 || f[0] != "example.com/other" {
		t.Errorf("finalizers after release: %v, want only the other one", f)
	}
}
