package testcluster

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Eventually polls cond every 200ms for up to a minute (controllers and
// admission policies take effect asynchronously); it fails the test with
// what and the state cond last described when cond never holds.
func Eventually(t testing.TB, what string, cond func() (ok bool, state string)) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 1m, still not %s: %s", what, state)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// PodsAndClaims returns the UIDs, by name, of the pods of namespace ns that
// podSelector selects ("": all) and of all its PersistentVolumeClaims: what
// a recreate must keep.
func (c *Cluster) PodsAndClaims(t testing.TB, ns, podSelector string) (pods, claims map[string]types.UID) {
	t.Helper()
	core := c.Clientset(t).CoreV1()
	pl, err := core.Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: podSelector})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := core.PersistentVolumeClaims(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods, claims = map[string]types.UID{}, map[string]types.UID{}
	for _, p := range pl.Items {
		pods[p.Name] = p.UID
	}
	for _, pvc := range cl.Items {
		claims[pvc.Name] = pvc.UID
	}
	return pods, claims
}
