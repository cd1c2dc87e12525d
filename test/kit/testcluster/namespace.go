package testcluster

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestNameAnnotation is set on every namespace Namespace creates to the full
// name of the test that asked for it.
const TestNameAnnotation = "safe-upgrade.test/test"

// Namespace creates a namespace with a fresh unique name derived from the
// test's name. When the test ends its pods are force-deleted (grace period 0:
// kwok finishes the pods of its fake Nodes, but a pod bound to a Node a test
// made, or on a user's cluster, would keep the namespace terminating) and
// the namespace is deleted without waiting for it to disappear.
func (c *Cluster) Namespace(t testing.TB) string {
	t.Helper()
	cs := c.Clientset(t)
	ns, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: namespacePrefix(t.Name()),
			Annotations:  map[string]string{TestNameAnnotation: t.Name()},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("testcluster: creating a namespace: %v", err)
	}
	t.Cleanup(func() {
		// t.Context() is already cancelled when cleanups run.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		zero := int64(0)
		err := cs.CoreV1().Pods(ns.Name).DeleteCollection(ctx,
			metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("testcluster: force-deleting the pods in %s: %v", ns.Name, err)
		}
		err = cs.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("testcluster: deleting namespace %s: %v", ns.Name, err)
		}
	})
	return ns.Name
}

var notDNSLabel = regexp.MustCompile(`[^a-z0-9]+`)

// namespacePrefix turns a test name into a GenerateName prefix: a DNS label
// of at most 40 characters ending in "-" (the server appends 5 random ones).
func namespacePrefix(testName string) string {
	p := strings.Trim(notDNSLabel.ReplaceAllString(strings.ToLower(testName), "-"), "-")
	if len(p) > 40 {
		p = strings.TrimRight(p[:40], "-")
	}
	if p == "" || p[0] < 'a' {
		p = "t" + p
	}
	return p + "-"
}
