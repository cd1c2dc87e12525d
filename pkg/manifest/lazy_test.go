package manifest

import (
	"reflect"
	"strings"
	"testing"
)

// TestLazySplitParity: the planner's splits, once every object is loaded,
// give what Split gives — the same objects, the same content (numbers as
// float64, namespaces set the same way), the same errors — and keep
// encoded exactly the objects nothing reads before their evaluation.
func TestLazySplitParity(t *testing.T) {
	tests := []struct {
		name, manifest string
		// eager are the objects decoded by the split itself.
		eager []string
		err   string
	}{
		{name: "workloads wait", manifest: `# Source: app/templates/d.yaml
apiVersion: apps/v1
kind: Deployment
metadata: {name: d, labels: {a: b}}
spec: {replicas: 3, template: {spec: {containers: [{name: c, image: "x:1", ports: [{containerPort: 80}]}]}}}
---
apiVersion: v1
kind: Service
metadata: {name: s, namespace: other}
spec: {ports: [{port: 80.5}], clusterIP: None}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: r, namespace: ignored}
rules: []
`},
		{name: "what may hold secrets, CRDs and Lists are decoded at once", manifest: `apiVersion: v1
kind: Secret
metadata: {name: s}
stringData: {k: v}
---
apiVersion: v1
kind: secret
metadata: {name: lower}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cm}
data: {k: v}
---
apiVersion: example.com/v1
kind: Thing
metadata: {name: t}
binaryData: {}
stringData: {x: "1"}
---
apiVersion: v1
kind: Service
metadata:
  name: applied
  annotations: {kubectl.kubernetes.io/last-applied-configuration: "{}"}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec: {group: example.com, scope: Cluster, names: {kind: Widget, plural: widgets}}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w, namespace: dropped}
spec: {size: 1}
---
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: ServiceAccount, metadata: {name: sa}}
`, eager: []string{"Secret/demo/s", "secret/demo/lower", "ConfigMap/demo/cm", "Thing.example.com/demo/t", "Service/demo/applied",
			"CustomResourceDefinition.apiextensions.k8s.io/widgets.example.com", "ServiceAccount/demo/sa"}},
		{name: "empty and comment-only documents", manifest: "---\n# just a comment\n---\n{}\n---\napiVersion: v1\nkind: ServiceAccount\nmetadata: {name: a}\n"},
		{name: "duplicate keys: the last wins", manifest: "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: a}\nmetadata: {name: b}\n"},
		{name: "a scalar document", manifest: "just text\n", err: "error unmarshaling JSON"},
		{name: "bad YAML", manifest: "apiVersion: v1\nkind: [\n", err: "error converting YAML to JSON"},
		{name: "a name that is not a string", manifest: "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: 12}\n", err: "has no metadata.name"},
		{name: "defined twice", manifest: "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ServiceAccount\nmetadata: {name: a, namespace: demo}\n", err: "defined twice"},
	}
	scoper := StaticScoper{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, wantErr := Split("m", tt.manifest, "demo", scoper)
			got, parsed, err := SplitRemembering("m", tt.manifest, "demo", scoper)
			if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
				t.Fatalf("error %v, Split's %v", err, wantErr)
			}
			if err != nil {
				if !strings.Contains(err.Error(), tt.err) {
					t.Errorf("error %q, want one saying %q", err, tt.err)
				}
				return
			}
			if tt.err != "" {
				t.Fatalf("no error, want one saying %q", tt.err)
			}
			shared, err := SplitSharing("m", tt.manifest, "demo", scoper, parsed)
			if err != nil {
				t.Fatal(err)
			}
			eager := map[string]bool{}
			for _, o := range got.Objects() {
				if o.Loaded() {
					eager[o.ID.String()] = true
				}
			}
			wantEager := map[string]bool{}
			for _, id := range tt.eager {
				wantEager[id] = true
			}
			if !reflect.DeepEqual(eager, wantEager) {
				t.Errorf("decoded at once: %v, want %v", eager, wantEager)
			}
			for _, o := range got.Objects() {
				if err := LoadPair(shared.Get(o.ID), o); err != nil {
					t.Fatal(err)
				}
			}
			for _, set := range []*Set{got, shared} {
				if !reflect.DeepEqual(set, want) {
					for _, o := range set.Objects() {
						t.Logf("%s: %v", o.ID, o.Obj.Object)
					}
					t.Errorf("loaded objects differ from Split's: %v", want.Objects())
				}
			}
		})
	}
}
