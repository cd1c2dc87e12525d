package classify

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// CRDFinding is one consequence of replacing a live CustomResourceDefinition
// by a new form of it.
type CRDFinding struct {
	// Path is the CRD field it concerns, versions named by name:
	// "spec.versions[v1alpha1].served".
	Path    string
	Message string
	// Destructive findings make existing custom resources unreadable, lose
	// their data, or need the CRD (and every resource of it) deleted.
	Destructive bool
	// Before and After are the live and new values at Path ("" when absent).
	Before, After string
	// field is the custom resource's field a schema finding concerns.
	field string
}

// CRD compares a live CustomResourceDefinition with the new form of it and
// returns what the change does to the custom resources it serves, in path
// order. Every difference of the specs is a finding (a CRD of the chart's
// crds/ that differs from the cluster's in anything is a change to apply);
// destructive are those that make existing resources unreadable, lose their
// data or may refuse them: a served version removed or unserved, the scope,
// a property removed, a type narrowed, a new required field, a stricter
// validation (validationFindings). Descriptions are collapsed into one
// finding.
func CRD(live, next *apiextv1.CustomResourceDefinition) []CRDFinding {
	var out []CRDFinding
	if live.Spec.Scope != next.Spec.Scope {
		out = append(out, CRDFinding{Path: "spec.scope", Destructive: true, Before: string(live.Spec.Scope), After: string(next.Spec.Scope),
			Message: fmt.Sprintf("scope changes from %s to %s: the scope of a CRD is immutable, so the API server refuses the change; it takes deleting the CRD, which deletes every custom resource of it", live.Spec.Scope, next.Spec.Scope)})
	}
	stored := live.Status.StoredVersions
	liveStorage, nextStorage := storageVersion(live), storageVersion(next)
	for _, lv := range live.Spec.Versions {
		path := "spec.versions[" + lv.Name + "]"
		nv := findVersion(next, lv.Name)
		switch {
		case nv == nil && slices.Contains(stored, lv.Name):
			out = append(out, CRDFinding{Path: path, Destructive: true, Before: "present",
				Message: fmt.Sprintf("version %s removed while objects are stored in it (status.storedVersions %v): the API server refuses the change until every object is migrated to another version and %s is dropped from status.storedVersions", lv.Name, stored, lv.Name)})
		case nv == nil && lv.Served:
			out = append(out, CRDFinding{Path: path, Destructive: true, Before: "present",
				Message: fmt.Sprintf("served version %s removed: clients, controllers and manifests using apiVersion %s/%s fail", lv.Name, live.Spec.Group, lv.Name)})
		case nv == nil:
			out = append(out, CRDFinding{Path: path, Before: "present", Message: fmt.Sprintf("version %s (not served) removed", lv.Name)})
		default:
			if lv.Served && !nv.Served {
				out = append(out, CRDFinding{Path: path + ".served", Destructive: true, Before: "true", After: "false",
					Message: fmt.Sprintf("version %s no longer served: clients, controllers and manifests using apiVersion %s/%s fail", lv.Name, live.Spec.Group, lv.Name)})
			}
			if !lv.Served && nv.Served {
				out = append(out, CRDFinding{Path: path + ".served", Before: "false", After: "true", Message: fmt.Sprintf("version %s served again", lv.Name)})
			}
			out = append(out, schemaFindings(path+".schema.openAPIV3Schema", "", openAPI(lv), openAPI(*nv))...)
		}
	}
	for _, nv := range next.Spec.Versions {
		if findVersion(live, nv.Name) == nil {
			served := "not served"
			if nv.Served {
				served = "served"
			}
			out = append(out, CRDFinding{Path: "spec.versions[" + nv.Name + "]", After: "present", Message: fmt.Sprintf("adds version %s (%s)", nv.Name, served)})
		}
	}
	if liveStorage != nextStorage && liveStorage != "" && nextStorage != "" {
		out = append(out, CRDFinding{Path: "spec.versions[" + nextStorage + "].storage", Before: liveStorage, After: nextStorage,
			Message: fmt.Sprintf("storage version changes from %s to %s: new writes are stored as %s; existing objects stay stored as %s until rewritten, so %s must stay in the CRD until they are migrated", liveStorage, nextStorage, nextStorage, liveStorage, liveStorage)})
	}
	out = append(collapseDescriptions(out), specFindings(live, next)...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// collapseDescriptions replaces the findings of changed descriptions by one,
// at the first of them, naming the fields: a newer operator's CRDs reword
// many, and none changes what the server accepts.
func collapseDescriptions(fs []CRDFinding) []CRDFinding {
	var out, descs []CRDFinding
	for _, f := range fs {
		if strings.HasSuffix(f.Path, "."+descriptionKeyword) {
			descs = append(descs, f)
		} else {
			out = append(out, f)
		}
	}
	if len(descs) == 0 {
		return out
	}
	sort.SliceStable(descs, func(i, j int) bool { return descs[i].Path < descs[j].Path })
	var fields []string
	for _, f := range descs {
		version := strings.TrimPrefix(f.Path, "spec.versions[")
		version = version[:max(strings.Index(version, "]"), 0)]
		fields = append(fields, f.field+" in "+version)
	}
	if len(fields) > 5 {
		fields = append(fields[:5:5], fmt.Sprintf("and %d more", len(fields)-5))
	}
	return append(out, CRDFinding{Path: descs[0].Path,
		Message: fmt.Sprintf("descriptions of %d field(s) differ (%s): not a validation, existing resources stay valid", len(descs), strings.Join(fields, ", "))})
}

// CRDAffectedVersion is the live version whose custom resources a LIST
// counts for the destructive findings: a served one, the storage one first.
func CRDAffectedVersion(live *apiextv1.CustomResourceDefinition) string {
	if v := storageVersion(live); v != "" && findVersion(live, v).Served {
		return v
	}
	for _, v := range live.Spec.Versions {
		if v.Served {
			return v.Name
		}
	}
	return ""
}

func storageVersion(crd *apiextv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

func findVersion(crd *apiextv1.CustomResourceDefinition, name string) *apiextv1.CustomResourceDefinitionVersion {
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Name == name {
			return &crd.Spec.Versions[i]
		}
	}
	return nil
}

func openAPI(v apiextv1.CustomResourceDefinitionVersion) *apiextv1.JSONSchemaProps {
	if v.Schema == nil {
		return nil
	}
	return v.Schema.OpenAPIV3Schema
}

// schemaFindings compares the schema nodes at path (the CRD field) and
// field (the custom resource's field, "" at the root). A node that keeps
// unknown fields (x-kubernetes-preserve-unknown-fields) prunes nothing.
// rootShown names the custom resource itself in messages.
const rootShown = "(the object)"

func schemaFindings(path, field string, live, next *apiextv1.JSONSchemaProps) []CRDFinding {
	if live == nil || next == nil {
		return nil
	}
	shown := field
	if shown == "" {
		shown = rootShown
	}
	var out []CRDFinding
	if narrowed(live.Type, next.Type) {
		out = append(out, CRDFinding{Path: path + ".type", Destructive: true, Before: live.Type, After: next.Type,
			Message: fmt.Sprintf("field %s narrows from type %s to %s: existing values of the old type fail validation, and the resources holding them are refused on their next update", shown, orAny(live.Type), next.Type)})
	}
	preserves := func(s *apiextv1.JSONSchemaProps) bool {
		return s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields
	}
	switch {
	case preserves(live) && !preserves(next) && len(next.Properties) > 0:
		out = append(out, CRDFinding{Path: path + ".x-kubernetes-preserve-unknown-fields", Destructive: true, Before: "true", After: "false",
			Message: fmt.Sprintf("field %s no longer keeps unknown fields: the API server prunes every field under it that the schema does not declare, dropping its value from existing resources", shown)})
	case preserves(live) != preserves(next):
		out = append(out, CRDFinding{Path: path + ".x-kubernetes-preserve-unknown-fields", Before: fmt.Sprint(preserves(live)), After: fmt.Sprint(preserves(next)),
			Message: fmt.Sprintf("field %s: x-kubernetes-preserve-unknown-fields %t → %t; no declared field is dropped", shown, preserves(live), preserves(next))})
	}
	for _, name := range sortedKeys(live.Properties) {
		lp := live.Properties[name]
		sub := joinKey(field, name)
		np, ok := next.Properties[name]
		if !ok {
			if !preserves(next) {
				out = append(out, CRDFinding{Path: path + ".properties[" + name + "]", Destructive: true, Before: "present",
					Message: fmt.Sprintf("field %s removed from the schema: the API server prunes it, so its value disappears from existing resources and is lost on their next write", sub)})
			}
			continue
		}
		out = append(out, schemaFindings(path+".properties["+name+"]", sub, &lp, &np)...)
	}
	for _, name := range sortedKeys(next.Properties) {
		if _, ok := live.Properties[name]; !ok && !preserves(live) {
			out = append(out, CRDFinding{Path: path + ".properties[" + name + "]", After: "present",
				Message: fmt.Sprintf("field %s added to the schema: the cluster's CRD lacks it, so the API server prunes it from custom resources until this CRD is applied", joinKey(field, name))})
		}
	}
	for _, name := range next.Required {
		if slices.Contains(live.Required, name) {
			continue
		}
		if p, ok := next.Properties[name]; ok && p.Default != nil {
			continue // defaulted on read: existing resources get it
		}
		out = append(out, CRDFinding{Path: path + ".required", Destructive: true, After: name,
			Message: fmt.Sprintf("field %s becomes required (no default): existing resources without it are refused on their next update", joinKey(field, name))})
	}
	for _, f := range validationFindings(path, shown, live, next) {
		f.field = shown
		out = append(out, f)
	}
	if live.Items != nil && next.Items != nil && live.Items.Schema != nil && next.Items.Schema != nil {
		out = append(out, schemaFindings(path+".items", field+"[]", live.Items.Schema, next.Items.Schema)...)
	}
	if live.AdditionalProperties != nil && next.AdditionalProperties != nil && live.AdditionalProperties.Schema != nil && next.AdditionalProperties.Schema != nil {
		out = append(out, schemaFindings(path+".additionalProperties", field+"[*]", live.AdditionalProperties.Schema, next.AdditionalProperties.Schema)...)
	}
	return out
}

// narrowed reports whether a value valid for type from can be invalid for
// type to: any type to a typed one, or a change of type other than integer
// to number.
func narrowed(from, to string) bool {
	switch {
	case from == to, to == "", from == "integer" && to == "number":
		return false
	}
	return true
}

func orAny(t string) string {
	if t == "" {
		return "any"
	}
	return t
}

func sortedKeys(m map[string]apiextv1.JSONSchemaProps) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
