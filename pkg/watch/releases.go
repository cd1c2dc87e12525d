package watch

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
)

// Pods are pods by namespace.
type Pods map[string][]*corev1.Pod

// ReadPods LISTs the pods of the releases' namespaces once (every
// namespace when they are several, or with allNamespaces), when a release
// has a workload: Check reads why a workload is not ready from them. A
// LIST that fails is said to logf and leaves the reasons unread; a pod
// that does not read as one is an error.
func ReadPods(ctx context.Context, cluster *live.Cluster, rels []*live.Release, allNamespaces bool, logf func(string, ...interface{})) (Pods, error) {
	namespaces := map[string]bool{}
	for _, r := range rels {
		for _, o := range r.Objects.Objects() {
			if Workload(o.GVK.GroupKind()) {
				namespaces[o.ID.Namespace] = true
			}
		}
	}
	if len(namespaces) == 0 {
		return nil, nil
	}
	ns := live.ListNamespace(namespaces, allNamespaces)
	list, err := cluster.Dynamic.Resource(live.PodsGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		logf("status: pods not listed, workloads' reasons not read: %v", err)
		return nil, nil
	}
	out := Pods{}
	for i := range list.Items {
		pod, err := toPod(&list.Items[i])
		if err != nil {
			return nil, fmt.Errorf("pod %s/%s: %w", list.Items[i].GetNamespace(), list.Items[i].GetName(), err)
		}
		out[pod.Namespace] = append(out[pod.Namespace], pod)
	}
	return out, nil
}

// NotReady is a line for each workload of r that is not ready, with
// Check's reason: an image that cannot be pulled, a crash loop, a pod that
// cannot be scheduled. Its live objects are inv's (a workload whose kind's
// LIST failed, or that is missing, is said elsewhere); pods are ReadPods'.
// The lines quote the cluster: san sanitises them.
func NotReady(r *live.Release, inv *live.Inventory, pods Pods, san *redact.Sanitizer) []string {
	var out []string
	for _, o := range r.Objects.Objects() {
		if !Workload(o.GVK.GroupKind()) || inv.Failed(o.GVK.GroupKind()) != nil {
			continue
		}
		obj := inv.State(o.ID).Decode().Obj
		if obj == nil {
			continue // missing: said as such
		}
		if h := Check(obj, pods[o.ID.Namespace]); h.State != plan.StateCurrent {
			out = append(out, san.Text(fmt.Sprintf("%s not ready: %s", o.ID, h), redact.MessageLimit))
		}
	}
	return out
}
