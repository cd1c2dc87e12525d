package predict

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/applyconfigurations"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// podController is a Deployment as the chart renders it, pod spec given
// (YAML flow, without the braces), and as the server stores it: defaulted
// and at generation 3.
func podController(t testing.TB, pod string, served bool) *unstructured.Unstructured {
	t.Helper()
	obj := yamlObject(t, `{apiVersion: apps/v1, kind: Deployment, metadata: {name: d, namespace: ns, labels: {v: "1"}},
	  spec: {replicas: 1, selector: {matchLabels: {app: d}}, template: {metadata: {labels: {app: d}}, spec: {`+pod+`}}}}`)
	if !served {
		return obj
	}
	obj.SetGeneration(3)
	spec := obj.Object["spec"].(map[string]interface{})
	spec["revisionHistoryLimit"] = int64(10)
	spec["progressDeadlineSeconds"] = int64(600)
	spec["strategy"] = map[string]interface{}{"type": "RollingUpdate", "rollingUpdate": map[string]interface{}{"maxSurge": "25%", "maxUnavailable": "25%"}}
	podSpec := spec["template"].(map[string]interface{})["spec"].(map[string]interface{})
	podSpec["restartPolicy"], podSpec["dnsPolicy"] = "Always", "ClusterFirst"
	for _, list := range containerLists {
		cs, _ := podSpec[list].([]interface{})
		for _, c := range cs {
			m := c.(map[string]interface{})
			m["imagePullPolicy"], m["terminationMessagePath"] = "IfNotPresent", "/dev/termination-log"
		}
	}
	return obj
}

// TestDeriveImages derives a Deployment's container image change, Helm 3's
// patch and Helm 4's merge alike, where the pod template warnings are
// certainly empty: the live object with the new images and the generation
// one higher; anything else, or a template they may warn about, is asked.
func TestDeriveImages(t *testing.T) {
	const web = `containers: [{name: web, image: "nginx:1.25"}]`
	tests := []struct {
		name, v1, v2 string
		// images are the derived images in order; none: asked, for why.
		images []string
		why    string
		// helm3Only: a template server-side apply refuses (duplicate keys).
		helm3Only bool
	}{
		{name: "image", v1: web, v2: `containers: [{name: web, image: "nginx:1.26"}]`, images: []string{"nginx:1.26"}},
		{name: "init and main images", v1: `initContainers: [{name: init, image: "busybox:1"}], ` + web,
			v2:     `initContainers: [{name: init, image: "busybox:2"}], containers: [{name: web, image: "nginx:1.26"}]`,
			images: []string{"busybox:2", "nginx:1.26"}},
		{name: "one of two containers", v1: `containers: [{name: a, image: "a:1"}, {name: b, image: "b:1"}]`,
			v2: `containers: [{name: a, image: "a:1"}, {name: b, image: "b:2"}]`, images: []string{"a:1", "b:2"}},
		{name: "template that cannot warn", v1: `containers: [{name: web, image: "nginx:1.25", env: [{name: A, value: "1"}],
			ports: [{name: http, containerPort: 80}], resources: {requests: {memory: 64Mi}}}], nodeSelector: {kubernetes.io/os: linux},
			imagePullSecrets: [{name: reg}], volumes: [{name: c, configMap: {name: c, items: [{key: k, path: p}]}}]`,
			v2: `containers: [{name: web, image: "nginx:1.26", env: [{name: A, value: "1"}],
			ports: [{name: http, containerPort: 80}], resources: {requests: {memory: 64Mi}}}], nodeSelector: {kubernetes.io/os: linux},
			imagePullSecrets: [{name: reg}], volumes: [{name: c, configMap: {name: c, items: [{key: k, path: p}]}}]`,
			images: []string{"nginx:1.26"}},

		{name: "image and command", v1: web, v2: `containers: [{name: web, image: "nginx:1.26", command: [x]}]`, why: "beyond container images"},
		{name: "container renamed", v1: web, v2: `containers: [{name: app, image: "nginx:1.26"}]`, why: "beyond container images"},
		{name: "container added", v1: web, v2: `containers: [{name: web, image: "nginx:1.26"}, {name: b, image: "b:1"}]`, why: "beyond container images"},
		{name: "empty image", v1: web, v2: `containers: [{name: web, image: ""}]`, why: "refuse"},
		{name: "image with a space", v1: web, v2: `containers: [{name: web, image: "nginx:1.26 "}]`, why: "refuse"},
		{name: "deprecated node label", v1: web + `, nodeSelector: {beta.kubernetes.io/os: linux}`,
			v2: `containers: [{name: web, image: "nginx:1.26"}], nodeSelector: {beta.kubernetes.io/os: linux}`, why: "deprecated node label"},
		{name: "fractional memory", v1: `containers: [{name: web, image: "nginx:1.25", resources: {limits: {memory: 0.5}}}]`,
			v2: `containers: [{name: web, image: "nginx:1.26", resources: {limits: {memory: 0.5}}}]`, why: "fractional"},
		{name: "duplicate env", v1: `containers: [{name: web, image: "nginx:1.25", env: [{name: A, value: "1"}, {name: A, value: "2"}]}]`,
			v2: `containers: [{name: web, image: "nginx:1.26", env: [{name: A, value: "1"}, {name: A, value: "2"}]}]`, why: "env", helm3Only: true},
		{name: "duplicate container port", v1: `containers: [{name: web, image: "nginx:1.25", ports: [{containerPort: 80}]}, {name: b, image: "b:1", ports: [{containerPort: 80}]}]`,
			v2: `containers: [{name: web, image: "nginx:1.26", ports: [{containerPort: 80}]}, {name: b, image: "b:1", ports: [{containerPort: 80}]}]`, why: "ports"},
		{name: "affinity", v1: web + `, affinity: {podAntiAffinity: {}}`,
			v2: `containers: [{name: web, image: "nginx:1.26"}], affinity: {podAntiAffinity: {}}`, why: "affinity"},
		{name: "deprecated annotation", v1: web, v2: `containers: [{name: web, image: "nginx:1.26"}]`, why: "annotation"},
		{name: "overlapping item paths", v1: web + `, volumes: [{name: c, configMap: {name: c, items: [{key: a, path: p}, {key: b, path: p/q}]}}]`,
			v2: `containers: [{name: web, image: "nginx:1.26"}], volumes: [{name: c, configMap: {name: c, items: [{key: a, path: p}, {key: b, path: p/q}]}}]`, why: "volume c"},
	}
	p := NewPatcher()
	tc := applyconfigurations.NewTypeConverter(clientgoscheme.Scheme)
	for _, c := range tests {
		annotate := func(o *unstructured.Unstructured) *unstructured.Unstructured {
			if c.name == "deprecated annotation" {
				_ = unstructured.SetNestedStringMap(o.Object, map[string]string{"seccomp.security.alpha.kubernetes.io/pod": "runtime/default"}, "spec", "template", "metadata", "annotations")
			}
			return o
		}
		original, target := annotate(podController(t, c.v1, false)), annotate(podController(t, c.v2, false))
		check := func(t *testing.T, live, got *unstructured.Unstructured, why string) {
			t.Helper()
			if c.images == nil {
				if got != nil || !strings.Contains(why, c.why) {
					t.Fatalf("derived %v (%q), want asked for %q", got != nil, why, c.why)
				}
				return
			}
			if got == nil {
				t.Fatalf("not derived: %s", why)
			}
			if g := got.GetGeneration(); g != live.GetGeneration()+1 {
				t.Errorf("generation %d, want %d", g, live.GetGeneration()+1)
			}
			// Live with the images replaced, in order, is what the server
			// stores.
			want := live.DeepCopy()
			want.SetGeneration(got.GetGeneration())
			pod := want.Object["spec"].(map[string]interface{})["template"].(map[string]interface{})["spec"].(map[string]interface{})
			i := 0
			for _, list := range containerLists {
				cs, _ := pod[list].([]interface{})
				for _, ctr := range cs {
					ctr.(map[string]interface{})["image"] = c.images[i]
					i++
				}
			}
			if a, b := withoutManagedFields(got), withoutManagedFields(want); !equality.Semantic.DeepEqual(a.Object, b.Object) {
				t.Errorf("derived %v\nwant    %v", a.Object["spec"], b.Object["spec"])
			}
		}
		t.Run(c.name+"/helm3", func(t *testing.T) {
			live := annotate(podController(t, c.v1, true))
			patch, pt, err := p.Patch(original, target, live)
			if err != nil {
				t.Fatal(err)
			}
			got, why := Derive(live, patch, pt)
			check(t, live, got, why)
		})
		t.Run(c.name+"/helm4", func(t *testing.T) {
			if c.helm3Only {
				t.Skip("server-side apply refuses the template")
			}
			live := serverApply(t, tc, nil, original, FieldManager, "")
			served := annotate(podController(t, c.v1, true))
			served.SetManagedFields(live.GetManagedFields())
			d := decideApply(tc, served, target, false)
			if d.Verdict != ApplyChange {
				t.Fatalf("decided %v (%s), want a change", d.Verdict, d.Why)
			}
			got, why := DeriveApply(served, d.Merged)
			check(t, served, got, why)
		})
	}
}

// TestUnderivable: what Helm 4's configuration may change for Derive to be
// tried leaves everything else in place, and the object as it was.
func TestUnderivable(t *testing.T) {
	a := podController(t, `containers: [{name: web, image: "nginx:1.25"}]`, false)
	b := podController(t, `containers: [{name: web, image: "nginx:1.26"}]`, false)
	b.SetLabels(map[string]string{"v": "2"})
	c := podController(t, `containers: [{name: web, image: "nginx:1.26", command: [x]}]`, false)
	if !equality.Semantic.DeepEqual(Underivable(a.Object), Underivable(b.Object)) {
		t.Error("an image and a label change are not underivable-equal")
	}
	if equality.Semantic.DeepEqual(Underivable(a.Object), Underivable(c.Object)) {
		t.Error("a command change is underivable-equal")
	}
	if img, _, _ := unstructured.NestedSlice(a.Object, "spec", "template", "spec", "containers"); img[0].(map[string]interface{})["image"] != "nginx:1.25" {
		t.Error("Underivable changed its argument")
	}
	s1 := service(t, `{selector: {app: a}, ports: [{port: 80}]}`)
	s2 := service(t, `{selector: {app: a}, ports: [{port: 81}]}`)
	s3 := service(t, `{selector: {app: b}, ports: [{port: 81}]}`)
	if !equality.Semantic.DeepEqual(Underivable(s1.Object), Underivable(s2.Object)) || equality.Semantic.DeepEqual(Underivable(s1.Object), Underivable(s3.Object)) {
		t.Error("a Service's ports are not all Underivable removes")
	}
}
