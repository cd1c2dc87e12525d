package classify

import (
	"strings"
	"testing"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// widgetCRD is a CRD with versions v1alpha1 (served) and v1 (served,
// storage), both with spec.size (integer) and spec.color (string).
const widgetCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1alpha1
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
              color: {type: string}
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
              color: {type: string}
              tags: {type: array, items: {type: string}}
status: {storedVersions: [v1]}
`

func crd(t *testing.T, edit func(c *apiextv1.CustomResourceDefinition)) *apiextv1.CustomResourceDefinition {
	t.Helper()
	var c apiextv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict([]byte(widgetCRD), &c); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(&c)
	}
	return &c
}

// spec returns version i's spec schema.
func spec(c *apiextv1.CustomResourceDefinition, i int) *apiextv1.JSONSchemaProps {
	s := c.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["spec"]
	return &s
}

func setSpec(c *apiextv1.CustomResourceDefinition, i int, s *apiextv1.JSONSchemaProps) {
	c.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["spec"] = *s
}

func TestCRD(t *testing.T) {
	tests := []struct {
		name string
		edit func(c *apiextv1.CustomResourceDefinition) // on the new CRD
		// want lists "path|destructive|message part" for each finding, in order.
		want []string
	}{
		{name: "unchanged"},
		// issue 26: any difference is a change to apply; these do not narrow.
		{name: "printer columns and descriptions are reported, not destructive", edit: func(c *apiextv1.CustomResourceDefinition) {
			c.Spec.Versions[1].AdditionalPrinterColumns = []apiextv1.CustomResourceColumnDefinition{{Name: "Size", Type: "integer", JSONPath: ".spec.size"}}
			c.Spec.Versions[1].Schema.OpenAPIV3Schema.Description = "a widget"
		}, want: []string{
			"spec.versions[v1].additionalPrinterColumns|false|spec.versions[v1].additionalPrinterColumns differs from the cluster's (<unset> → [map[jsonPath:.spec.size name:Size type:integer]])",
			"spec.versions[v1].schema.openAPIV3Schema.description|false|descriptions of 1 field(s) differ ((the object) in v1)",
		}},
		{name: "descriptions are collapsed into one finding", edit: func(c *apiextv1.CustomResourceDefinition) {
			s := spec(c, 1)
			s.Description = "the spec"
			s.Properties["size"] = apiextv1.JSONSchemaProps{Type: "integer", Description: "how big"}
			setSpec(c, 1, s)
			s = spec(c, 0)
			s.Properties["color"] = apiextv1.JSONSchemaProps{Type: "string", Description: "which color"}
			setSpec(c, 0, s)
		}, want: []string{"spec.versions[v1].schema.openAPIV3Schema.properties[spec].description|false|descriptions of 3 field(s) differ (spec in v1, spec.size in v1, spec.color in v1alpha1)"}},
		{name: "the server's defaults are no difference", edit: func(c *apiextv1.CustomResourceDefinition) {
			c.Spec.Conversion = &apiextv1.CustomResourceConversion{Strategy: apiextv1.NoneConverter}
			c.Spec.Names.ListKind = "WidgetList"
		}},
		{name: "served version removed", edit: func(c *apiextv1.CustomResourceDefinition) { c.Spec.Versions = c.Spec.Versions[1:] },
			want: []string{"spec.versions[v1alpha1]|true|served version v1alpha1 removed: clients, controllers and manifests using apiVersion example.com/v1alpha1 fail"}},
		{name: "version no longer served", edit: func(c *apiextv1.CustomResourceDefinition) { c.Spec.Versions[0].Served = false },
			want: []string{"spec.versions[v1alpha1].served|true|version v1alpha1 no longer served"}},
		{name: "stored version removed", edit: func(c *apiextv1.CustomResourceDefinition) {
			c.Spec.Versions = c.Spec.Versions[:1]
			c.Spec.Versions[0].Storage = true
		}, want: []string{
			"spec.versions[v1]|true|version v1 removed while objects are stored in it (status.storedVersions [v1]): the API server refuses the change",
			"spec.versions[v1alpha1].storage|false|storage version changes from v1 to v1alpha1",
		}},
		{name: "scope change", edit: func(c *apiextv1.CustomResourceDefinition) { c.Spec.Scope = apiextv1.ClusterScoped },
			want: []string{"spec.scope|true|scope changes from Namespaced to Cluster: the scope of a CRD is immutable"}},
		{name: "property removed", edit: func(c *apiextv1.CustomResourceDefinition) {
			s := spec(c, 1)
			delete(s.Properties, "color")
			setSpec(c, 1, s)
		}, want: []string{"spec.versions[v1].schema.openAPIV3Schema.properties[spec].properties[color]|true|field spec.color removed from the schema: the API server prunes it"}},
		{name: "property removed under preserve-unknown-fields is kept", edit: func(c *apiextv1.CustomResourceDefinition) {
			s := spec(c, 1)
			delete(s.Properties, "color")
			keep := true
			s.XPreserveUnknownFields = &keep
			setSpec(c, 1, s)
		}, want: []string{"spec.versions[v1].schema.openAPIV3Schema.properties[spec].x-kubernetes-preserve-unknown-fields|false|field spec: x-kubernetes-preserve-unknown-fields false → true; no declared field is dropped"}},
		{name: "type narrowed", edit: func(c *apiextv1.CustomResourceDefinition) {
			s := spec(c, 1)
			s.Properties["size"] = apiextv1.JSONSchemaProps{Type: "string"}
			setSpec(c, 1, s)
		}, want: []string{"spec.versions[v1].schema.openAPIV3Schema.properties[spec].properties[size].type|true|field spec.size narrows from type integer to string"}},
		{name: "integer widened to number", edit: func(c *apiextv1.CustomResourceDefinition) {
			s := spec(c, 1)
			s.Properties["size"] = apiextv1.JSONSchemaProps{Type: "number"}
			setSpec(c, 1, s)
		}, want: []string{"spec.versions[v1].schema.openAPIV3Schema.properties[spec].properties[size].type|false|field spec.size: type integer → number, wider"}},
		{name: "array items narrowed", edit: func(c *apiextv1.CustomResourceDefinition) {
			s := spec(c, 1)
			s.Properties["tags"] = apiextv1.JSONSchemaProps{Type: "array", Items: &apiextv1.JSONSchemaPropsOrArray{Schema: &apiextv1.JSONSchemaProps{Type: "integer"}}}
			setSpec(c, 1, s)
		}, want: []string{"spec.versions[v1].schema.openAPIV3Schema.properties[spec].properties[tags].items.type|true|field spec.tags[] narrows from type string to integer"}},
		{name: "new required field", edit: func(c *apiextv1.CustomResourceDefinition) {
			s := spec(c, 1)
			s.Required = []string{"color"}
			setSpec(c, 1, s)
		}, want: []string{"spec.versions[v1].schema.openAPIV3Schema.properties[spec].required|true|field spec.color becomes required (no default)"}},
		{name: "new required field with a default", edit: func(c *apiextv1.CustomResourceDefinition) {
			s := spec(c, 1)
			s.Required = []string{"color"}
			s.Properties["color"] = apiextv1.JSONSchemaProps{Type: "string", Default: &apiextv1.JSON{Raw: []byte(`"red"`)}}
			setSpec(c, 1, s)
		}, want: []string{"spec.versions[v1].schema.openAPIV3Schema.properties[spec].properties[color].default|false|field spec.color: default <unset> → \"red\", not a validation"}},
		{name: "property and version added", edit: func(c *apiextv1.CustomResourceDefinition) {
			s := spec(c, 1)
			s.Properties["shape"] = apiextv1.JSONSchemaProps{Type: "string"}
			setSpec(c, 1, s)
			v2 := *c.Spec.Versions[1].DeepCopy()
			v2.Name, v2.Storage = "v2", false
			c.Spec.Versions = append(c.Spec.Versions, v2)
		}, want: []string{
			// issue 26: a property the cluster lacks is a difference to apply
			"spec.versions[v1].schema.openAPIV3Schema.properties[spec].properties[shape]|false|field spec.shape added to the schema: the cluster's CRD lacks it, so the API server prunes it from custom resources until this CRD is applied",
			"spec.versions[v2]|false|adds version v2 (served)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CRD(crd(t, nil), crd(t, tt.edit))
			checkFindings(t, got, tt.want)
		})
	}
}

func TestCRDAffectedVersion(t *testing.T) {
	if got := CRDAffectedVersion(crd(t, nil)); got != "v1" {
		t.Errorf("storage version served: got %q, want v1", got)
	}
	c := crd(t, func(c *apiextv1.CustomResourceDefinition) { c.Spec.Versions[1].Served = false })
	if got := CRDAffectedVersion(c); got != "v1alpha1" {
		t.Errorf("storage version not served: got %q, want v1alpha1", got)
	}
}

// TestCRDValidation compares validations of spec.size (integer) and
// spec.color (string) of version v1: every difference is reported at the
// keyword, destructive exactly when the new schema may refuse a value the
// cluster's accepted (issue 26).
func TestCRDValidation(t *testing.T) {
	const at = "spec.versions[v1].schema.openAPIV3Schema.properties[spec]."
	ptr := func(f float64) *float64 { return &f }
	i64 := func(i int64) *int64 { return &i }
	enum := func(vs ...string) []apiextv1.JSON {
		var out []apiextv1.JSON
		for _, v := range vs {
			out = append(out, apiextv1.JSON{Raw: []byte(`"` + v + `"`)})
		}
		return out
	}
	type edit func(size, color *apiextv1.JSONSchemaProps)
	tests := []struct {
		name       string
		live, next edit
		// want lists "path|destructive|message part", as in TestCRD.
		want []string
	}{
		{name: "pattern added", next: func(_, c *apiextv1.JSONSchemaProps) { c.Pattern = "^[a-z]+$" },
			want: []string{at + "properties[color].pattern|true|field spec.color: pattern <unset> → ^[a-z]+$, stricter"}},
		{name: "pattern changed", live: func(_, c *apiextv1.JSONSchemaProps) { c.Pattern = "^[a-z]+$" }, next: func(_, c *apiextv1.JSONSchemaProps) { c.Pattern = "^[a-z0-9]+$" },
			want: []string{at + "properties[color].pattern|true|pattern ^[a-z]+$ → ^[a-z0-9]+$, stricter"}},
		{name: "pattern removed", live: func(_, c *apiextv1.JSONSchemaProps) { c.Pattern = "^[a-z]+$" },
			want: []string{at + "properties[color].pattern|false|pattern ^[a-z]+$ → <unset>, wider"}},
		{name: "enum narrowed", live: func(_, c *apiextv1.JSONSchemaProps) { c.Enum = enum("red", "blue") }, next: func(_, c *apiextv1.JSONSchemaProps) { c.Enum = enum("red") },
			want: []string{at + `properties[color].enum|true|field spec.color: enum ["red", "blue"] → ["red"] drops "blue", stricter`}},
		{name: "enum widened", live: func(_, c *apiextv1.JSONSchemaProps) { c.Enum = enum("red") }, next: func(_, c *apiextv1.JSONSchemaProps) { c.Enum = enum("red", "blue") },
			want: []string{at + `properties[color].enum|false|adds "blue", wider`}},
		{name: "enum added", next: func(_, c *apiextv1.JSONSchemaProps) { c.Enum = enum("red") },
			want: []string{at + `properties[color].enum|true|restricted to enum ["red"], stricter`}},
		{name: "enum removed", live: func(_, c *apiextv1.JSONSchemaProps) { c.Enum = enum("red") },
			want: []string{at + `properties[color].enum|false|enum ["red"] removed, wider`}},
		{name: "minimum raised", live: func(s, _ *apiextv1.JSONSchemaProps) { s.Minimum = ptr(1) }, next: func(s, _ *apiextv1.JSONSchemaProps) { s.Minimum = ptr(3) },
			want: []string{at + "properties[size].minimum|true|field spec.size: minimum 1 → 3, stricter"}},
		{name: "minimum lowered", live: func(s, _ *apiextv1.JSONSchemaProps) { s.Minimum = ptr(3) }, next: func(s, _ *apiextv1.JSONSchemaProps) { s.Minimum = ptr(1) },
			want: []string{at + "properties[size].minimum|false|minimum 3 → 1, wider"}},
		{name: "maximum added", next: func(s, _ *apiextv1.JSONSchemaProps) { s.Maximum = ptr(10) },
			want: []string{at + "properties[size].maximum|true|maximum <unset> → 10, stricter"}},
		{name: "maximum raised", live: func(s, _ *apiextv1.JSONSchemaProps) { s.Maximum = ptr(10) }, next: func(s, _ *apiextv1.JSONSchemaProps) { s.Maximum = ptr(20) },
			want: []string{at + "properties[size].maximum|false|maximum 10 → 20, wider"}},
		{name: "exclusive minimum", live: func(s, _ *apiextv1.JSONSchemaProps) { s.Minimum = ptr(0) }, next: func(s, _ *apiextv1.JSONSchemaProps) { s.Minimum, s.ExclusiveMinimum = ptr(0), true },
			want: []string{at + "properties[size].exclusiveMinimum|true|exclusiveMinimum false → true, stricter"}},
		{name: "maxLength tightened", live: func(_, c *apiextv1.JSONSchemaProps) { c.MaxLength = i64(63) }, next: func(_, c *apiextv1.JSONSchemaProps) { c.MaxLength = i64(10) },
			want: []string{at + "properties[color].maxLength|true|maxLength 63 → 10, stricter"}},
		{name: "maxLength removed", live: func(_, c *apiextv1.JSONSchemaProps) { c.MaxLength = i64(63) },
			want: []string{at + "properties[color].maxLength|false|maxLength 63 → <unset>, wider"}},
		{name: "format added", next: func(_, c *apiextv1.JSONSchemaProps) { c.Format = "hostname" },
			want: []string{at + "properties[color].format|true|format <unset> → hostname, stricter"}},
		{name: "nullable dropped", live: func(_, c *apiextv1.JSONSchemaProps) { c.Nullable = true },
			want: []string{at + "properties[color].nullable|true|nullable true → false, stricter"}},
		{name: "validation rule added", next: func(s, _ *apiextv1.JSONSchemaProps) {
			s.XValidations = apiextv1.ValidationRules{{Rule: "self % 2 == 0"}}
		}, want: []string{at + `properties[size].x-kubernetes-validations|true|validation rule "self % 2 == 0" added, stricter`}},
		{name: "validation rule removed", live: func(s, _ *apiextv1.JSONSchemaProps) {
			s.XValidations = apiextv1.ValidationRules{{Rule: "self % 2 == 0"}}
		}, want: []string{at + `properties[size].x-kubernetes-validations|false|validation rule "self % 2 == 0" removed, wider`}},
		{name: "validation message changed", live: func(s, _ *apiextv1.JSONSchemaProps) {
			s.XValidations = apiextv1.ValidationRules{{Rule: "self % 2 == 0", Message: "odd"}}
		}, next: func(s, _ *apiextv1.JSONSchemaProps) {
			s.XValidations = apiextv1.ValidationRules{{Rule: "self % 2 == 0", Message: "must be even"}}
		}, want: []string{at + `properties[size].x-kubernetes-validations|false|keeps its rule; its message`}},
		{name: "list becomes a set", next: func(_, c *apiextv1.JSONSchemaProps) {
			listType := "set"
			c.XListType = &listType
		}, want: []string{at + `properties[color].x-kubernetes-list-type|true|x-kubernetes-list-type <unset> → "set", may be stricter`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			apply := func(e edit) func(c *apiextv1.CustomResourceDefinition) {
				return func(c *apiextv1.CustomResourceDefinition) {
					if e == nil {
						return
					}
					s := spec(c, 1)
					size, color := s.Properties["size"], s.Properties["color"]
					e(&size, &color)
					s.Properties["size"], s.Properties["color"] = size, color
					setSpec(c, 1, s)
				}
			}
			got := CRD(crd(t, apply(tt.live)), crd(t, apply(tt.next)))
			checkFindings(t, got, tt.want)
		})
	}
}

func TestCRDRequiredRemovedWidens(t *testing.T) {
	live := crd(t, func(c *apiextv1.CustomResourceDefinition) {
		s := spec(c, 1)
		s.Required = []string{"color"}
		setSpec(c, 1, s)
	})
	got := CRD(live, crd(t, nil))
	if len(got) != 1 || got[0].Destructive || got[0].Path != "spec.versions[v1].schema.openAPIV3Schema.properties[spec].required" ||
		!strings.Contains(got[0].Message, "field spec.color no longer required, wider") {
		t.Errorf("got %+v, want one non-destructive finding: spec.color no longer required", got)
	}
}

// checkFindings compares findings with wants written "path|destructive|part
// of the message".
func checkFindings(t *testing.T, got []CRDFinding, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d findings, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		parts := strings.SplitN(w, "|", 3)
		f := got[i]
		if f.Path != parts[0] || (parts[1] == "true") != f.Destructive || !strings.Contains(f.Message, parts[2]) {
			t.Errorf("finding %d = %+v, want path %s destructive %s message containing %q", i, f, parts[0], parts[1], parts[2])
		}
	}
}
