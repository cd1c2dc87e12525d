package guard

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Coverage is what the guard protects in a cluster and what it cannot,
// read from one LIST per kind (guard install and guard status).
type Coverage struct {
	// Claims, Volumes, CRDs and StatefulSets count the objects whose
	// unacknowledged delete the guard refuses; Namespaces those holding
	// such claims.
	Claims, Volumes, CRDs, StatefulSets, Namespaces int
	// Marked counts the claims of claim templates guard install labelled
	// now (made before the marker was in force).
	Marked int
	// Unguarded names each claim or namespace the guard cannot protect,
	// and why.
	Unguarded []string
	// Waiting names the claims that keep a namespace being deleted
	// Terminating, each with the command that acknowledges it.
	Waiting []string
}

var (
	claimsGVK = schema.GroupVersionKind{Version: "v1", Kind: "PersistentVolumeClaim"}
	volumeGVK = schema.GroupVersionKind{Version: "v1", Kind: "PersistentVolume"}
	nsGVK     = schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
	setGVK    = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}
	crdGVK    = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}
)

// ClaimNaming is the StatefulSet controller's claim-naming rule (live's):
// the claim templates of a StatefulSet, and whether a claim was made from
// one of them.
type ClaimNaming struct {
	Templates    func(sts *unstructured.Unstructured) []string
	FromTemplate func(claim, set string, templates []string) (string, bool)
}

// Survey reads what the guard covers. With mark, the claims made from a
// StatefulSet's claim templates that carry no GuardedLabel (made before the
// marker was in force) are labelled, as the marker labels new ones: a merge
// patch of that one label, preconditioned on the claim's UID.
func Survey(ctx context.Context, r Resources, naming ClaimNaming, mark bool) (Coverage, error) {
	s := &survey{ctx: ctx, r: r, naming: naming, mark: mark,
		namespaces: map[string]*unstructured.Unstructured{}, templates: map[string][][2]string{}}
	// Each kind's LIST in turn: a claim's coverage depends on its
	// namespace and on the StatefulSets' claim templates.
	for _, read := range []func() error{s.readNamespaces, s.statefulSets, s.claims, s.volumes} {
		if err := read(); err != nil {
			return s.cov, err
		}
	}
	s.crds()
	return s.cov, nil
}

// survey is one Survey: what it has read so far, and its counts.
type survey struct {
	ctx    context.Context
	r      Resources
	naming ClaimNaming
	mark   bool
	cov    Coverage
	// namespaces by name; templates: namespace → (set, claim template).
	namespaces map[string]*unstructured.Unstructured
	templates  map[string][][2]string
}

// each calls f with every object of one LIST of gvk.
func (s *survey) each(gvk schema.GroupVersionKind, f func(*unstructured.Unstructured)) error {
	c, _, err := s.r.Resource(gvk, "")
	if err != nil {
		return fmt.Errorf("%s: %w", gvk.Kind, err)
	}
	l, err := c.List(s.ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing %ss: %w", gvk.Kind, err)
	}
	for i := range l.Items {
		f(&l.Items[i])
	}
	return nil
}

func (s *survey) readNamespaces() error {
	return s.each(nsGVK, func(ns *unstructured.Unstructured) { s.namespaces[ns.GetName()] = ns })
}

// statefulSets counts the guarded StatefulSets and reads their claim
// templates.
func (s *survey) statefulSets() error {
	return s.each(setGVK, func(set *unstructured.Unstructured) {
		ns := set.GetNamespace()
		if guardedByItself(set) || nsLabel(s.namespaces[ns]) == "true" {
			s.cov.StatefulSets++
		}
		for _, t := range s.naming.Templates(set) {
			s.templates[ns] = append(s.templates[ns], [2]string{set.GetName(), t})
		}
	})
}

// claims counts the guarded claims and their namespaces, labels the claim
// templates' claims made before the marker (with mark), and says which
// claims and namespaces the guard cannot protect.
func (s *survey) claims() error {
	guardedIn := map[string]int{}
	optedOut := map[string]int{}
	err := s.each(claimsGVK, func(c *unstructured.Unstructured) {
		if !s.claim(c) {
			return
		}
		ns := c.GetNamespace()
		s.cov.Claims++
		guardedIn[ns]++
		nsObj := s.namespaces[ns]
		if nsLabel(nsObj) == "false" {
			optedOut[ns]++
		} else if nsPhase(nsObj) == "Terminating" {
			s.cov.Waiting = append(s.cov.Waiting, fmt.Sprintf("kubectl annotate persistentvolumeclaims %s -n %s %s=%s", c.GetName(), ns, AckAnnotation, c.GetUID()))
		}
	})
	if err != nil {
		return err
	}
	s.cov.Namespaces = len(guardedIn)
	for ns, n := range optedOut {
		s.cov.Unguarded = append(s.cov.Unguarded, fmt.Sprintf("Namespace %s: labelled %s=false, so deleting it deletes its %d guarded claims (their own deletes are still refused)", ns, ProtectLabel, n))
	}
	sort.Strings(s.cov.Unguarded)
	return nil
}

// claim says whether the guard protects c, labelling it first when it is
// a claim template's made before the marker (with mark); a claim of a
// template it does not protect is added to Unguarded with why.
func (s *survey) claim(c *unstructured.Unstructured) bool {
	ns := c.GetNamespace()
	fromTemplate := ""
	for _, st := range s.templates[ns] {
		if _, ok := s.naming.FromTemplate(c.GetName(), st[0], []string{st[1]}); ok {
			fromTemplate = st[0]
		}
	}
	owned := slices.ContainsFunc(c.GetOwnerReferences(), func(o metav1.OwnerReference) bool { return o.Kind == "Pod" || o.Kind == "StatefulSet" })
	_, helm := c.GetAnnotations()[ReleaseAnnotation]
	_, marked := c.GetLabels()[GuardedLabel]
	name := "PersistentVolumeClaim " + ns + "/" + c.GetName()
	switch {
	case helm, marked && !owned, nsLabel(s.namespaces[ns]) == "true":
		return true
	case fromTemplate != "" && owned:
		s.cov.Unguarded = append(s.cov.Unguarded, name+": StatefulSet "+fromTemplate+"'s persistentVolumeClaimRetentionPolicy deletes it (an owner reference), and the guard leaves that decision to it")
	case fromTemplate != "" && s.mark:
		if err := markClaim(s.ctx, s.r, c); err != nil {
			s.cov.Unguarded = append(s.cov.Unguarded, name+": made from StatefulSet "+fromTemplate+"'s claim template, but it could not be labelled "+GuardedLabel+": "+err.Error())
			return false
		}
		s.cov.Marked++
		return true
	case fromTemplate != "":
		s.cov.Unguarded = append(s.cov.Unguarded, name+": made from StatefulSet "+fromTemplate+"'s claim template before the guard's marker was in force, and not labelled "+GuardedLabel+" (guard install labels it)")
	}
	return false // no release's
}

// volumes counts the volumes whose delete the guard refuses: a Delete
// reclaim policy, of a release or bound.
func (s *survey) volumes() error {
	return s.each(volumeGVK, func(v *unstructured.Unstructured) {
		policy, _, _ := unstructured.NestedString(v.Object, "spec", "persistentVolumeReclaimPolicy")
		phase, _, _ := unstructured.NestedString(v.Object, "status", "phase")
		if _, helm := v.GetAnnotations()[ReleaseAnnotation]; policy == "Delete" && (helm || phase == "Bound") {
			s.cov.Volumes++
		}
	})
}

// crds counts the guarded CRDs; a cluster that does not let it list them
// counts none.
func (s *survey) crds() {
	_ = s.each(crdGVK, func(crd *unstructured.Unstructured) {
		if guardedByItself(crd) {
			s.cov.CRDs++
		}
	})
}

// guardedByItself: the object carries Helm's release annotation or the mark.
func guardedByItself(obj *unstructured.Unstructured) bool {
	_, helm := obj.GetAnnotations()[ReleaseAnnotation]
	_, marked := obj.GetLabels()[GuardedLabel]
	return helm || marked
}

// nsLabel is a namespace's ProtectLabel, "" without it or the namespace.
func nsLabel(ns *unstructured.Unstructured) string {
	if ns == nil {
		return ""
	}
	return ns.GetLabels()[ProtectLabel]
}

func markClaim(ctx context.Context, r Resources, c *unstructured.Unstructured) error {
	res, _, err := r.Resource(claimsGVK, c.GetNamespace())
	if err != nil {
		return err
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"uid": c.GetUID(), "labels": map[string]string{GuardedLabel: GuardedMark}}})
	if err != nil {
		return err
	}
	_, err = res.Patch(ctx, c.GetName(), types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
	return err
}

// Lines says the coverage as guard install and guard status print it.
func (c Coverage) Lines() []string {
	lines := []string{fmt.Sprintf("protects %d claims in %d namespaces, %d volumes, %d StatefulSets, %d CustomResourceDefinitions", c.Claims, c.Namespaces, c.Volumes, c.StatefulSets, c.CRDs)}
	if c.Marked > 0 {
		lines = append(lines, fmt.Sprintf("labelled %s=%s on %d claims made from claim templates before the guard", GuardedLabel, GuardedMark, c.Marked))
	}
	for _, u := range c.Unguarded {
		lines = append(lines, "cannot protect "+u)
	}
	if len(c.Waiting) > 0 {
		lines = append(lines, fmt.Sprintf("%d guarded claims keep their namespace Terminating until each is acknowledged (then the namespace controller deletes them):", len(c.Waiting)))
		for _, w := range c.Waiting {
			lines = append(lines, "  "+w)
		}
	}
	return lines
}

// nsPhase is ns's phase; "" for a namespace the survey's LIST did not
// hold (made between the namespaces' LIST and the claims').
func nsPhase(ns *unstructured.Unstructured) string {
	if ns == nil {
		return ""
	}
	phase, _, _ := unstructured.NestedString(ns.Object, "status", "phase")
	return phase
}
