package live

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
}

// namespace returns the namespace name, one GET per run.
func (o *Observers) namespace(ctx context.Context, name string) (*unstructured.Unstructured, error) {
	o.mu.Lock()
	if o.namespaces == nil {
		o.namespaces = map[string]*namespaceRead{}
	}
	ns := o.namespaces[name]
	if ns == nil {
		ns = &namespaceRead{}
		o.namespaces[name] = ns
	}
	o.mu.Unlock()
	ns.once.Do(func() { ns.obj, ns.err = o.cluster.Namespace(ctx, name) })
	return ns.obj, ns.err
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
