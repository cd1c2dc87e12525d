package planner

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/classify"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

const randomCM = `---
# Source: app/templates/cm.yaml
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data: {token: %s, level: %s}
`

func cm(token, level string) string {
	return strings.Replace(strings.Replace(randomCM, "%s", token, 1), "%s", level, 1)
}

// TestRegenerated: fields that differ between two renders of the same
// inputs are labelled and, alone, neither count as a change nor block.
func TestRegenerated(t *testing.T) {
	tests := []struct {
		name              string
		base, head, again string
		object            string
		regenerated       bool // the change is Regenerated
		hasChanges        bool
		destructive       bool
		labelled          []string // reason paths marked regenerated
		plain             []string // reason paths not marked
	}{
		{name: "random token only", base: cm("a", "info"), head: cm("b", "info"), again: cm("c", "info"), object: "cfg",
			regenerated: true, labelled: []string{"data.token"}},
		{name: "random token and a real change", base: cm("a", "info"), head: cm("b", "debug"), again: cm("c", "debug"), object: "cfg",
			hasChanges: true, labelled: []string{"data.token"}, plain: []string{"data.level"}},
		{name: "same render twice: nothing marked", base: cm("a", "info"), head: cm("a", "debug"), again: cm("a", "debug"), object: "cfg",
			hasChanges: true, plain: []string{"data.level"}},
		{name: "random value in an immutable field stays destructive", base: pvc("data", ""),
			head: strings.Replace(pvc("data", ""), "fast", "x1", 1), again: strings.Replace(pvc("data", ""), "fast", "x2", 1), object: "data",
			hasChanges: true, destructive: true, labelled: []string{"spec.storageClassName"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(Offline{Release: "app", Namespace: "prod"}.Parts(), "").Plan(context.Background(), Input{
				Release:          plan.Release{Name: "app", Namespace: "prod"},
				PreviousManifest: tt.base, NextManifest: tt.head, SecondRender: tt.again,
			})
			if err != nil {
				t.Fatal(err)
			}
			if p.HasChanges() != tt.hasChanges {
				t.Errorf("HasChanges = %v, want %v", p.HasChanges(), tt.hasChanges)
			}
			c := p.Changes[0]
			if c.ID.Name != tt.object || c.Action != plan.ActionUpdate {
				t.Fatalf("want an update of %s, got %+v", tt.object, c)
			}
			if c.Regenerated != tt.regenerated || c.Destructive != tt.destructive {
				t.Errorf("regenerated %v destructive %v, want %v %v", c.Regenerated, c.Destructive, tt.regenerated, tt.destructive)
			}
			if tt.regenerated && (p.Summary().Regenerated != 1 || p.Summary().InPlace != 0) {
				t.Errorf("summary %+v: want it counted as regenerated, not by class", p.Summary())
			}
			marked := map[string]bool{}
			for _, r := range c.Reasons {
				marked[r.Path] = r.Regenerated
			}
			for _, path := range tt.labelled {
				if v, ok := marked[path]; !ok || !v {
					t.Errorf("%s not marked regenerated: %+v", path, c.Reasons)
				}
			}
			for _, path := range tt.plain {
				if v, ok := marked[path]; !ok || v {
					t.Errorf("%s: want an unmarked reason: %+v", path, c.Reasons)
				}
			}
		})
	}
}

// TestRegeneratedCreate: a new object's regenerated fields are named.
func TestRegeneratedCreate(t *testing.T) {
	p, err := New(Offline{Release: "app", Namespace: "prod"}.Parts(), "").Plan(context.Background(), Input{
		Release:      plan.Release{Name: "app", Namespace: "prod"},
		NextManifest: cm("b", "info"), SecondRender: cm("c", "info"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if c := p.Changes[0]; c.Action != plan.ActionCreate || !strings.Contains(strings.Join(c.Notes, "\n"), "regenerated on every render: data.token") {
		t.Fatalf("create: %+v", c)
	}
}

// shapeSecret and the others render one object with a generated value %s
// written in a given shape.
const (
	shapeStringData = "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {password: %s, user: admin}\n"
	shapeData       = "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {ca.crt: %s}\n"
	shapeAnnotation = "apiVersion: v1\nkind: Secret\nmetadata: {name: s, annotations: {rendered-at: %s}}\nstringData: {user: admin}\n"
	shapeLabel      = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: s, labels: {build: %s}}\ndata: {level: info}\n"
	shapeBinaryData = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: s}\nbinaryData: {key: %s}\n"
	shapeEnv        = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: s}\nspec:\n  selector: {matchLabels: {app: s}}\n  template:\n    metadata: {labels: {app: s}}\n    spec: {containers: [{name: c, image: nginx, env: [{name: TOKEN, value: %s}], args: [--seed=%[1]s]}]}\n"
)

// TestRegeneratedWhereStored: a generated value is marked at the path the
// server stores it at, whatever shape the chart wrote it in, and the
// verdict is the same offline, derived and asked of the server.
func TestRegeneratedWhereStored(t *testing.T) {
	tests := []struct {
		name, shape string
		base64      bool
		want        []string // regenerated reason paths
		rotated     bool     // a Secret value: the rotation note
	}{
		{name: "stringData", shape: shapeStringData, want: []string{"data.password"}, rotated: true},
		{name: "data", shape: shapeData, base64: true, want: []string{"data[ca.crt]"}, rotated: true},
		{name: "annotation", shape: shapeAnnotation, want: []string{"metadata.annotations[rendered-at]"}},
		{name: "label", shape: shapeLabel, want: []string{"metadata.labels.build"}},
		{name: "binaryData", shape: shapeBinaryData, base64: true, want: []string{"binaryData.key"}},
		{name: "env and args", shape: shapeEnv, want: []string{"spec.template.spec.containers[0].args[0]", "spec.template.spec.containers[0].env[0].value"}},
	}
	for _, tt := range tests {
		render := func(v string) string {
			if tt.base64 {
				v = base64.StdEncoding.EncodeToString([]byte(v))
			}
			return "---\n# Source: app/templates/t.yaml\n" + fmt.Sprintf(tt.shape, v)
		}
		base, head, again := render("gen-one"), render("gen-two"), render("gen-three")
		for _, mode := range []string{"offline", string(ServerDryRunNeeded), string(ServerDryRunAll)} {
			t.Run(tt.name+"/"+mode, func(t *testing.T) {
				var p *Planner
				if mode == "offline" {
					p = New(Offline{Release: "app", Namespace: "prod"}.Parts(), "")
				} else {
					c, _ := patchCluster(stored(t, base), "")
					p = New(c, "v1.37.2")
					p.ServerDryRun = ServerDryRun(mode)
				}
				out, err := p.Plan(context.Background(), Input{
					Release:          plan.Release{Name: "app", Namespace: "prod", ApplyMethod: plan.ApplyMethodCSA},
					PreviousManifest: base, NextManifest: head, SecondRender: again,
				})
				if err != nil {
					t.Fatal(err)
				}
				c := out.Changes[0]
				if c.Action != plan.ActionUpdate || !c.Regenerated || out.HasChanges() || !out.HasRegenerated() {
					t.Fatalf("want a regenerated update, not counted: %+v", c)
				}
				var marked []string
				for _, r := range c.Reasons {
					if r.Regenerated {
						marked = append(marked, r.Path)
					}
				}
				if !slices.Equal(marked, tt.want) {
					t.Errorf("marked %v, want %v (reasons %+v)", marked, tt.want, c.Reasons)
				}
				notes := strings.Join(c.Notes, "\n")
				if rotated := strings.Contains(notes, RotatedMessage); rotated != tt.rotated {
					t.Errorf("rotation note %v, want %v: %q", rotated, tt.rotated, notes)
				}
				for _, v := range []string{"gen-one", "gen-two", "gen-three"} {
					if strings.Contains(notes, v) || strings.Contains(notes, base64.StdEncoding.EncodeToString([]byte(v))) {
						t.Errorf("a generated value in the notes: %q", notes)
					}
				}
			})
		}
	}
}

// stored is the object of manifest as the server holds it after the
// install: its server form, in the release's namespace, with Helm's
// ownership metadata.
func stored(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
		t.Fatal(err)
	}
	obj = classify.Comparable(obj)
	obj.SetNamespace("prod")
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels["app.kubernetes.io/managed-by"] = "Helm"
	obj.SetLabels(labels)
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations["meta.helm.sh/release-name"], annotations["meta.helm.sh/release-namespace"] = "app", "prod"
	obj.SetAnnotations(annotations)
	return obj
}
