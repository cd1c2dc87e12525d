package live

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	psapolicy "k8s.io/pod-security-admission/policy"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/apis"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/predict"
)

// namespaceLabels is one namespace's labels, read once.
type namespaceLabels struct {
	once   sync.Once
	labels map[string]string
	err    error
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
	o.mu.Lock()
	if o.namespaces == nil {
		o.namespaces = map[string]*namespaceLabels{}
	}
	ns := o.namespaces[obj.GetNamespace()]
	if ns == nil {
		ns = &namespaceLabels{}
		o.namespaces[obj.GetNamespace()] = ns
	}
	o.mu.Unlock()
	ns.once.Do(func() {
		got, err := o.cluster.Namespace(ctx, obj.GetNamespace())
		if err != nil {
			ns.err = err
			return
		}
		ns.labels = got.GetLabels()
	})
	if ns.err != nil {
		return "namespace " + obj.GetNamespace() + " unreadable for PodSecurity: " + ns.err.Error()
	}
	minor, _ := apis.ParseMinor(serverVersion) // 0 when unknown: asked
	o.evalOnce.Do(func() {
		// An evaluator that cannot be built leaves eval nil: every
		// template at a warn level other than privileged is asked.
		if e, err := psapolicy.NewEvaluator(psapolicy.DefaultChecks(), predict.PodSecurityEmulation(minor)); err == nil {
			o.eval = e
		}
	})
	return predict.PodSecurityWarns(o.eval, obj, ns.labels, minor)
}
