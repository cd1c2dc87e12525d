package classify

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
)

func obj(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(y), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

const sts = `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: ns, resourceVersion: "7"}
spec:
  replicas: 3
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: "postgres:16"}]}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
status: {replicas: 3}
`

// stsBigger is sts with its claim template grown to 2Gi.
var stsBigger = strings.Replace(sts, "storage: 1Gi", "storage: 2Gi", 1)

func invalid(kind schema.GroupKind, errs ...*field.Error) error {
	return apierrors.NewInvalid(kind, "x", field.ErrorList(errs))
}

func TestClassifyRejected(t *testing.T) {
	stsGK := schema.GroupKind{Group: "apps", Kind: "StatefulSet"}
	vct := "spec.volumeClaimTemplates[0].spec.resources.requests.storage"
	tests := []struct {
		name      string
		kind      schema.GroupKind
		live      string
		local     string
		dryRunErr error
		recreate  error
		class     plan.Class
		paths     []string
	}{
		{
			name: "statefulset ≤1.36: one coarse spec Forbidden cause",
			kind: stsGK, live: sts, local: stsBigger,
			dryRunErr: invalid(stsGK, field.Forbidden(field.NewPath("spec"),
				"updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden")),
			recreate: apierrors.NewAlreadyExists(schema.GroupResource{Group: "apps", Resource: "statefulsets"}, "db"),
			class:    plan.ClassRecreateRequired, paths: []string{vct},
		},
		{
			name: "statefulset 1.37: per-field immutable cause",
			kind: stsGK, live: sts, local: stsBigger,
			dryRunErr: invalid(stsGK, field.Invalid(field.NewPath("spec", "volumeClaimTemplates"), "x", "field is immutable")),
			recreate:  apierrors.NewAlreadyExists(schema.GroupResource{Group: "apps", Resource: "statefulsets"}, "db"),
			class:     plan.ClassRecreateRequired, paths: []string{vct},
		},
		{
			name: "selector does not match labels: invalid, not recreatable",
			kind: schema.GroupKind{Group: "apps", Kind: "Deployment"}, live: sts, local: sts,
			dryRunErr: invalid(stsGK, field.Invalid(field.NewPath("spec", "template", "metadata", "labels"), "x", "`selector` does not match template `labels`")),
			class:     plan.ClassInvalid, paths: []string{"spec.template.metadata.labels"},
		},
		{
			name: "immutable and the new object is rejected too: invalid",
			kind: stsGK, live: sts, local: stsBigger,
			dryRunErr: invalid(stsGK, field.Invalid(field.NewPath("spec", "selector"), "x", "field is immutable"),
				field.Invalid(field.NewPath("spec", "template", "metadata", "labels"), "x", "`selector` does not match template `labels`")),
			recreate: invalid(stsGK, field.Invalid(field.NewPath("spec", "template", "metadata", "labels"), "x", "`selector` does not match template `labels`")),
			class:    plan.ClassInvalid, paths: []string{"spec.template.metadata.labels"},
		},
		{
			name: "bound claim shrinking: the catalogue knows the field",
			kind: schema.GroupKind{Kind: "PersistentVolumeClaim"}, live: pvcYAML("2Gi"), local: pvcYAML("1Gi"),
			dryRunErr: invalid(schema.GroupKind{Kind: "PersistentVolumeClaim"}, field.Forbidden(field.NewPath("spec", "resources", "requests", "storage"), "field can not be less than status.capacity")),
			recreate:  apierrors.NewAlreadyExists(schema.GroupResource{Resource: "persistentvolumeclaims"}, "data"),
			class:     plan.ClassRecreateRequired, paths: []string{"spec.resources.requests.storage"},
		},
		{
			name: "bound claim growing without expansion support: invalid",
			kind: schema.GroupKind{Kind: "PersistentVolumeClaim"}, live: pvcYAML("1Gi"), local: pvcYAML("2Gi"),
			dryRunErr: invalid(schema.GroupKind{Kind: "PersistentVolumeClaim"}, field.Forbidden(field.NewPath("spec", "resources", "requests", "storage"), "only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize")),
			class:     plan.ClassInvalid, paths: []string{"spec.resources.requests.storage"},
		},
		{
			name: "admission denial: invalid",
			kind: stsGK, live: sts, local: stsBigger,
			dryRunErr: apierrors.NewForbidden(schema.GroupResource{Resource: "statefulsets"}, "db", errString("admission webhook \"x\" denied the request")),
			class:     plan.ClassInvalid, paths: []string{""},
		},
	}
	c := New()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := c.Classify(Update{GroupKind: tt.kind, Live: obj(t, tt.live), Local: obj(t, tt.local),
				DryRunErr: tt.dryRunErr, RecreateErr: tt.recreate})
			if v.Class != tt.class {
				t.Fatalf("class = %q, want %q (reasons %+v)", v.Class, tt.class, v.Reasons)
			}
			var paths []string
			for _, r := range v.Reasons {
				paths = append(paths, r.Path)
				if r.Source != plan.SourceServer {
					t.Errorf("reason %q source = %q, want server", r.Path, r.Source)
				}
			}
			if len(paths) != len(tt.paths) {
				t.Fatalf("paths = %q, want %q", paths, tt.paths)
			}
			for i := range paths {
				if paths[i] != tt.paths[i] {
					t.Fatalf("paths = %q, want %q", paths, tt.paths)
				}
			}
		})
	}
}

type errString string

func (e errString) Error() string { return string(e) }

func TestClassifyAccepted(t *testing.T) {
	deploy := func(image, strategy string, replicas int) string {
		return `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ns}
spec:
  replicas: ` + itoa(replicas) + `
  strategy: {type: ` + strategy + `}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "` + image + `"}]}
`
	}
	deployGK := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	tests := []struct {
		name            string
		kind            schema.GroupKind
		live, predicted string
		useLocal        bool
		class           plan.Class
		noop            bool
		paths           []string
		impactContains  string
		source          plan.Source
	}{
		{name: "image change rolls", kind: deployGK, live: deploy("nginx:1", "RollingUpdate", 3), predicted: deploy("nginx:2", "RollingUpdate", 3),
			class: plan.ClassRolling, paths: []string{"spec.template.spec.containers[0].image"}, impactContains: "3 pod(s) replaced gradually", source: plan.SourceServer},
		{name: "recreate strategy means downtime", kind: deployGK, live: deploy("nginx:1", "Recreate", 2), predicted: deploy("nginx:2", "Recreate", 2),
			class: plan.ClassRolling, paths: []string{"spec.template.spec.containers[0].image"}, impactContains: "stopped before new ones start", source: plan.SourceServer},
		{name: "replicas only is in-place", kind: deployGK, live: deploy("nginx:1", "RollingUpdate", 2), predicted: deploy("nginx:1", "RollingUpdate", 5),
			class: plan.ClassInPlace, paths: []string{"spec.replicas"}, source: plan.SourceServer},
		{name: "same object is a noop", kind: deployGK, live: deploy("nginx:1", "RollingUpdate", 2), predicted: deploy("nginx:1", "RollingUpdate", 2), noop: true},
		{name: "catalogue finds the immutable claim template offline", kind: schema.GroupKind{Group: "apps", Kind: "StatefulSet"}, live: sts, predicted: stsBigger, useLocal: true,
			class: plan.ClassRecreateRequired, paths: []string{"spec.volumeClaimTemplates[0].spec.resources.requests.storage"}, source: plan.SourceCatalogue},
	}
	c := New()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := Update{GroupKind: tt.kind, Live: obj(t, tt.live), Local: obj(t, tt.predicted)}
			if !tt.useLocal {
				u.Predicted = obj(t, tt.predicted)
			}
			v := c.Classify(u)
			if v.Noop != tt.noop || v.Class != tt.class {
				t.Fatalf("verdict = %+v, want class %q noop %v", v, tt.class, tt.noop)
			}
			for i, r := range v.Reasons {
				if i >= len(tt.paths) || r.Path != tt.paths[i] || r.Source != tt.source {
					t.Fatalf("reasons = %+v, want paths %q from %s", v.Reasons, tt.paths, tt.source)
				}
			}
			if tt.impactContains != "" && (v.Rollout == nil || !contains(v.Rollout.Impact, tt.impactContains)) {
				t.Fatalf("rollout = %+v, want impact containing %q", v.Rollout, tt.impactContains)
			}
		})
	}
}

func TestCatalogue(t *testing.T) {
	svc := func(ip string) map[string]interface{} {
		return map[string]interface{}{"spec": map[string]interface{}{"clusterIP": ip}}
	}
	pvc := func(size string) map[string]interface{} {
		return map[string]interface{}{"spec": map[string]interface{}{"resources": map[string]interface{}{"requests": map[string]interface{}{"storage": size}}}}
	}
	cm := func(immutable bool) map[string]interface{} {
		return map[string]interface{}{"immutable": immutable, "data": map[string]interface{}{"k": "v"}}
	}
	tests := []struct {
		name            string
		kind            schema.GroupKind
		path            string
		live, predicted map[string]interface{}
		immutable       bool
	}{
		{"service IP to another IP", gk("", "Service"), "spec.clusterIP", svc("10.96.0.10"), svc("10.96.0.11"), true},
		{"service IP dropped keeps the live one", gk("", "Service"), "spec.clusterIP", svc("10.96.0.10"), svc(""), false},
		{"service made headless (the base had an allocated IP)", gk("", "Service"), "spec.clusterIP", map[string]interface{}{}, svc("None"), true},
		{"service IP chosen where one was allocated", gk("", "Service"), "spec.clusterIP", map[string]interface{}{}, svc("10.96.0.12"), true},
		{"headless service gets an IP", gk("", "Service"), "spec.clusterIP", svc("None"), svc("10.96.0.12"), true},
		{"headless dropped keeps None", gk("", "Service"), "spec.clusterIP", svc("None"), map[string]interface{}{}, false},
		{"pvc grows", gk("", "PersistentVolumeClaim"), "spec.resources.requests.storage", pvc("1Gi"), pvc("2Gi"), false},
		{"pvc shrinks", gk("", "PersistentVolumeClaim"), "spec.resources.requests.storage", pvc("2Gi"), pvc("1Gi"), true},
		{"pvc storage class", gk("", "PersistentVolumeClaim"), "spec.storageClassName", nil, nil, true},
		{"immutable configmap data", gk("", "ConfigMap"), "data.k", cm(true), cm(true), true},
		{"mutable configmap data", gk("", "ConfigMap"), "data.k", cm(false), cm(false), false},
		{"statefulset template is mutable", gk("apps", "StatefulSet"), "spec.template.spec.containers[0].image", nil, nil, false},
		{"statefulset serviceName", gk("apps", "StatefulSet"), "spec.serviceName", nil, nil, true},
		{"rolebinding roleRef", gk("rbac.authorization.k8s.io", "RoleBinding"), "roleRef.name", nil, nil, true},
		{"job template", gk("batch", "Job"), "spec.template.spec.containers[0].image", nil, nil, true},
		{"job parallelism", gk("batch", "Job"), "spec.parallelism", nil, nil, false},
		{"pod image", gk("", "Pod"), "spec.containers[1].image", nil, nil, false},
		{"pod command", gk("", "Pod"), "spec.containers[1].command", nil, nil, true},
	}
	c := newCatalogue()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := c.immutableAt(tt.kind, tt.path, tt.live, tt.predicted) != nil
			if got != tt.immutable {
				t.Fatalf("immutableAt(%s, %s) = %v, want %v", tt.kind, tt.path, got, tt.immutable)
			}
		})
	}
}

func TestSanitizeHidesSecretValues(t *testing.T) {
	msg := `Secret "s" is invalid: data[pw]: Invalid value: "hunter2": some rule`
	got := Sanitize(msg, true)
	if contains(got, "hunter2") {
		t.Fatalf("Sanitize leaked the value: %s", got)
	}
	if Sanitize(msg, false) != msg {
		t.Fatal("Sanitize changed a non-secret message")
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func pvcYAML(size string) string {
	return "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data, namespace: ns}\nspec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: " + size + "}}}\nstatus: {phase: Bound}\n"
}

// TestClassifyDerived: a derived prediction (live with other metadata labels
// or annotations) is classified without decoding, to the verdict the same
// object gets as a server's answer, with source derived.
func TestClassifyDerived(t *testing.T) {
	const live = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ns, labels: {app: web, helm.sh/chart: app-1}, annotations: {note: a}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "nginx:1.25"}]}
status: {replicas: 2}
`
	tests := []struct {
		name      string
		predicted string
		noop      bool
	}{
		{name: "label changed", predicted: strings.Replace(live, "app-1", "app-2", 1)},
		{name: "label removed", predicted: strings.Replace(live, ", helm.sh/chart: app-1", "", 1)},
		{name: "every label removed", predicted: strings.Replace(live, "labels: {app: web, helm.sh/chart: app-1}, ", "", 1)},
		{name: "annotation added", predicted: strings.Replace(live, "{note: a}", "{note: a, other: b}", 1)},
		{name: "nothing", predicted: live, noop: true},
	}
	c := New()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u := Update{GroupKind: schema.GroupKind{Group: "apps", Kind: "Deployment"}, Live: obj(t, live), Local: obj(t, tc.predicted), Predicted: obj(t, tc.predicted)}
			derivedLikeServer(t, c, u, tc.noop)
		})
	}
}

// TestClassifyDerivedPayload: a derived prediction of a ConfigMap's or a
// Secret's payload or a Service's ports (predict.Derive) gets the verdict the same object gets
// as a server's answer, also with Secret values masked as the planner masks
// them.
func TestClassifyDerivedPayload(t *testing.T) {
	const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: ns, labels: {app: a}}\n"
	const secret = "apiVersion: v1\nkind: Secret\ntype: Opaque\nmetadata: {name: s, namespace: ns}\n"
	const svc = "apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: ns, labels: {app: a}}\n" +
		"spec: {type: ClusterIP, clusterIP: 10.0.0.1, selector: {app: a}, ports: [{protocol: TCP, port: 80, targetPort: "
	tests := []struct {
		name            string
		kind            string
		live, predicted string
		noop            bool
	}{
		{name: "configmap value changed", kind: "ConfigMap", live: cm + "data: {k: v, other: o}\n", predicted: cm + "data: {k: w, other: o}\n"},
		{name: "configmap key added", kind: "ConfigMap", live: cm + "data: {k: v}\n", predicted: cm + "data: {k: v, n: x}\n"},
		{name: "configmap every key removed", kind: "ConfigMap", live: cm + "data: {k: v}\n", predicted: cm},
		{name: "configmap first data", kind: "ConfigMap", live: cm, predicted: cm + "data: {k: v}\n"},
		{name: "configmap binaryData and a label", kind: "ConfigMap", live: cm + "binaryData: {b: eA==}\n",
			predicted: strings.Replace(cm, "app: a", "app: b", 1) + "binaryData: {b: eQ==}\n"},
		{name: "configmap unchanged", kind: "ConfigMap", live: cm + "data: {k: v}\n", predicted: cm + "data: {k: v}\n", noop: true},
		{name: "secret value changed", kind: "Secret", live: secret + "data: {pw: czM=, user: dQ==}\n", predicted: secret + "data: {pw: czQ=, user: dQ==}\n"},
		{name: "secret key removed", kind: "Secret", live: secret + "data: {pw: czM=, user: dQ==}\n", predicted: secret + "data: {pw: czM=}\n"},
		{name: "secret unchanged", kind: "Secret", live: secret + "data: {pw: czM=}\n", predicted: secret + "data: {pw: czM=}\n", noop: true},
		{name: "service port changed", kind: "Service", live: svc + "80}]}\n", predicted: svc + "8080}]}\n"},
		{name: "service port and a label", kind: "Service", live: svc + "80}]}\n", predicted: strings.Replace(svc, "app: a", "app: b", 1) + "81}]}\n"},
		{name: "service ports unchanged", kind: "Service", live: svc + "80}]}\n", predicted: svc + "80}]}\n", noop: true},
	}
	c := New()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := redact.NewMasker()
			live, predicted := m.Object(obj(t, tc.live)), m.Object(obj(t, tc.predicted))
			u := Update{GroupKind: schema.GroupKind{Kind: tc.kind}, Live: live, Local: predicted, Predicted: predicted, Secret: tc.kind == "Secret"}
			derivedLikeServer(t, c, u, tc.noop)
		})
	}
}

// derivedLikeServer classifies u as a server's answer and as derived, and
// requires the same verdict (noop as given), the derived one's reasons
// saying source derived.
func derivedLikeServer(t *testing.T, c *Classifier, u Update, noop bool) {
	t.Helper()
	server := c.Classify(u)
	u.Derived = true
	got := c.Classify(u)
	if got.Noop != noop || server.Noop != noop {
		t.Fatalf("noop %v (server %v), want %v", got.Noop, server.Noop, noop)
	}
	for i := range server.Reasons {
		if got.Reasons[i].Source != plan.SourceDerived {
			t.Errorf("reason %d source %q", i, got.Reasons[i].Source)
		}
		server.Reasons[i].Source = plan.SourceDerived
	}
	if !reflect.DeepEqual(got, server) {
		t.Errorf("derived %+v\nserver  %+v", got, server)
	}
}
