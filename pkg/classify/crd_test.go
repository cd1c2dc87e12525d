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
		{name: "printer columns and descriptions are not reported", edit: func(c *apiextv1.CustomResourceDefinition) {
			c.Spec.Versions[1].AdditionalPrinterColumns = []apiextv1.CustomResourceColumnDefinition{{Name: "Size", Type: "integer", JSONPath: ".spec.size"}}
			c.Spec.Versions[1].Schema.OpenAPIV3Schema.Description = "a widget"
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
		}},
		{name: "type narrowed", edit: func(c *apiextv1.CustomResourceDefinition) {
			s := spec(c, 1)
			s.Properties["size"] = apiextv1.JSONSchemaProps{Type: "string"}
			setSpec(c, 1, s)
		}, want: []string{"spec.versions[v1].schema.openAPIV3Schema.properties[spec].properties[size].type|true|field spec.size narrows from type integer to string"}},
		{name: "integer widened to number", edit: func(c *apiextv1.CustomResourceDefinition) {
			s := spec(c, 1)
			s.Properties["size"] = apiextv1.JSONSchemaProps{Type: "number"}
			setSpec(c, 1, s)
		}},
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
		}},
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
			if len(got) != len(tt.want) {
				t.Fatalf("got %d findings, want %d: %+v", len(got), len(tt.want), got)
			}
			for i, w := range tt.want {
				parts := strings.SplitN(w, "|", 3)
				f := got[i]
				if f.Path != parts[0] || (parts[1] == "true") != f.Destructive || !strings.Contains(f.Message, parts[2]) {
					t.Errorf("finding %d = %+v, want path %s destructive %s message containing %q", i, f, parts[0], parts[1], parts[2])
				}
			}
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
