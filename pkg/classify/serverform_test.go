package classify

import (
	"fmt"
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/jsonvalue"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/predict"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
)

// churnSTS is a StatefulSet as charts write it; the cases below edit it the
// way real charts change between releases.
const churnSTS = `
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
  namespace: ns
  labels: {app: db, helm.sh/chart: db-1.0.0}
spec:
  replicas: 3
  serviceName: db-headless
  selector: {matchLabels: {app: db}}
  template:
    metadata:
      labels: {app: db, helm.sh/chart: db-1.0.0}
      annotations: {checksum/config: aaa}
    spec:
      containers:
      - name: db
        image: postgres:16
        ports: [{name: sql, containerPort: 5432}]
        readinessProbe: {tcpSocket: {port: sql}}
        resources: {requests: {memory: 512Mi, cpu: 500m}}
  volumeClaimTemplates:
  - metadata: {name: data, labels: {app: db}}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 8Gi}}
`

const churnDeploy = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ns}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        ports: [{containerPort: 8080}]
        resources: {limits: {memory: 1Gi, cpu: "1"}}
`

const churnService = `
apiVersion: v1
kind: Service
metadata: {name: web, namespace: ns}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80}]
`

// edit returns doc with each old string replaced by its new one; it fails
// when an old string is missing, so a case cannot silently test nothing.
func edit(t *testing.T, doc string, oldNew ...string) string {
	t.Helper()
	for i := 0; i < len(oldNew); i += 2 {
		if !strings.Contains(doc, oldNew[i]) {
			t.Fatalf("edit: %q not in the fixture", oldNew[i])
		}
		doc = strings.Replace(doc, oldNew[i], oldNew[i+1], 1)
	}
	return doc
}

// offlineUpdate builds the update the offline planner classifies: the base
// render stands in for live, and the local prediction is Helm's three-way
// patch applied to it.
func offlineUpdate(t *testing.T, base, head string) Update {
	t.Helper()
	b, h := obj(t, base), obj(t, head)
	p := predict.NewPatcher()
	patch, pt, err := p.Patch(b, h, b)
	if err != nil {
		t.Fatal(err)
	}
	local, err := p.ApplyLocal(b, patch, pt)
	if err != nil {
		t.Fatal(err)
	}
	return Update{GroupKind: h.GroupVersionKind().GroupKind(), Live: b, Local: local, Original: b, Target: h}
}

// TestServerFaithfulComparison runs the churn real charts show between
// releases through the offline comparison: what the API server would not see
// as a change is no change, and what it rejects stays recreate-required.
func TestServerFaithfulComparison(t *testing.T) {
	tests := []struct {
		name  string
		base  string
		head  func(t *testing.T) string
		class plan.Class
		noop  bool
		path  string // a path the reasons must name
	}{
		{name: "claim template gains apiVersion and kind (dropped by the decoder)", base: churnSTS,
			head: func(t *testing.T) string {
				return edit(t, churnSTS, "  - metadata: {name: data,", "  - apiVersion: v1\n    kind: PersistentVolumeClaim\n    metadata: {name: data,")
			}, noop: true},
		{name: "claim template storage 8Gi spelled 8192Mi", base: churnSTS,
			head: func(t *testing.T) string { return edit(t, churnSTS, "storage: 8Gi", "storage: 8192Mi") }, noop: true},
		{name: "claim template volumeMode set to its default", base: churnSTS,
			head: func(t *testing.T) string {
				return edit(t, churnSTS, "accessModes: [ReadWriteOnce]", "accessModes: [ReadWriteOnce]\n      volumeMode: Filesystem")
			}, noop: true},
		{name: "claim template storageClassName empty is not unset", base: churnSTS,
			head: func(t *testing.T) string {
				return edit(t, churnSTS, "accessModes: [ReadWriteOnce]", "accessModes: [ReadWriteOnce]\n      storageClassName: \"\"")
			}, class: plan.ClassRecreateRequired, path: "spec.volumeClaimTemplates[0].spec.storageClassName"},
		{name: "claim template grows", base: churnSTS,
			head:  func(t *testing.T) string { return edit(t, churnSTS, "storage: 8Gi", "storage: 16Gi") },
			class: plan.ClassRecreateRequired, path: "spec.volumeClaimTemplates[0].spec.resources.requests.storage"},
		{name: "claim template labels change", base: churnSTS,
			head: func(t *testing.T) string {
				return edit(t, churnSTS, "{name: data, labels: {app: db}}", "{name: data, labels: {app: db, tier: storage}}")
			}, class: plan.ClassRecreateRequired, path: "spec.volumeClaimTemplates[0].metadata.labels.tier"},
		{name: "container memory 512Mi spelled 0.5Gi, cpu 500m spelled 0.5", base: churnSTS,
			head: func(t *testing.T) string {
				return edit(t, churnSTS, "memory: 512Mi, cpu: 500m", "memory: 0.5Gi, cpu: \"0.5\"")
			}, noop: true},
		{name: "defaults written out: podManagementPolicy, updateStrategy, protocol, imagePullPolicy", base: churnSTS,
			head: func(t *testing.T) string {
				return edit(t, churnSTS, "  serviceName: db-headless", "  serviceName: db-headless\n  podManagementPolicy: OrderedReady\n  updateStrategy: {type: RollingUpdate}",
					"{name: sql, containerPort: 5432}", "{name: sql, containerPort: 5432, protocol: TCP}",
					"image: postgres:16", "image: postgres:16\n        imagePullPolicy: IfNotPresent")
			}, noop: true},
		{name: "empty maps and lists versus absent", base: churnSTS,
			head: func(t *testing.T) string {
				return edit(t, churnSTS, "      containers:", "      nodeSelector: {}\n      tolerations: []\n      imagePullSecrets: []\n      securityContext: {}\n      containers:",
					"  serviceName: db-headless", "  serviceName: db-headless\n  minReadySeconds: 0")
			}, noop: true},
		{name: "unknown field in the template (dropped by the decoder)", base: churnSTS,
			head: func(t *testing.T) string {
				return edit(t, churnSTS, "image: postgres:16", "image: postgres:16\n        notAField: 1")
			}, noop: true},
		{name: "object labels churn with the chart version: in place", base: churnSTS,
			head: func(t *testing.T) string {
				return edit(t, churnSTS, "  labels: {app: db, helm.sh/chart: db-1.0.0}", "  labels: {app: db, helm.sh/chart: db-1.1.0}")
			}, class: plan.ClassInPlace, path: "metadata.labels[helm.sh/chart]"},
		{name: "template labels and checksum annotations churn: rolling", base: churnSTS,
			head: func(t *testing.T) string {
				return edit(t, churnSTS, "      labels: {app: db, helm.sh/chart: db-1.0.0}", "      labels: {app: db, helm.sh/chart: db-1.1.0}",
					"checksum/config: aaa", "checksum/config: bbb")
			}, class: plan.ClassRolling, path: "spec.template.metadata.annotations[checksum/config]"},
		{name: "selector changes: recreate-required", base: churnSTS,
			head: func(t *testing.T) string {
				return edit(t, churnSTS, "selector: {matchLabels: {app: db}}", "selector: {matchLabels: {app: db, component: primary}}",
					"      labels: {app: db,", "      labels: {app: db, component: primary,")
			}, class: plan.ClassRecreateRequired, path: "spec.selector.matchLabels.component"},
		{name: "template labels no longer match the selector (the seed report): invalid", base: churnSTS,
			head: func(t *testing.T) string {
				return edit(t, churnSTS, "      labels: {app: db,", "      labels: {app: db-v2,", "image: postgres:16", "image: postgres:17")
			}, class: plan.ClassInvalid, path: "spec.template.metadata.labels"},
		{name: "selector changed, template labels left behind: invalid, not recreate", base: churnSTS,
			head: func(t *testing.T) string {
				return edit(t, churnSTS, "selector: {matchLabels: {app: db}}", "selector: {matchLabels: {app: db, role: primary}}")
			}, class: plan.ClassInvalid, path: "spec.template.metadata.labels"},
		{name: "deployment template gains a label the selector ignores: rolling", base: churnDeploy,
			head: func(t *testing.T) string {
				return edit(t, churnDeploy, "metadata: {labels: {app: web}}", "metadata: {labels: {app: web, tier: front}}")
			}, class: plan.ClassRolling, path: "spec.template.metadata.labels.tier"},
		{name: "serviceName changes: recreate-required", base: churnSTS,
			head:  func(t *testing.T) string { return edit(t, churnSTS, "serviceName: db-headless", "serviceName: db-hl") },
			class: plan.ClassRecreateRequired, path: "spec.serviceName"},
		{name: "sidecar added: rolling", base: churnSTS,
			head: func(t *testing.T) string {
				return edit(t, churnSTS, "      containers:\n", "      containers:\n      - {name: metrics, image: exporter:0.15, ports: [{containerPort: 9187}]}\n")
			}, class: plan.ClassRolling, path: "spec.template.spec.containers"},
		{name: "probe port by number instead of by name: rolling", base: churnSTS,
			head: func(t *testing.T) string {
				return edit(t, churnSTS, "tcpSocket: {port: sql}", "tcpSocket: {port: 5432}")
			},
			class: plan.ClassRolling, path: "spec.template.spec.containers[0].readinessProbe.tcpSocket.port"},
		{name: "deployment: cpu 1 spelled 1000m, defaults written out", base: churnDeploy,
			head: func(t *testing.T) string {
				return edit(t, churnDeploy, `cpu: "1"`, "cpu: 1000m",
					"  selector:", "  replicas: 1\n  revisionHistoryLimit: 10\n  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 25%, maxUnavailable: 25%}}\n  selector:")
			}, noop: true},
		{name: "service: targetPort written out equal to port", base: churnService,
			head: func(t *testing.T) string {
				return edit(t, churnService, "{name: http, port: 80}", "{name: http, port: 80, targetPort: 80, protocol: TCP}")
			}, noop: true},
		{name: "service: targetPort by name instead of number", base: edit(t, churnService, "port: 80}", "port: 80, targetPort: 8080}"),
			head: func(t *testing.T) string {
				return edit(t, churnService, "port: 80}", "port: 80, targetPort: http}")
			}, class: plan.ClassInPlace, path: "spec.ports[0].targetPort"},
		{name: "storageclass: reclaimPolicy written out as its default", base: "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: fast}\nprovisioner: csi.example.com\n",
			head: func(t *testing.T) string {
				return "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: fast}\nprovisioner: csi.example.com\nreclaimPolicy: Delete\nvolumeBindingMode: Immediate\n"
			}, noop: true},
		{name: "rolebinding: roleRef and subject apiGroup written out (roleRef is immutable)",
			base: "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: rb, namespace: ns}\nroleRef: {kind: Role, name: r}\nsubjects: [{kind: User, name: u}]\n",
			head: func(t *testing.T) string {
				return "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: rb, namespace: ns}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: r}\nsubjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: u}]\n"
			}, noop: true},
		{name: "service made headless: recreate-required", base: churnService,
			head: func(t *testing.T) string {
				return edit(t, churnService, "  selector:", "  clusterIP: None\n  selector:")
			},
			class: plan.ClassRecreateRequired, path: "spec.clusterIP"},
		{name: "service stops writing clusterIP: None (the server keeps it)", base: edit(t, churnService, "  selector:", "  clusterIP: None\n  selector:"),
			head: func(t *testing.T) string { return churnService }, noop: true},
		{name: "service stops writing its nodePort (the server keeps it)", base: edit(t, churnService, "{name: http, port: 80}", "{name: http, port: 80, nodePort: 30080}", "  selector:", "  type: NodePort\n  selector:"),
			head: func(t *testing.T) string {
				return edit(t, churnService, "  selector:", "  type: NodePort\n  selector:")
			}, noop: true},
		{name: "secret: type Opaque written out", base: "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: ns}\ndata: {a: YQ==}\n",
			head: func(t *testing.T) string {
				return "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: ns}\ntype: Opaque\ndata: {a: YQ==}\n"
			}, noop: true},
	}
	c := New()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := c.Classify(offlineUpdate(t, tt.base, tt.head(t)))
			if v.Noop != tt.noop || v.Class != tt.class {
				t.Fatalf("verdict = class %q noop %v, want class %q noop %v (reasons %+v)", v.Class, v.Noop, tt.class, tt.noop, v.Reasons)
			}
			if tt.path == "" {
				return
			}
			for _, r := range v.Reasons {
				if r.Path == tt.path {
					if r.Source != plan.SourceCatalogue {
						t.Errorf("reason %s source = %s, want catalogue", r.Path, r.Source)
					}
					return
				}
			}
			t.Fatalf("reasons %+v do not name %s", v.Reasons, tt.path)
		})
	}
}

// TestCatalogueFallbackOnLiveObject is the live mode under read-only RBAC:
// the live object is the server's (defaulted, canonical), the prediction is
// the patch applied to it locally. A claim-template list replaced by the
// patch loses the server's defaults locally; they are not a change.
func TestCatalogueFallbackOnLiveObject(t *testing.T) {
	base := obj(t, churnSTS)
	live := predict.ServerForm(base) // what the server returned after the install
	live.SetResourceVersion("42")
	head := obj(t, edit(t, churnSTS, "  - metadata: {name: data,", "  - apiVersion: v1\n    kind: PersistentVolumeClaim\n    metadata: {name: data,",
		"image: postgres:16", "image: postgres:17"))
	p := predict.NewPatcher()
	patch, pt, err := p.Patch(base, head, live)
	if err != nil {
		t.Fatal(err)
	}
	local, err := p.ApplyLocal(live, patch, pt)
	if err != nil {
		t.Fatal(err)
	}
	v := New().Classify(Update{GroupKind: head.GroupVersionKind().GroupKind(), Live: live, Local: local, Original: base, Target: head})
	if v.Class != plan.ClassRolling {
		t.Fatalf("class = %q, want rolling (reasons %+v)", v.Class, v.Reasons)
	}
	for _, r := range v.Reasons {
		if strings.Contains(r.Path, "volumeClaimTemplates") {
			t.Fatalf("claim template reported as changed: %+v", r)
		}
	}
}

func TestServerForm(t *testing.T) {
	if predict.ServerForm(nil) != nil {
		t.Fatal("ServerForm(nil) != nil")
	}
	cr := obj(t, "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec: {size: 1024Mi, extra: {}}\n")
	if got := predict.ServerForm(cr); !jsonvalue.Equal(got.Object, cr.Object) {
		t.Fatalf("custom resource changed: %v", got.Object)
	}
	// A value the typed struct cannot hold: left as is (the server rejects it).
	bad := obj(t, "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {ports: [{port: \"80\"}]}\n")
	if got := predict.ServerForm(bad); Lookup(got.Object, "spec.ports[0].port") != "80" {
		t.Fatalf("undecodable object changed: %v", got.Object)
	}
	in := obj(t, churnSTS)
	before := in.DeepCopy()
	out := predict.ServerForm(in)
	if !jsonvalue.Equal(in.Object, before.Object) {
		t.Fatal("ServerForm modified its argument")
	}
	if out.GetAPIVersion() != "apps/v1" || out.GetKind() != "StatefulSet" {
		t.Fatalf("top-level apiVersion/kind lost: %s %s", out.GetAPIVersion(), out.GetKind())
	}
	if Lookup(out.Object, "spec.volumeClaimTemplates[0].spec.volumeMode") != "Filesystem" {
		t.Fatalf("claim template not defaulted: %v", Lookup(out.Object, "spec.volumeClaimTemplates[0]"))
	}
}

// TestServerFormSecrets: the planner hands Secrets over masked (pkg/redact),
// which the typed struct's []byte cannot hold; the payload is kept aside and
// stringData folded into data as the server does.
func TestServerFormSecrets(t *testing.T) {
	m := redact.NewMasker()
	base := "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: ns}\ndata: {user: YWRtaW4=}\n"
	tests := []struct {
		name, head string
		class      plan.Class
		noop       bool
	}{
		{name: "type Opaque written out", head: "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: ns}\ntype: Opaque\ndata: {user: YWRtaW4=}\n", noop: true},
		{name: "same value as stringData", head: "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: ns}\nstringData: {user: admin}\n", noop: true},
		{name: "value changes", head: "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: ns}\nstringData: {user: root}\n", class: plan.ClassInPlace},
		{name: "type changes", head: "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: ns}\ntype: kubernetes.io/basic-auth\ndata: {user: YWRtaW4=}\n", class: plan.ClassRecreateRequired},
	}
	for _, tt := range tests {
		for _, masked := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/masked=%v", tt.name, masked), func(t *testing.T) {
				u := offlineUpdate(t, base, tt.head)
				if masked {
					u.Live, u.Local, u.Original, u.Target = m.Object(u.Live), m.Object(u.Local), m.Object(u.Original), m.Object(u.Target)
				}
				v := New().Classify(u)
				if v.Noop != tt.noop || v.Class != tt.class {
					t.Fatalf("verdict = class %q noop %v, want %q %v (reasons %+v)", v.Class, v.Noop, tt.class, tt.noop, v.Reasons)
				}
			})
		}
	}
}
