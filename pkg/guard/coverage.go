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
	var cov Coverage
	list := func(gvk schema.GroupVersionKind) ([]unstructured.Unstructured, error) {
		c, _, err := r.Resource(gvk, "")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", gvk.Kind, err)
		}
		l, err := c.List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("listing %ss: %w", gvk.Kind, err)
		}
		return l.Items, nil
	}
	namespaces, err := list(nsGVK)
	if err != nil {
		return cov, err
	}
	nsByName := map[string]*unstructured.Unstructured{}
	for i := range namespaces {
		nsByName[namespaces[i].GetName()] = &namespaces[i]
	}
	sets, err := list(setGVK)
	if err != nil {
		return cov, err
	}
	templates := map[string][][2]string{} // namespace → (set, template)
	for i := range sets {
		s := &sets[i]
		if guardedByItself(s) || nsLabel(nsByName[s.GetNamespace()]) == "true" {
			cov.StatefulSets++
		}
		for _, t := range naming.Templates(s) {
			templates[s.GetNamespace()] = append(templates[s.GetNamespace()], [2]string{s.GetName(), t})
		}
	}
	claims, err := list(claimsGVK)
	if err != nil {
		return cov, err
	}
	guardedIn := map[string]int{}
	optedOut := map[string]int{}
	for i := range claims {
		c := &claims[i]
		ns := c.GetNamespace()
		fromTemplate := ""
		for _, st := range templates[ns] {
			if _, ok := naming.FromTemplate(c.GetName(), st[0], []string{st[1]}); ok {
				fromTemplate = st[0]
			}
		}
		owned := slices.ContainsFunc(c.GetOwnerReferences(), func(o metav1.OwnerReference) bool { return o.Kind == "Pod" || o.Kind == "StatefulSet" })
		_, helm := c.GetAnnotations()[ReleaseAnnotation]
		_, marked := c.GetLabels()[GuardedLabel]
		name := "PersistentVolumeClaim " + ns + "/" + c.GetName()
		switch {
		case helm, marked && !owned, nsLabel(nsByName[ns]) == "true":
		case fromTemplate != "" && owned:
			cov.Unguarded = append(cov.Unguarded, name+": StatefulSet "+fromTemplate+"'s persistentVolumeClaimRetentionPolicy deletes it (an owner reference), and the guard leaves that decision to it")
			continue
		case fromTemplate != "" && mark:
			if err := markClaim(ctx, r, c); err != nil {
				cov.Unguarded = append(cov.Unguarded, name+": made from StatefulSet "+fromTemplate+"'s claim template, but it could not be labelled "+GuardedLabel+": "+err.Error())
				continue
			}
			cov.Marked++
		case fromTemplate != "":
			cov.Unguarded = append(cov.Unguarded, name+": made from StatefulSet "+fromTemplate+"'s claim template before the guard's marker was in force, and not labelled "+GuardedLabel+" (guard install labels it)")
			continue
		default:
			continue // no release's
		}
		cov.Claims++
		guardedIn[ns]++
		nsObj := nsByName[ns]
		if nsLabel(nsObj) == "false" {
			optedOut[ns]++
		} else if phase, _, _ := unstructured.NestedString(nsObj.Object, "status", "phase"); nsObj != nil && phase == "Terminating" {
			cov.Waiting = append(cov.Waiting, fmt.Sprintf("kubectl annotate persistentvolumeclaims %s -n %s %s=%s", c.GetName(), ns, AckAnnotation, c.GetUID()))
		}
	}
	cov.Namespaces = len(guardedIn)
	for ns, n := range optedOut {
		cov.Unguarded = append(cov.Unguarded, fmt.Sprintf("Namespace %s: labelled %s=false, so deleting it deletes its %d guarded claims (their own deletes are still refused)", ns, ProtectLabel, n))
	}
	sort.Strings(cov.Unguarded)
	volumes, err := list(volumeGVK)
	if err != nil {
		return cov, err
	}
	for i := range volumes {
		v := &volumes[i]
		policy, _, _ := unstructured.NestedString(v.Object, "spec", "persistentVolumeReclaimPolicy")
		phase, _, _ := unstructured.NestedString(v.Object, "status", "phase")
		if _, helm := v.GetAnnotations()[ReleaseAnnotation]; policy == "Delete" && (helm || phase == "Bound") {
			cov.Volumes++
		}
	}
	if crds, err := list(crdGVK); err == nil {
		for i := range crds {
			if guardedByItself(&crds[i]) {
				cov.CRDs++
			}
		}
	}
	return cov, nil
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
