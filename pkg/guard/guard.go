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
	AckAnnotation = classify.AckDeleteAnnotation
	// ProtectLabel, set to "true" on a Namespace, guards the Namespace's
	// deletion (one a chart created is guarded without it).
	ProtectLabel = "safe-upgrade.io/protect"
	// GuardedLabel marks a claim the StatefulSet controller made from a
	// claim template (the mutating policy sets it; guard install on the
	// claims that were there before): such a claim carries no Helm
	// annotation, and holds most databases' data.
	GuardedLabel = "safe-upgrade.io/guarded"
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

// PolicyGVK and BindingGVK are the kinds of the guard that refuses;
// MarkerGVK and MarkerBindingGVK those of the mutating policy that marks
// the claims the StatefulSet controller makes (Kubernetes 1.36 or later).
var (
	PolicyGVK        = admissionv1.SchemeGroupVersion.WithKind("ValidatingAdmissionPolicy")
	BindingGVK       = admissionv1.SchemeGroupVersion.WithKind("ValidatingAdmissionPolicyBinding")
	MarkerGVK        = admissionv1.SchemeGroupVersion.WithKind("MutatingAdmissionPolicy")
	MarkerBindingGVK = admissionv1.SchemeGroupVersion.WithKind("MutatingAdmissionPolicyBinding")
)

// StatefulSetControllers are the identities under which the StatefulSet
// controller creates claims: its own service account (kube-controller-manager
// --use-service-account-credentials, as kubeadm and the cloud providers run
// it) or the controller manager's (without it).
var StatefulSetControllers = []string{"system:serviceaccount:kube-system:statefulset-controller", "system:kube-controller-manager"}

// GuardedMark is the value of GuardedLabel on a claim made from a
// StatefulSet's claim template.
const GuardedMark = "volumeClaimTemplate"

// guarded is one kind the guard protects: its row of the destructive kinds
// (classify), whose resource the policy matches, and the words of the
// denial.
type guarded struct {
	kind     schema.GroupKind
	resource string
	// also says what passes anyway, after the table's sentence.
	also string
}

// guardAlso is what the guard lets pass of some destructive kinds.
func guardAlso(kind schema.GroupKind) string {
	switch kind {
	case schema.GroupKind{Kind: "PersistentVolume"}:
		return "reclaimPolicy is Delete"
	case schema.GroupKind{Group: "apps", Kind: "StatefulSet"}:
		return "an orphaning delete (--cascade=orphan) keeps its pods and passes"
	}
	return ""
}

// guardedKinds are the kinds whose DELETE the guard refuses: every row of
// the one table of destructive kinds.
func guardedKinds() []guarded {
	var out []guarded
	for _, d := range classify.DestructiveKinds() {
		out = append(out, guarded{kind: d.Kind, resource: d.Resource, also: guardAlso(d.Kind)})
	}
	return out
}

// The CEL of the policy. On DELETE oldObject is the object being deleted
// (object is null); on UPDATE oldObject is the stored object and object the
// one written. Messages echo kinds, names and the UID only: a
// messageExpression can echo any field, and field values may be secret.
const (
	notDryRun = `!(has(request.dryRun) && request.dryRun)`
	isDelete  = `request.operation == 'DELETE'`
	isUpdate  = `request.operation == 'UPDATE'`
	// destroysData: a PersistentVolume only with reclaimPolicy Delete; a
	// StatefulSet unless the delete orphans its pods (the DeleteOptions are
	// visible as request.options: checked on the 1.37 control plane).
	destroysData = `(request.resource.resource != 'persistentvolumes' || (has(oldObject.spec.persistentVolumeReclaimPolicy) && oldObject.spec.persistentVolumeReclaimPolicy == 'Delete')) && ` +
		`(request.resource.resource != 'statefulsets' || !(has(request.options) && request.options != null && ` +
		`((has(request.options.propagationPolicy) && request.options.propagationPolicy == 'Orphan') || (has(request.options.orphanDependents) && request.options.orphanDependents == true))))`
	terminating = `namespaceObject != null && has(namespaceObject.status) && has(namespaceObject.status.phase) && namespaceObject.status.phase == 'Terminating'`
	isClaim     = `request.resource.resource == 'persistentvolumeclaims'`
	isNamespace = `request.resource.resource == 'namespaces'`
	isVolume    = `request.resource.resource == 'persistentvolumes'`
	// boundDeleteVolume: a volume bound to a claim whose data goes with
	// it, whatever made it (a provisioner's volume carries no Helm
	// annotation). Once its claim is gone it is Released, and the volume
	// controller's delete passes.
	boundDeleteVolume = isVolume + ` && has(oldObject.spec.persistentVolumeReclaimPolicy) && oldObject.spec.persistentVolumeReclaimPolicy == 'Delete' && has(oldObject.status) && has(oldObject.status.phase) && oldObject.status.phase == 'Bound'`
	// retainedByPolicy: a claim its StatefulSet's
	// persistentVolumeClaimRetentionPolicy hands to the garbage collector
	// (an owner reference to the StatefulSet or its Pod): that policy is the
	// decision, as for a claim of a generic ephemeral volume.
	ownedClaim = `has(oldObject.metadata.ownerReferences) && oldObject.metadata.ownerReferences.exists(r, r.kind == 'Pod' || r.kind == 'StatefulSet')`
	// guardedDelete is the delete validation. The namespace is read in
	// variables, not in a match condition: match conditions see no
	// namespaceObject (seen on 1.37: it is null there).
	guardedDelete = `!(` + isDelete + `) || !variables.guarded || variables.acknowledged`
	// ackBySomeone: only a person's acknowledgement (kubectl annotate, edit,
	// patch) or the tool's own acknowledged write sets the annotation; a
	// chart applied by Helm, helm-controller or Argo CD cannot acknowledge
	// its own deletion (it could read the UID through lookup).
	ackBySomeone = `!(` + isUpdate + `) || !variables.ackSet || variables.allowedManager`
	keptIdentity = `!(` + isUpdate + `) || !variables.stripped || variables.acknowledgedNow`
	keptReclaim  = `!(` + isUpdate + `) || !variables.toDelete || variables.acknowledgedNow`
	// target is how kubectl names the object: resource.group NAME [-n NS].
	target = `request.resource.resource + (request.resource.group != '' ? '.' + request.resource.group : '') + ' ' + oldObject.metadata.name + (has(oldObject.metadata.namespace) && oldObject.metadata.namespace != '' ? ' -n ' + oldObject.metadata.namespace : '')`
	// who is the object as the messages name it: Kind [namespace/]name.
	who = `request.kind.kind + ' ' + (has(oldObject.metadata.namespace) && oldObject.metadata.namespace != '' ? oldObject.metadata.namespace + '/' : '') + oldObject.metadata.name`
	// annotateCmd is the one command that acknowledges the object.
	annotateCmd = `'kubectl annotate ' + ` + target + ` + ' ` + AckAnnotation + `=' + oldObject.metadata.uid`
)

// AckManagers are the field managers whose writes may set AckAnnotation:
// kubectl's annotate, edit and patch (a person), and the tool's own
// acknowledged write. Helm (helm, or none: Helm 3 sets no manager),
// helm-controller, Argo CD and any other applier are refused.
var AckManagers = []string{"kubectl-annotate", "kubectl-edit", "kubectl-patch", FieldManager}

var allowedManagers = func() string {
	q := make([]string, len(AckManagers))
	for i, m := range AckManagers {
		q[i] = "'" + m + "'"
	}
	return "[" + strings.Join(q, ", ") + "]"
}()

// has is the CEL test that obj's metadata map field holds key.
func has(obj, field, key string) string {
	return `(` + obj + ` != null && has(` + obj + `.metadata.` + field + `) && '` + key + `' in ` + obj + `.metadata.` + field + `)`
}

// value is the CEL value of obj's metadata map field at key, ” without it.
func value(obj, field, key string) string {
	return `(` + has(obj, field, key) + ` ? ` + obj + `.metadata.` + field + `['` + key + `'] : '')`
}

// identity is what makes obj guarded on its own: Helm's release
// annotation, the guard's mark on a claim made from a claim template, a
// Namespace's protect label.
func identity(obj string) string {
	return `(` + has(obj, "annotations", ReleaseAnnotation) + ` || ` + has(obj, "labels", GuardedLabel) +
		` || (` + isNamespace + ` && ` + value(obj, "labels", ProtectLabel) + ` == 'true'))`
}

// destroysExpression is the CEL map from resource to what deleting one
// destroys, indexed by the request's resource.
func destroysExpression() string {
	parts := make([]string, 0, len(guardedKinds()))
	for _, g := range guardedKinds() {
		parts = append(parts, strconv.Quote(g.resource)+": "+strconv.Quote(Destroys(g.kind)))
	}
	return "{" + strings.Join(parts, ", ") + "}[request.resource.resource]"
}

// Destroys is what the denial says deleting an object of kind destroys.
func Destroys(kind schema.GroupKind) string {
	d, _ := classify.DestructiveKind(kind)
	text := d.Deleted
	for _, g := range guardedKinds() {
		if g.kind == kind && g.also != "" {
			text += " (" + g.also + ")"
		}
	}
	return text
}

// The denials: the object, what the request would lose, the one command
// that acknowledges it.
const (
	deleteMessage = `'safe-upgrade guard: refusing to delete ' + ` + who + ` + ': ' + variables.destroys + ` +
		`(variables.terminating ? ' (its namespace is being deleted: the namespace stays Terminating, its data kept, until each guarded object in it is acknowledged; helm safe-upgrade guard status lists them)' : '') + ` +
		`'. If that is intended, acknowledge this very object, then delete it again: ' + ` + annotateCmd
	ackMessage = `'safe-upgrade guard: refusing to set ` + AckAnnotation + ` on ' + ` + who +
		` + ': only a person acknowledges a deletion (kubectl annotate), never a chart or a controller applying one (Helm, helm-controller, Argo CD); remove the annotation from the chart. To acknowledge by hand: ' + ` + annotateCmd
	identityMessage = `'safe-upgrade guard: refusing to remove ` + ReleaseAnnotation + `, ` + GuardedLabel + ` or ` + ProtectLabel + `=true from ' + ` + who +
		` + ': it would unguard the deletion of its data. If that is intended, acknowledge this very object first: ' + ` + annotateCmd
	reclaimMessage = `'safe-upgrade guard: refusing to set persistentVolumeReclaimPolicy Delete on ' + ` + who +
		` + ': the data of the volume would go with its claim. If that is intended, acknowledge this very object first: ' + ` + annotateCmd
)

// Policy returns the ValidatingAdmissionPolicy.
func Policy() *admissionv1.ValidatingAdmissionPolicy {
	fail := admissionv1.Fail
	equivalent := admissionv1.Equivalent
	reason := metav1.StatusReasonForbidden
	var rules []admissionv1.NamedRuleWithOperations
	for _, g := range guardedKinds() {
		rules = append(rules, admissionv1.NamedRuleWithOperations{RuleWithOperations: admissionv1.RuleWithOperations{
			Operations: []admissionv1.OperationType{admissionv1.Delete, admissionv1.Update},
			Rule:       admissionv1.Rule{APIGroups: []string{g.kind.Group}, APIVersions: []string{"*"}, Resources: []string{g.resource}},
		}})
	}
	newAck, oldAck := value("object", "annotations", AckAnnotation), value("oldObject", "annotations", AckAnnotation)
	p := &admissionv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: PolicyGVK.GroupVersion().String(), Kind: PolicyGVK.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: Name, Labels: labels(), Finalizers: []string{Finalizer}},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    &fail,
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: rules, MatchPolicy: &equivalent},
			MatchConditions: []admissionv1.MatchCondition{
				{Name: "not-dry-run", Expression: notDryRun},
				// Updates are seen only when they touch what the guard
				// keeps: the acknowledgement, the identity, a volume's
				// reclaim policy. Every other update is not the guard's.
				{Name: "guarded-operation", Expression: `!(` + isUpdate + `) || ` + newAck + ` != ` + oldAck + ` || ` + identity("oldObject") + ` && !` + identity("object") +
					` || (` + isNamespace + ` && ` + value("object", "labels", ProtectLabel) + ` == 'false' && ` + value("oldObject", "labels", ProtectLabel) + ` != 'false')` +
					` || (` + isVolume + ` && has(object.spec.persistentVolumeReclaimPolicy) && object.spec.persistentVolumeReclaimPolicy == 'Delete' && !(has(oldObject.spec.persistentVolumeReclaimPolicy) && oldObject.spec.persistentVolumeReclaimPolicy == 'Delete'))`},
			},
			Variables: []admissionv1.Variable{
				{Name: "terminating", Expression: terminating},
				// optedOut: a namespace labelled protect=false (CI's
				// throw-away namespaces) lets its deletion take its claims.
				{Name: "optedOut", Expression: `namespaceObject != null && ` + value("namespaceObject", "labels", ProtectLabel) + ` == 'false'`},
				{Name: "guarded", Expression: `(` + has("oldObject", "annotations", ReleaseAnnotation) +
					` || (` + has("oldObject", "labels", GuardedLabel) + ` && !(` + ownedClaim + `))` +
					` || (` + isNamespace + ` && ` + value("oldObject", "labels", ProtectLabel) + ` == 'true')` +
					` || (namespaceObject != null && ` + value("namespaceObject", "labels", ProtectLabel) + ` == 'true')` +
					` || (` + boundDeleteVolume + `))` +
					// In a namespace being deleted only its claims are kept: the
					// rest goes with the namespace's own (guarded) deletion.
					` && !(variables.terminating && (!(` + isClaim + `) || variables.optedOut))` +
					` && (` + destroysData + `)`},
				{Name: "acknowledged", Expression: oldAck + ` == oldObject.metadata.uid`},
				{Name: "acknowledgedNow", Expression: oldAck + ` == oldObject.metadata.uid || (object != null && ` + newAck + ` == oldObject.metadata.uid)`},
				{Name: "ackSet", Expression: `object != null && ` + newAck + ` != '' && ` + newAck + ` != ` + oldAck},
				{Name: "allowedManager", Expression: `(has(request.options) && request.options != null && has(request.options.fieldManager) ? string(request.options.fieldManager) : '') in ` + allowedManagers},
				{Name: "stripped", Expression: `object != null && (` + identity("oldObject") + ` && !` + identity("object") +
					` || (` + isNamespace + ` && ` + value("object", "labels", ProtectLabel) + ` == 'false' && ` + value("oldObject", "labels", ProtectLabel) + ` != 'false'))`},
				{Name: "toDelete", Expression: `object != null && ` + isVolume + ` && has(object.spec.persistentVolumeReclaimPolicy) && object.spec.persistentVolumeReclaimPolicy == 'Delete' && !(has(oldObject.spec.persistentVolumeReclaimPolicy) && oldObject.spec.persistentVolumeReclaimPolicy == 'Delete')`},
				{Name: "destroys", Expression: destroysExpression()},
			},
			Validations: []admissionv1.Validation{
				{Expression: guardedDelete, MessageExpression: deleteMessage, Reason: &reason},
				{Expression: ackBySomeone, MessageExpression: ackMessage, Reason: &reason},
				{Expression: keptIdentity, MessageExpression: identityMessage, Reason: &reason},
				{Expression: keptReclaim, MessageExpression: reclaimMessage, Reason: &reason},
			},
		},
	}
	p.Annotations = map[string]string{SpecAnnotation: digest(p.Spec)}
	return p
}

// Marker returns the MutatingAdmissionPolicy that labels GuardedLabel on
// every claim the StatefulSet controller creates without an owner (its
// retention policy Retain, the default): the claims of a claim template,
// which carry no Helm annotation, whoever installed the StatefulSet. A
// generic ephemeral volume's claim (owned by its Pod) and a claim its
// StatefulSet deletes itself (owned by it) are left alone. It fails open:
// a claim it could not label is named by guard status, and a workload's
// pods never wait on it.
func Marker() *admissionv1.MutatingAdmissionPolicy {
	ignore := admissionv1.Ignore
	equivalent := admissionv1.Equivalent
	q := make([]string, len(StatefulSetControllers))
	for i, u := range StatefulSetControllers {
		q[i] = "'" + u + "'"
	}
	p := &admissionv1.MutatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: MarkerGVK.GroupVersion().String(), Kind: MarkerGVK.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: Name, Labels: labels(), Finalizers: []string{Finalizer}},
		Spec: admissionv1.MutatingAdmissionPolicySpec{
			FailurePolicy: &ignore,
			MatchConstraints: &admissionv1.MatchResources{MatchPolicy: &equivalent, ResourceRules: []admissionv1.NamedRuleWithOperations{{RuleWithOperations: admissionv1.RuleWithOperations{
				Operations: []admissionv1.OperationType{admissionv1.Create},
				Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"*"}, Resources: []string{"persistentvolumeclaims"}},
			}}}},
			MatchConditions: []admissionv1.MatchCondition{
				{Name: "statefulset-controller", Expression: "request.userInfo.username in [" + strings.Join(q, ", ") + "]"},
				{Name: "retained", Expression: "!has(object.metadata.ownerReferences) || size(object.metadata.ownerReferences) == 0"},
			},
			ReinvocationPolicy: admissionv1.NeverReinvocationPolicy,
			Mutations: []admissionv1.Mutation{{
				PatchType: admissionv1.PatchTypeApplyConfiguration,
				ApplyConfiguration: &admissionv1.ApplyConfiguration{
					Expression: `Object{metadata: Object.metadata{labels: {"` + GuardedLabel + `": "` + GuardedMark + `"}}}`,
				},
			}},
		},
	}
	p.Annotations = map[string]string{SpecAnnotation: digest(p.Spec)}
	return p
}

// MarkerBinding puts the marker in force everywhere.
func MarkerBinding() *admissionv1.MutatingAdmissionPolicyBinding {
	return &admissionv1.MutatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: MarkerBindingGVK.GroupVersion().String(), Kind: MarkerBindingGVK.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: Name, Labels: labels(), Finalizers: []string{Finalizer}},
		Spec:       admissionv1.MutatingAdmissionPolicyBindingSpec{PolicyName: Name},
	}
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
func digest(spec any) string {
	b, err := json.Marshal(spec)
	if err != nil {
		panic(fmt.Sprintf("guard: encoding the policy: %v", err)) // a struct of strings always encodes
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:6])
}

// Objects returns the policy, its binding, the marker and its binding, in
// the order they are applied, as unstructured objects without server-set
// fields.
func Objects() ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, o := range []runtime.Object{Policy(), Binding(), Marker(), MarkerBinding()} {
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
