// Package guard is the guard in the API server: a ValidatingAdmissionPolicy
// and its binding that refuse, for every client (Flux, Argo CD, kubectl, a
// real helm), the DELETE of a Helm release's object whose deletion destroys
// data, unless the object carries an acknowledgement bound to its own UID.
// The objects are built here, without the cluster (guard install --dry-run
// prints them for a GitOps repository); cluster.go installs, reads and
// removes them.
package guard

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/classify"
)

const (
	// Name names both the policy and its binding.
	Name = "safe-upgrade-guard"
	// AckAnnotation acknowledges the deletion of the object that carries it
	// when its value is that object's UID: a chart cannot pre-set it (the
	// UID is the API server's) and a copy on another object does not match.
	AckAnnotation = "safe-upgrade.io/ack-delete"
	// ProtectLabel, set to "true" on a Namespace, guards the Namespace's
	// deletion (one a chart created is guarded without it).
	ProtectLabel = "safe-upgrade.io/protect"
	// ReleaseAnnotation is Helm's: the objects of a release carry it.
	ReleaseAnnotation = "meta.helm.sh/release-name"
	// FieldManager is the manager of the guard's server-side apply.
	FieldManager = "helm-safe-upgrade"
	// ComponentLabel marks the guard's own objects (with the managed-by
	// label): guard uninstall removes exactly the objects that carry both.
	ComponentLabel = "safe-upgrade.io/component"
	managedByLabel = "app.kubernetes.io/managed-by"
	managedBy      = "helm-safe-upgrade"
	component      = "guard"
	// SpecAnnotation holds a digest of the guard's rules: status tells an
	// installed guard of another version.
	SpecAnnotation = "safe-upgrade.io/guard-spec"
	// Finalizer holds the guard's policy and binding after a casual delete
	// (kubectl delete, a GitOps prune): no policy can refuse the delete of
	// a policy or a binding (the API server exempts them from the policies
	// it is given through its API), but one being deleted stays in force
	// until its finalizers are gone. Nothing but guard uninstall removes it.
	Finalizer = "safe-upgrade.io/guard"
)

// Selector selects the guard's own objects.
var Selector = managedByLabel + "=" + managedBy + "," + ComponentLabel + "=" + component

// PolicyGVK and BindingGVK are the kinds the guard installs.
var (
	PolicyGVK  = admissionv1.SchemeGroupVersion.WithKind("ValidatingAdmissionPolicy")
	BindingGVK = admissionv1.SchemeGroupVersion.WithKind("ValidatingAdmissionPolicyBinding")
)

// guarded is one kind the guard protects: its row of the destructive kinds
// (classify), its resource, and the words of the denial.
type guarded struct {
	kind     schema.GroupKind
	resource string
	// also says what passes anyway, after the table's sentence.
	also string
}

// guardedKinds are the kinds whose DELETE the guard refuses. Their
// sentences come from the one table of destructive kinds.
var guardedKinds = []guarded{
	{kind: schema.GroupKind{Kind: "PersistentVolumeClaim"}, resource: "persistentvolumeclaims"},
	{kind: schema.GroupKind{Kind: "PersistentVolume"}, resource: "persistentvolumes", also: "reclaimPolicy is Delete"},
	{kind: schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}, resource: "customresourcedefinitions"},
	{kind: schema.GroupKind{Kind: "Namespace"}, resource: "namespaces"},
	{kind: schema.GroupKind{Group: "apps", Kind: "StatefulSet"}, resource: "statefulsets", also: "an orphaning delete (--cascade=orphan) keeps its pods and passes"},
}

// The CEL of the policy. Every expression reads oldObject (the object
// being deleted; object is null on DELETE). The message echoes names and
// the UID only: a messageExpression can echo any field, and field values
// may be secret.
const (
	notDryRun = `!(has(request.dryRun) && request.dryRun)`
	// releaseObject: the object belongs to a Helm release, or is a
	// Namespace labelled for protection or in one (claims made from a
	// StatefulSet's volumeClaimTemplates carry no Helm annotation).
	releaseObject = `oldObject != null && ((has(oldObject.metadata.annotations) && '` + ReleaseAnnotation + `' in oldObject.metadata.annotations) || ` +
		`(request.resource.resource == 'namespaces' && has(oldObject.metadata.labels) && '` + ProtectLabel + `' in oldObject.metadata.labels && oldObject.metadata.labels['` + ProtectLabel + `'] == 'true') || ` +
		`(namespaceObject != null && has(namespaceObject.metadata.labels) && '` + ProtectLabel + `' in namespaceObject.metadata.labels && namespaceObject.metadata.labels['` + ProtectLabel + `'] == 'true'))`
	// destroysData: a PersistentVolume only with reclaimPolicy Delete; a
	// StatefulSet unless the delete orphans its pods (the DeleteOptions are
	// visible as request.options: checked on the 1.37 control plane).
	destroysData = `(request.resource.resource != 'persistentvolumes' || (has(oldObject.spec.persistentVolumeReclaimPolicy) && oldObject.spec.persistentVolumeReclaimPolicy == 'Delete')) && ` +
		`(request.resource.resource != 'statefulsets' || !(has(request.options) && request.options != null && ` +
		`((has(request.options.propagationPolicy) && request.options.propagationPolicy == 'Orphan') || (has(request.options.orphanDependents) && request.options.orphanDependents == true))))`
	// inTerminatingNamespace: once a Namespace is being deleted (its own
	// deletion was the decision, guarded when it is protected), the
	// namespace controller's deletes of its content pass, or the Namespace
	// would never go.
	inTerminatingNamespace = `namespaceObject != null && has(namespaceObject.status) && has(namespaceObject.status.phase) && namespaceObject.status.phase == 'Terminating'`
	// guardedDelete is the validation. The namespace is read here, not in
	// a match condition: match conditions see no namespaceObject (seen on
	// 1.37: it is null there).
	guardedDelete = `!variables.guarded || variables.acknowledged`
	acknowledged  = `has(oldObject.metadata.annotations) && '` + AckAnnotation + `' in oldObject.metadata.annotations && oldObject.metadata.annotations['` + AckAnnotation + `'] == oldObject.metadata.uid`
	// target is how kubectl names the object: resource.group NAME [-n NS].
	target = `request.resource.resource + (request.resource.group != '' ? '.' + request.resource.group : '') + ' ' + oldObject.metadata.name + (has(oldObject.metadata.namespace) && oldObject.metadata.namespace != '' ? ' -n ' + oldObject.metadata.namespace : '')`
)

// destroysExpression is the CEL map from resource to what deleting one
// destroys, indexed by the request's resource.
func destroysExpression() string {
	parts := make([]string, 0, len(guardedKinds))
	for _, g := range guardedKinds {
		parts = append(parts, strconv.Quote(g.resource)+": "+strconv.Quote(Destroys(g.kind)))
	}
	return "{" + strings.Join(parts, ", ") + "}[request.resource.resource]"
}

// Destroys is what the denial says deleting an object of kind destroys.
func Destroys(kind schema.GroupKind) string {
	d, _ := classify.DestructiveKind(kind)
	text := d.Deleted
	for _, g := range guardedKinds {
		if g.kind == kind && g.also != "" {
			text += " (" + g.also + ")"
		}
	}
	return text
}

// message is the denial: the object, what its deletion destroys, the one
// command that acknowledges it.
const message = `'safe-upgrade guard: refusing to delete ' + request.kind.kind + ' ' + (has(oldObject.metadata.namespace) && oldObject.metadata.namespace != '' ? oldObject.metadata.namespace + '/' : '') + oldObject.metadata.name + ` +
	`': ' + variables.destroys + '. If that is intended, acknowledge this very object, then delete it again: kubectl annotate ' + ` + target +
	` + ' ` + AckAnnotation + `=' + oldObject.metadata.uid`

// Policy returns the ValidatingAdmissionPolicy.
func Policy() *admissionv1.ValidatingAdmissionPolicy {
	fail := admissionv1.Fail
	equivalent := admissionv1.Equivalent
	reason := metav1.StatusReasonForbidden
	var rules []admissionv1.NamedRuleWithOperations
	for _, g := range guardedKinds {
		rules = append(rules, admissionv1.NamedRuleWithOperations{RuleWithOperations: admissionv1.RuleWithOperations{
			Operations: []admissionv1.OperationType{admissionv1.Delete},
			Rule:       admissionv1.Rule{APIGroups: []string{g.kind.Group}, APIVersions: []string{"*"}, Resources: []string{g.resource}},
		}})
	}
	p := &admissionv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: PolicyGVK.GroupVersion().String(), Kind: PolicyGVK.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: Name, Labels: labels(), Finalizers: []string{Finalizer}},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    &fail,
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: rules, MatchPolicy: &equivalent},
			MatchConditions: []admissionv1.MatchCondition{
				{Name: "not-dry-run", Expression: notDryRun},
				{Name: "destroys-data", Expression: destroysData},
			},
			Variables: []admissionv1.Variable{
				{Name: "guarded", Expression: "(" + releaseObject + ") && !(" + inTerminatingNamespace + ")"},
				{Name: "acknowledged", Expression: acknowledged},
				{Name: "destroys", Expression: destroysExpression()},
			},
			Validations: []admissionv1.Validation{{
				Expression:        guardedDelete,
				MessageExpression: message,
				Reason:            &reason,
			}},
		},
	}
	p.Annotations = map[string]string{SpecAnnotation: digest(p.Spec)}
	return p
}

// Binding returns the binding that puts the policy in force everywhere.
func Binding() *admissionv1.ValidatingAdmissionPolicyBinding {
	return &admissionv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: BindingGVK.GroupVersion().String(), Kind: BindingGVK.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: Name, Labels: labels(), Finalizers: []string{Finalizer}},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        Name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
		},
	}
}

func labels() map[string]string {
	return map[string]string{managedByLabel: managedBy, ComponentLabel: component}
}

// digest is a short digest of the policy's rules.
func digest(spec admissionv1.ValidatingAdmissionPolicySpec) string {
	b, err := json.Marshal(spec)
	if err != nil {
		panic(fmt.Sprintf("guard: encoding the policy: %v", err)) // a struct of strings always encodes
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:6])
}

// Objects returns the policy and the binding, in the order they are
// applied, as unstructured objects without server-set fields.
func Objects() ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, o := range []runtime.Object{Policy(), Binding()} {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return nil, fmt.Errorf("guard: %w", err)
		}
		u := &unstructured.Unstructured{Object: m}
		unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
		unstructured.RemoveNestedField(u.Object, "status")
		out = append(out, u)
	}
	return out, nil
}
