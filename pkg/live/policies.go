package live

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/generic"
	"k8s.io/apiserver/pkg/admission/plugin/policy/matching"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/version"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/apis"
)

// ValidatingAdmissionPolicies are evaluated here, client-side, with the API
// server's own admission code (k8s.io/apiserver's validating policy
// dispatcher, matcher and CEL compiler): the same match constraints,
// bindings, params, compiled expressions, cost limits and failure
// policies. What the tool cannot know as the server does (an authorizer's
// answer, a param or namespace it may not read, a conversion to another
// version, fields the server sets during the update) is recorded while
// evaluating, and makes the answer "ask the server".

// PolicyRequest is an UPDATE as the tool's dry-run would send it: the object
// the server would store (derived), the live one, and the options.
type PolicyRequest struct {
	GVR           schema.GroupVersionResource
	Object, Old   *unstructured.Unstructured
	FieldManager  string
	ServerVersion string // v1.37.2
}

// policyLibraryMinor is the minor of the admission library linked in: its
// CEL environment is a 1.N API server's for that N only.
var policyLibraryMinor, _ = apis.ParseMinor(version.DefaultKubeBinaryVersion)

// unpredictable are the object's fields the server sets during the update
// itself, which a derived object does not hold as admission sees them
// (managedFields gains the patch's entry and time; generation moves with a
// spec change), and the macros that would enumerate them among the
// metadata's keys: a policy reading them is asked.
var unpredictable = regexp.MustCompile(`\b(managedFields|generation)\b|\bmetadata\s*\.\s*(all|exists|exists_one|map|filter|size)\b`)

// policies are the cluster's ValidatingAdmissionPolicies and their
// bindings, compiled once per run.
type policies struct {
	hooks []validating.PolicyHook
	// asks maps a policy to why it is always asked (an expression reading
	// a field the server sets during the update).
	asks map[string]string
	// rules are the policies' resource rules, read coarsely: a request
	// none may match needs no evaluation (nor the user, nor a namespace).
	rules []admissionRule

	// compileOnce compiles every hook's policy for the API server's minor.
	compileOnce sync.Once
	compileErr  error

	userOnce sync.Once
	user     user.Info
	userErr  error

	mu sync.Mutex
	// equivalents are the versions of a resource the cluster serves
	// (objectInterfaces), asked of the mapper once.
	equivalents map[schema.GroupVersionResource][]schema.GroupVersionResource
}

// readPolicies LISTs the bindings of vaps and prepares each bound policy
// (compiled for the server's version by PoliciesAdmit).
func (o *Observers) readPolicies(ctx context.Context, vaps []unstructured.Unstructured) (*policies, error) {
	out := &policies{asks: map[string]string{}, equivalents: map[schema.GroupVersionResource][]schema.GroupVersionResource{}}
	if len(vaps) == 0 {
		return out, nil
	}
	mapping, err := o.cluster.Mapper.RESTMapping(schema.GroupKind{Group: admissionGroup, Kind: "ValidatingAdmissionPolicyBinding"})
	if meta.IsNoMatchError(err) {
		return out, nil // no bindings: no policy is evaluated
	}
	if err != nil {
		return nil, fmt.Errorf("ValidatingAdmissionPolicyBinding: %w", err)
	}
	list, err := o.cluster.Dynamic.Resource(mapping.Resource).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", mapping.Resource.Resource, err)
	}
	bindings := map[string][]*admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	for _, item := range list.Items {
		b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, b); err != nil {
			return nil, fmt.Errorf("ValidatingAdmissionPolicyBinding %s: %w", item.GetName(), err)
		}
		bindings[b.Spec.PolicyName] = append(bindings[b.Spec.PolicyName], b)
	}
	for _, item := range vaps {
		p := &admissionregistrationv1.ValidatingAdmissionPolicy{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, p); err != nil {
			return nil, fmt.Errorf("ValidatingAdmissionPolicy %s: %w", item.GetName(), err)
		}
		if len(bindings[p.Name]) == 0 {
			continue // unbound: the server evaluates it for no request
		}
		owner := "ValidatingAdmissionPolicy " + p.Name
		out.rules = append(out.rules, rulesAt(owner, item.Object, "spec", "matchConstraints", "resourceRules")...)
		if expr := policyReads(p, unpredictable); expr != "" {
			out.asks[p.Name] = fmt.Sprintf("%s reads %s, which the server sets during the update", owner, expr)
		}
		hook := validating.PolicyHook{Policy: p, Bindings: bindings[p.Name]} // compiled for the server: PoliciesAdmit
		hook.ParamInformer, hook.ParamScope, hook.ConfigurationError = o.paramSource(ctx, p)
		out.hooks = append(out.hooks, hook)
	}
	return out, nil
}

// policyReads returns the first of p's expressions re matches, "" if none.
func policyReads(p *admissionregistrationv1.ValidatingAdmissionPolicy, re *regexp.Regexp) string {
	var exprs []string
	for _, v := range p.Spec.Validations {
		exprs = append(exprs, v.Expression, v.MessageExpression)
	}
	for _, v := range p.Spec.Variables {
		exprs = append(exprs, v.Expression)
	}
	for _, m := range p.Spec.MatchConditions {
		exprs = append(exprs, m.Expression)
	}
	for _, a := range p.Spec.AuditAnnotations {
		exprs = append(exprs, a.ValueExpression)
	}
	for _, e := range exprs {
		if m := re.FindString(e); m != "" {
			return m
		}
	}
	return ""
}

// celEnvironment is the CEL environment a 1.serverMinor API server
// compiles a stored policy in: the library's own base environment with
// stored expressions for a server of its minor (as kube-apiserver builds
// it); for an older one (1.30, the first with ValidatingAdmissionPolicy
// GA, or later), the base environment at that version with new
// expressions, which holds only the libraries introduced by then, at the
// versions they had then (the base environment's libraries are versioned
// for exactly this). A newer server's libraries are unknown here.
func celEnvironment(serverMinor int) (*environment.EnvSet, environment.Type, error) {
	switch {
	case serverMinor == policyLibraryMinor:
		return environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()), environment.StoredExpressions, nil
	case serverMinor >= 30 && serverMinor < policyLibraryMinor:
		return environment.MustBaseEnvSet(utilversion.MajorMinor(1, uint(serverMinor))), environment.NewExpressions, nil
	}
	return nil, "", fmt.Errorf("an API server of 1.%d compiles CEL for its own minor, which this build (1.%d) does not know", serverMinor, policyLibraryMinor)
}

// compilePolicy compiles p as the API server does (compilePolicy in
// k8s.io/apiserver's plugin/policy/validating, which is not exported): the
// base environment with strict cost, variables composited; env and mode
// from celEnvironment.
func compilePolicy(p *admissionregistrationv1.ValidatingAdmissionPolicy, env *environment.EnvSet, mode environment.Type) validating.Validator {
	hasParam := p.Spec.ParamKind != nil
	optionalVars := cel.OptionalVariableDeclarations{HasParams: hasParam, HasAuthorizer: true}
	expressionOptionalVars := cel.OptionalVariableDeclarations{HasParams: hasParam, HasAuthorizer: false}
	failurePolicy := p.Spec.FailurePolicy
	compiler, err := cel.NewCompositedCompiler(env)
	if err != nil {
		return validating.NewValidator(nil, nil, nil, nil, failurePolicy, err)
	}
	variables := make([]cel.NamedExpressionAccessor, len(p.Spec.Variables))
	for i, v := range p.Spec.Variables {
		variables[i] = &validating.Variable{Name: v.Name, Expression: v.Expression}
	}
	compiler.CompileAndStoreVariables(variables, optionalVars, mode)
	var matcher matchconditions.Matcher
	if len(p.Spec.MatchConditions) > 0 {
		conds := make([]cel.ExpressionAccessor, len(p.Spec.MatchConditions))
		for i := range p.Spec.MatchConditions {
			conds[i] = (*matchconditions.MatchCondition)(&p.Spec.MatchConditions[i])
		}
		matcher = matchconditions.NewMatcher(compiler.CompileCondition(conds, optionalVars, mode), failurePolicy, "policy", "validate", p.Name)
	}
	validations := make([]cel.ExpressionAccessor, len(p.Spec.Validations))
	messages := make([]cel.ExpressionAccessor, len(p.Spec.Validations))
	for i, v := range p.Spec.Validations {
		validations[i] = &validating.ValidationCondition{Expression: v.Expression, Message: v.Message, Reason: v.Reason}
		if v.MessageExpression != "" {
			messages[i] = &validating.MessageExpressionCondition{MessageExpression: v.MessageExpression}
		}
	}
	audits := make([]cel.ExpressionAccessor, len(p.Spec.AuditAnnotations))
	for i, a := range p.Spec.AuditAnnotations {
		audits[i] = &validating.AuditAnnotationCondition{Key: a.Key, ValueExpression: a.ValueExpression}
	}
	return validating.NewValidator(
		compiler.CompileCondition(validations, optionalVars, mode),
		matcher,
		compiler.CompileCondition(audits, optionalVars, mode),
		compiler.CompileCondition(messages, expressionOptionalVars, mode),
		failurePolicy, nil)
}

// PoliciesAdmit returns "" when every ValidatingAdmissionPolicy that sees
// req admits it without a warning, as the server's admission would answer
// the tool's dry-run; otherwise which policy refuses, warns, errs or cannot
// be evaluated here, so the caller asks the server (whose answer then
// carries the policy's own message).
func (o *Observers) PoliciesAdmit(ctx context.Context, req PolicyRequest) string {
	o.once.Do(func() { o.readAdmissionOnce(ctx) })
	if o.admissionErr != nil {
		return "admission configuration unknown: " + o.admissionErr.Error()
	}
	ps := o.policies
	if ps == nil || !slices.ContainsFunc(ps.rules, func(r admissionRule) bool { return r.matches(req.GVR.Group, req.GVR.Resource, "UPDATE") }) {
		return ""
	}
	ps.compileOnce.Do(func() {
		minor, _ := apis.ParseMinor(req.ServerVersion) // 0 when unknown: an error
		env, mode, err := celEnvironment(minor)
		if err != nil {
			ps.compileErr = err
			return
		}
		for i := range ps.hooks {
			ps.hooks[i].Evaluator = compilePolicy(ps.hooks[i].Policy, env, mode)
		}
	})
	if ps.compileErr != nil {
		return "ValidatingAdmissionPolicy: " + ps.compileErr.Error()
	}
	ps.userOnce.Do(func() { ps.user, ps.userErr = o.whoAmI(ctx) })
	if ps.userErr != nil {
		return "ValidatingAdmissionPolicy: request.userInfo unknown: " + ps.userErr.Error()
	}
	return o.dispatch(ctx, ps, req)
}

// evaluation records what the server's dispatcher needed that the tool
// does not know as the server does; any of it makes the answer "ask".
type evaluation struct {
	mu      sync.Mutex
	unknown []string
	// matched are the policies that saw the request; denied, those whose
	// validation failed (refused, warned or audited).
	matched, denied []string
	warnings        []string
}

func (e *evaluation) add(list *[]string, s string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	*list = append(*list, s)
}

func (o *Observers) dispatch(ctx context.Context, ps *policies, req PolicyRequest) string {
	ev := &evaluation{}
	gvk := req.Object.GroupVersionKind()
	opts := &metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: req.FieldManager}
	opts.SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind("UpdateOptions"))
	attrs := admission.NewAttributesRecord(req.Object, req.Old, gvk, req.Object.GetNamespace(), req.Object.GetName(),
		req.GVR, "", admission.Update, opts, true, ps.user)
	hooks := make([]validating.PolicyHook, len(ps.hooks))
	configErrs := map[string]error{}
	for i, h := range ps.hooks {
		h.Evaluator = recordingValidator{Validator: h.Evaluator, ev: ev, policy: h.Policy.Name}
		if p, ok := h.ParamInformer.(*params); ok {
			h.ParamInformer = recordingParams{params: p, ev: ev}
		}
		configErrs[h.Policy.Name] = h.ConfigurationError
		hooks[i] = h
	}
	matcher := recordingMatcher{
		PolicyMatcher: generic.NewPolicyMatcher(matching.NewMatcher(namespaceLister{o: o, ctx: ctx, ev: ev}, nil)),
		ev:            ev, configErrs: configErrs,
	}
	d := validating.NewDispatcher(recordingAuthorizer{ev: ev}, matcher)
	err := d.Dispatch(warning.WithWarningRecorder(ctx, ev), attrs, objectInterfaces{o: o, ev: ev}, hooks)
	// The reasons name policies, never their messages: a message may quote
	// the object (a Secret's value), and reasons reach --debug.
	switch {
	case len(ev.unknown) > 0:
		return "ValidatingAdmissionPolicy: " + ev.unknown[0]
	case len(ev.denied) > 0:
		return "ValidatingAdmissionPolicy " + ev.denied[0] + " refuses or warns"
	case err != nil || len(ev.warnings) > 0:
		// Refused or warned by no validation (a binding's configuration).
		return "ValidatingAdmissionPolicy: the server refuses or warns"
	}
	for _, name := range ev.matched {
		if why := ps.asks[name]; why != "" {
			return why
		}
	}
	return ""
}

// AddWarning implements warning.Recorder.
func (e *evaluation) AddWarning(_, text string) { e.add(&e.warnings, text) }

// recordingValidator notes which policies saw the request and asks about
// any evaluation error, even one a failurePolicy Ignore lets through: the
// error may be the tool's (an object not quite as the server holds it).
type recordingValidator struct {
	validating.Validator
	ev     *evaluation
	policy string
}

func (v recordingValidator) Validate(ctx context.Context, res schema.GroupVersionResource, attr *admission.VersionedAttributes, params runtime.Object, ns *corev1.Namespace, budget int64, authz authorizer.UnconditionalAuthorizer) validating.ValidateResult {
	v.ev.add(&v.ev.matched, v.policy)
	r := v.Validator.Validate(ctx, res, attr, params, ns, budget, authz)
	for _, d := range r.Decisions {
		switch {
		case d.Evaluation == validating.EvalError:
			v.ev.add(&v.ev.unknown, v.policy+": an expression errs (cost, type, missing field)")
		case d.Action == validating.ActionDeny:
			v.ev.add(&v.ev.denied, v.policy)
		}
	}
	for _, a := range r.AuditAnnotations {
		if a.Action == validating.AuditAnnotationActionError {
			v.ev.add(&v.ev.unknown, v.policy+": an audit annotation errs")
		}
	}
	return r
}

// recordingMatcher asks about a policy that sees the request but whose
// configuration the tool could not read as the server does (a param kind
// it cannot map): the server's failurePolicy Ignore would skip it only if
// the server could not map it either.
type recordingMatcher struct {
	generic.PolicyMatcher
	ev         *evaluation
	configErrs map[string]error
}

func (m recordingMatcher) DefinitionMatches(a admission.Attributes, o admission.ObjectInterfaces, def generic.PolicyAccessor) (bool, schema.GroupVersionResource, schema.GroupVersionKind, error) {
	ok, gvr, gvk, err := m.PolicyMatcher.DefinitionMatches(a, o, def)
	if ok && err == nil && m.configErrs[def.GetName()] != nil {
		m.ev.add(&m.ev.unknown, def.GetName()+": configuration unreadable (param kind)")
	}
	return ok, gvr, gvk, err
}

// recordingParams asks about a binding whose params could not be listed.
type recordingParams struct {
	*params
	ev *evaluation
}

func (r recordingParams) Lister() cache.GenericLister {
	l := r.params.Lister()
	if _, ok := l.(unreadableParams); ok {
		r.ev.add(&r.ev.unknown, "params "+r.gvr.Resource+" unreadable")
	}
	return l
}

// recordingAuthorizer stands for the server's authorizer, whose answer the
// tool does not have: a policy that asks it is asked.
type recordingAuthorizer struct{ ev *evaluation }

func (a recordingAuthorizer) Authorize(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
	a.ev.add(&a.ev.unknown, "an expression asks the authorizer")
	return authorizer.DecisionNoOpinion, "", errors.New("the authorizer's answer is the server's")
}

// whoAmI is the user the server authenticates the tool's requests as, from
// one SelfSubjectReview (a review stores nothing; sent as a dry-run, as
// plan mode sends every write).
func (o *Observers) whoAmI(ctx context.Context) (user.Info, error) {
	review := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}}
	got, err := o.cluster.Dynamic.Resource(selfSubjectReviewsGVR).Create(ctx, review, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		return nil, fmt.Errorf("SelfSubjectReview: %w", err)
	}
	var u struct {
		Username string              `json:"username"`
		UID      string              `json:"uid"`
		Groups   []string            `json:"groups"`
		Extra    map[string][]string `json:"extra"`
	}
	info, _, _ := unstructured.NestedMap(got.Object, "status", "userInfo")
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(info, &u); err != nil {
		return nil, fmt.Errorf("SelfSubjectReview: %w", err)
	}
	return &user.DefaultInfo{Name: u.Username, UID: u.UID, Groups: u.Groups, Extra: u.Extra}, nil
}

var selfSubjectReviewsGVR = schema.GroupVersionResource{Group: "authentication.k8s.io", Version: "v1", Resource: "selfsubjectreviews"}

// namespaceLister serves the matcher's and namespaceObject's namespaces
// from the observers' per-run GETs. A namespace it cannot read is recorded
// and answered with an error that is not NotFound (which would send the
// matcher to a client it does not have).
type namespaceLister struct {
	o   *Observers
	ctx context.Context
	ev  *evaluation
}

func (l namespaceLister) Get(name string) (*corev1.Namespace, error) {
	ns, err := l.o.typedNamespace(l.ctx, name)
	if err == nil {
		return ns, nil // shared: admission only reads it
	}
	l.ev.add(&l.ev.unknown, "namespace "+name+" unreadable")
	return nil, fmt.Errorf("namespace %s unreadable: %v", name, err) // not %w: not NotFound
}

func (l namespaceLister) List(labels.Selector) ([]*corev1.Namespace, error) {
	return nil, errors.New("namespaces are not listed")
}

var _ corelisters.NamespaceLister = namespaceLister{}

// objectInterfaces give the matcher the cluster's versions of a resource
// (matchPolicy Equivalent); converting an object to another version is
// the server's, so a policy matching only another version is asked.
type objectInterfaces struct {
	o  *Observers
	ev *evaluation
}

func (i objectInterfaces) GetObjectCreater() runtime.ObjectCreater { return i }
func (i objectInterfaces) GetObjectTyper() runtime.ObjectTyper     { return nil }
func (i objectInterfaces) GetObjectDefaulter() runtime.ObjectDefaulter {
	return nil
}
func (i objectInterfaces) GetObjectConvertor() runtime.ObjectConvertor { return nil }
func (i objectInterfaces) GetEquivalentResourceMapper() runtime.EquivalentResourceMapper {
	return i
}

// New implements runtime.ObjectCreater: called only to convert.
func (i objectInterfaces) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	i.ev.add(&i.ev.unknown, "a policy matches the object as "+gvk.String())
	return nil, fmt.Errorf("no conversion to %s here", gvk)
}

// EquivalentResourcesFor implements runtime.EquivalentResourceMapper: the
// versions the cluster serves of the resource.
func (i objectInterfaces) EquivalentResourcesFor(res schema.GroupVersionResource, sub string) []schema.GroupVersionResource {
	ps := i.o.policies
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if got, ok := ps.equivalents[res]; ok {
		return got
	}
	all, err := i.o.cluster.Mapper.ResourcesFor(schema.GroupVersionResource{Group: res.Group, Resource: res.Resource})
	if err != nil {
		all = []schema.GroupVersionResource{res}
	}
	// An empty group asks the mapper for every group's resource of that name.
	all = slices.DeleteFunc(all, func(r schema.GroupVersionResource) bool { return r.Group != res.Group })
	ps.equivalents[res] = all
	return all
}

// KindFor implements runtime.EquivalentResourceMapper.
func (i objectInterfaces) KindFor(res schema.GroupVersionResource, sub string) schema.GroupVersionKind {
	gvk, err := i.o.cluster.Mapper.KindFor(res)
	if err != nil {
		return schema.GroupVersionKind{}
	}
	return gvk
}

// paramSource is what the dispatcher reads a policy's params from: one
// LIST of the param kind in all namespaces, made when a binding first needs
// it. A param kind the cluster does not serve is the server's configuration
// error too.
func (o *Observers) paramSource(ctx context.Context, p *admissionregistrationv1.ValidatingAdmissionPolicy) (informers.GenericInformer, meta.RESTScope, error) {
	if p.Spec.ParamKind == nil {
		return nil, nil, nil
	}
	gv, err := schema.ParseGroupVersion(p.Spec.ParamKind.APIVersion)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to parse paramKind APIVersion: %w", err)
	}
	gvk := gv.WithKind(p.Spec.ParamKind.Kind)
	mapping, err := o.cluster.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to find resource referenced by paramKind: '%v'", gvk)
	}
	return &params{o: o, ctx: ctx, gvr: mapping.Resource}, mapping.Scope, nil
}

// params is a GenericInformer over one LIST, made once.
type params struct {
	o    *Observers
	ctx  context.Context
	gvr  schema.GroupVersionResource
	once sync.Once
	list cache.GenericLister
	err  error
}

func (p *params) Informer() cache.SharedIndexInformer { return synced{} }

func (p *params) Lister() cache.GenericLister {
	p.once.Do(func() {
		got, err := p.o.cluster.Dynamic.Resource(p.gvr).List(p.ctx, metav1.ListOptions{})
		if err != nil {
			p.err = err
			return
		}
		idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		for i := range got.Items {
			if err := idx.Add(&got.Items[i]); err != nil {
				p.err = err
				return
			}
		}
		p.list = cache.NewGenericLister(idx, p.gvr.GroupResource())
	})
	if p.err != nil {
		return unreadableParams{gr: p.gvr.GroupResource()}
	}
	return p.list
}

// unreadableParams stands for params that could not be listed. The
// evaluation is asked whatever it answers (recordingParams records it), so
// it answers as if there were none: an error would only reach the
// dispatcher's error log, once per object.
type unreadableParams struct{ gr schema.GroupResource }

func (u unreadableParams) List(labels.Selector) ([]runtime.Object, error) { return nil, nil }
func (u unreadableParams) Get(name string) (runtime.Object, error) {
	return nil, apierrors.NewNotFound(u.gr, name)
}
func (u unreadableParams) ByNamespace(string) cache.GenericNamespaceLister {
	return u
}

// synced is an informer that has synced: its lister is one LIST.
type synced struct{ cache.SharedIndexInformer }

func (synced) HasSynced() bool { return true }
