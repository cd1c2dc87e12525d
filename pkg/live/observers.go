package live

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	psapolicy "k8s.io/pod-security-admission/policy"
)

// Observers are what, besides the API server's own code, may see or refuse
// an update: admission webhooks and admission policies, and the
// authorizer. Each is read once per run (one LIST per kind of admission
// configuration, one SelfSubjectRulesReview and one GET of the namespace
// per namespace) and cached; a failed read answers "may observe", so the
// caller asks the server.
type Observers struct {
	cluster *Cluster

	once      sync.Once
	admission []admissionRule
	// policies are the ValidatingAdmissionPolicies, evaluated here
	// (policies.go); admission holds the webhooks' and mutating policies'
	// rules.
	policies *policies
	// admissionErr is why the admission configuration is unknown (a LIST
	// forbidden by RBAC, say); nil when it was read.
	admissionErr error

	mu    sync.Mutex
	rules map[string]*rulesReview

	// namespaces are the namespaces PodSecurity and the policies read,
	// one GET each (podsecurity.go).
	namespaces map[string]*namespaceRead
	evalOnce   sync.Once
	eval       psapolicy.Evaluator
}

// admissionKinds are the admission configurations that can see a request,
// with where their rules are: webhooks' rules, or a policy's match
// constraints; evaluated: the policies evaluated here, not by their rules
// alone. Kinds the cluster does not serve have no objects.
var admissionKinds = []struct {
	kind      string
	webhooks  bool
	evaluated bool
	rulesPath []string
}{
	{kind: "ValidatingWebhookConfiguration", webhooks: true},
	{kind: "MutatingWebhookConfiguration", webhooks: true},
	{kind: "ValidatingAdmissionPolicy", evaluated: true},
	// A mutating policy's patch would have to be applied as the server
	// applies it, and every validating policy and webhook after it: asked.
	{kind: "MutatingAdmissionPolicy", rulesPath: []string{"spec", "matchConstraints", "resourceRules"}},
}

const admissionGroup = "admissionregistration.k8s.io"

// admissionRule is one rule of a webhook or a policy: who (Owner) sees
// which operations on which resources. Versions and selectors are not kept:
// a webhook with matchPolicy Equivalent sees every version, and a selector
// only narrows, so leaving them out can only over-match.
type admissionRule struct {
	Owner      string
	Operations []string
	APIGroups  []string
	Resources  []string
}

// matches reports whether the rule may see op on resource of group.
func (r admissionRule) matches(group, resource, op string) bool {
	return matchAny(r.Operations, op) && matchAny(r.APIGroups, group) &&
		slices.ContainsFunc(r.Resources, func(res string) bool {
			main, _, _ := strings.Cut(res, "/")
			return main == "*" || main == resource
		})
}

func matchAny(list []string, v string) bool {
	return slices.Contains(list, "*") || slices.Contains(list, v)
}

// NewObservers returns the observers of cluster's requests, read lazily.
func NewObservers(c *Cluster) *Observers { return &Observers{cluster: c} }

// AdmissionSees returns who among the cluster's admission webhooks and
// mutating policies may see op (UPDATE, CREATE) on resource; "" when none
// can (ValidatingAdmissionPolicies are PoliciesAdmit's). When the
// configuration cannot be read, it says so.
func (o *Observers) AdmissionSees(ctx context.Context, gvr schema.GroupVersionResource, op string) string {
	o.once.Do(func() { o.readAdmissionOnce(ctx) })
	if o.admissionErr != nil {
		return "admission configuration unknown: " + o.admissionErr.Error()
	}
	for _, r := range o.admission {
		if r.matches(gvr.Group, gvr.Resource, op) {
			return r.Owner
		}
	}
	return ""
}

// readAdmissionOnce reads the admission configuration, once per run.
func (o *Observers) readAdmissionOnce(ctx context.Context) {
	var vaps []unstructured.Unstructured
	o.admission, vaps, o.admissionErr = o.readAdmission(ctx)
	if o.admissionErr == nil {
		o.policies, o.admissionErr = o.readPolicies(ctx, vaps)
	}
}

// readAdmission LISTs every admission configuration the cluster serves:
// the rules of those seen by their rules, the objects of those evaluated.
func (o *Observers) readAdmission(ctx context.Context) ([]admissionRule, []unstructured.Unstructured, error) {
	var out []admissionRule
	var evaluated []unstructured.Unstructured
	for _, k := range admissionKinds {
		mapping, err := o.cluster.Mapper.RESTMapping(schema.GroupKind{Group: admissionGroup, Kind: k.kind})
		if meta.IsNoMatchError(err) {
			continue // not served: none exists
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", k.kind, err)
		}
		list, err := o.cluster.Dynamic.Resource(mapping.Resource).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, nil, fmt.Errorf("listing %s: %w", mapping.Resource.Resource, err)
		}
		if k.evaluated {
			evaluated = append(evaluated, list.Items...)
			continue
		}
		for _, item := range list.Items {
			owner := k.kind + " " + item.GetName()
			if !k.webhooks {
				out = append(out, rulesAt(owner, item.Object, k.rulesPath...)...)
				continue
			}
			hooks, _, _ := unstructured.NestedSlice(item.Object, "webhooks")
			for _, h := range hooks {
				if hm, ok := h.(map[string]interface{}); ok {
					out = append(out, rulesAt(owner, hm, "rules")...)
				}
			}
		}
	}
	return out, evaluated, nil
}

// rulesAt reads the rules at path of obj. Without rules there, a webhook or
// a policy matches no request, as the API server matches them; rules it
// cannot read match everything: over-matching only costs a dry-run.
func rulesAt(owner string, obj map[string]interface{}, path ...string) []admissionRule {
	all := admissionRule{Owner: owner, Operations: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}
	rules, _, err := unstructured.NestedSlice(obj, path...)
	if err != nil {
		return []admissionRule{all}
	}
	var out []admissionRule
	for _, r := range rules {
		rm, ok := r.(map[string]interface{})
		if !ok {
			return []admissionRule{all}
		}
		ops, _, _ := unstructured.NestedStringSlice(rm, "operations")
		groups, _, _ := unstructured.NestedStringSlice(rm, "apiGroups")
		resources, _, _ := unstructured.NestedStringSlice(rm, "resources")
		out = append(out, admissionRule{Owner: owner, Operations: ops, APIGroups: groups, Resources: resources})
	}
	return out
}

// rulesReview is the answer of one SelfSubjectRulesReview.
type rulesReview struct {
	once  sync.Once
	rules []resourceRule
	// incomplete: an authorizer could not list its rules (a webhook
	// authorizer, say): it may allow or deny what rules do not say.
	incomplete bool
	err        error
}

type resourceRule struct {
	Verbs, APIGroups, Resources, ResourceNames []string
}

var rulesReviewGVR = schema.GroupVersionResource{Group: "authorization.k8s.io", Version: "v1", Resource: "selfsubjectrulesreviews"}

// entry is the read of key in reads, made empty on first use; the read
// itself runs once (its sync.Once), however many objects ask for it.
func entry[T any](mu *sync.Mutex, reads *map[string]*T, key string) *T {
	mu.Lock()
	defer mu.Unlock()
	if *reads == nil {
		*reads = map[string]*T{}
	}
	e := (*reads)[key]
	if e == nil {
		e = new(T)
		(*reads)[key] = e
	}
	return e
}

// MayPatch reports whether the authorizer certainly lets this user patch
// name (a resource of gvr) in namespace, from the namespace's
// SelfSubjectRulesReview (sent once per namespace, with dryRun=All: plan
// mode sends no other write; the review stores nothing anyway). false when
// unsure: the review failed or is incomplete, or no rule grants it.
func (o *Observers) MayPatch(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) bool {
	rv := entry(&o.mu, &o.rules, namespace)
	rv.once.Do(func() { rv.rules, rv.incomplete, rv.err = o.reviewRules(ctx, namespace) })
	if rv.err != nil || rv.incomplete {
		// Incomplete: another authorizer (a webhook) answers too, and may
		// deny what a listed rule allows.
		return false
	}
	return slices.ContainsFunc(rv.rules, func(r resourceRule) bool {
		return matchAny(r.Verbs, "patch") && matchAny(r.APIGroups, gvr.Group) && matchAny(r.Resources, gvr.Resource) &&
			(len(r.ResourceNames) == 0 || slices.Contains(r.ResourceNames, name))
	})
}

func (o *Observers) reviewRules(ctx context.Context, namespace string) ([]resourceRule, bool, error) {
	review := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
		"spec": map[string]interface{}{"namespace": namespace},
	}}
	got, err := o.cluster.Dynamic.Resource(rulesReviewGVR).Create(ctx, review, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		return nil, false, err
	}
	incomplete, _, _ := unstructured.NestedBool(got.Object, "status", "incomplete")
	items, _, _ := unstructured.NestedSlice(got.Object, "status", "resourceRules")
	var out []resourceRule
	for _, it := range items {
		m, ok := it.(map[string]interface{})
		if !ok {
			continue
		}
		var r resourceRule
		r.Verbs, _, _ = unstructured.NestedStringSlice(m, "verbs")
		r.APIGroups, _, _ = unstructured.NestedStringSlice(m, "apiGroups")
		r.Resources, _, _ = unstructured.NestedStringSlice(m, "resources")
		r.ResourceNames, _, _ = unstructured.NestedStringSlice(m, "resourceNames")
		out = append(out, r)
	}
	return out, incomplete, nil
}
