package watch

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// storageClasses are the binding modes of the cluster's StorageClasses
// by name, or why they could not be read.
type storageClasses struct {
	modes map[string]string
	err   error
}

// unbound reports whether obj, a claim, is there and Pending (not bound
// to a volume yet).
func unbound(obj *unstructured.Unstructured) bool {
	if obj == nil || obj.GetDeletionTimestamp() != nil {
		return false
	}
	phase, _, _ := unstructured.NestedString(obj.Object, "status", "phase")
	return phase == "" || phase == "Pending"
}

// unboundClaim is the status of a claim that is not bound yet. A claim
// whose StorageClass binds on first use (volumeBindingMode
// WaitForFirstConsumer) is bound only when a pod using it is scheduled,
// which may be never, and nothing Helm applied waits for it: it is
// current, saying so. Any other claim (class Immediate, or none: it binds
// to a matching PersistentVolume) is in progress until it is bound; a
// claim still unbound when the watch ends is named as not current.
// bindingMode says a class's volumeBindingMode (nil: not known).
func unboundClaim(obj *unstructured.Unstructured, bindingMode func(class string) (string, error)) status {
	class, _, _ := unstructured.NestedString(obj.Object, "spec", "storageClassName")
	if class == "" {
		return status{state: plan.StateInProgress, detail: "not bound", reason: "no StorageClass: it binds to a PersistentVolume that matches it, and none has yet"}
	}
	if bindingMode == nil {
		return status{state: plan.StateInProgress, detail: "not bound", reason: "StorageClass " + class + " has not bound it yet"}
	}
	mode, err := bindingMode(class)
	switch {
	case err != nil:
		return status{state: plan.StateInProgress, detail: "not bound", reason: fmt.Sprintf("StorageClass %s cannot be read: %v", class, err)}
	case mode == "WaitForFirstConsumer":
		return status{state: plan.StateCurrent, detail: "not bound: StorageClass " + class + " binds it when a pod using it is scheduled (WaitForFirstConsumer)"}
	case mode == "":
		return status{state: plan.StateInProgress, detail: "not bound", reason: "StorageClass " + class + " does not exist"}
	}
	return status{state: plan.StateInProgress, detail: "not bound", reason: "StorageClass " + class + " binds at once (" + mode + "), and has not yet"}
}

// bindingMode is the volumeBindingMode of StorageClass name ("" when
// there is no such class), from one LIST of them for the watch's life.
func (w *Watcher) bindingMode(name string) (string, error) {
	if w.classes == nil {
		w.classes = &storageClasses{modes: map[string]string{}}
		w.requests.add(live.StorageClassesGVR, false)
		list, err := w.reader.List(w.life, live.StorageClassesGVR, "", metav1.ListOptions{})
		if err != nil {
			w.classes.err = err
		} else {
			for _, sc := range list.Items {
				mode, _, _ := unstructured.NestedString(sc.Object, "volumeBindingMode")
				if mode == "" {
					mode = "Immediate" // the API server's default
				}
				w.classes.modes[sc.GetName()] = mode
			}
		}
	}
	return w.classes.modes[name], w.classes.err
}
