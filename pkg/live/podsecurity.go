package live

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	psapolicy "k8s.io/pod-security-admission/policy"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/apis"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/predict"
)

// namespaceRead is one namespace, read once per run (PodSecurity's labels,
// a policy's namespaceSelector and namespaceObject).
type namespaceRead struct {
	once sync.Once
	obj  *unstructured.Unstructured
	err  error
	// typed is obj as the server's admission holds it, converted once.
	typedOnce sync.Once
	typed     *corev1.Namespace
	typedErr  error
}

// namespace returns the namespace name, one GET per run.
func (o *Observers) namespace(ctx context.Context, name string) (*unstructured.Unstructured, error) {
	ns := entry(&o.mu, &o.namespaces, name)
	ns.once.Do(func() { ns.obj, ns.err = o.cluster.Namespace(ctx, name) })
	return ns.obj, ns.err
}

// typedNamespace is namespace's answer as a corev1.Namespace, converted once.
func (o *Observers) typedNamespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	got, err := o.namespace(ctx, name)
	if err != nil {
		return nil, err
	}
	o.mu.Lock()
	ns := o.namespaces[name]
	o.mu.Unlock()
	ns.typedOnce.Do(func() {
		ns.typed = &corev1.Namespace{}
		ns.typedErr = runtime.DefaultUnstructuredConverter.FromUnstructured(got.Object, ns.typed)
	})
	return ns.typed, ns.typedErr
}

// PodSecurityWarns returns why PodSecurity admission may warn about an
// update storing obj (predict.PodSecurityWarns), or "" when it cannot. The
// namespace is read once per run; a read that fails (RBAC refuses GET on
// namespaces, say) answers that it may warn, so the caller asks the
// server. serverVersion is the API server's git version (v1.37.2).
func (o *Observers) PodSecurityWarns(ctx context.Context, obj *unstructured.Unstructured, serverVersion string) string {
	if !predict.PodController(obj) {
		return "" // not a pod controller: no namespace to read
	}
	got, err := o.namespace(ctx, obj.GetNamespace())
	if err != nil {
		return "namespace " + obj.GetNamespace() + " unreadable for PodSecurity: " + err.Error()
	}
	labels := got.GetLabels()
	minor, _ := apis.ParseMinor(serverVersion) // 0 when unknown: asked
	o.evalOnce.Do(func() {
		// An evaluator that cannot be built leaves eval nil: every
		// template at a warn level other than privileged is asked.
		if e, err := psapolicy.NewEvaluator(psapolicy.DefaultChecks(), predict.PodSecurityEmulation(minor)); err == nil {
			o.eval = e
		}
	})
	return predict.PodSecurityWarns(o.eval, obj, labels, minor)
}
