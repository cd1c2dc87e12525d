package e2e

import (
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/release"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/releasestate"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// parityDB is a StatefulSet as real charts write it; parityCases edit it the
// way charts change between releases (issue 11).
const parityDB = `apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
  labels: {app: db, helm.sh/chart: db-1.0.0}
spec:
  replicas: 2
  serviceName: db-headless
  selector: {matchLabels: {app: db}}
  template:
    metadata:
      labels: {app: db, helm.sh/chart: db-1.0.0}
    spec:
      containers:
      - name: db
        image: postgres:16.1
        ports: [{name: sql, containerPort: 5432}]
        resources: {requests: {memory: 512Mi, cpu: 500m}}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 8Gi}}
`

const parityWeb = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        resources: {limits: {cpu: "1", memory: 1Gi}}
`

const paritySvc = `apiVersion: v1
kind: Service
metadata: {name: api}
spec:
  selector: {app: api}
  ports: [{name: http, port: 80, targetPort: 8080}]
`

const paritySecret = "apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\ndata: {user: YWRtaW4=}\n"

const parityClass = "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: \"fast-{{ .Release.Namespace }}\"}\nprovisioner: csi.example.com\n"

const parityRB = "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: readers}\nroleRef: {kind: ClusterRole, name: view}\nsubjects: [{kind: User, name: jane}]\n"

const parityNP = "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: db}\nspec:\n  podSelector: {matchLabels: {app: db}}\n  ingress: [{ports: [{port: 5432}]}]\n"

// parityAuth keeps a generated password through lookup and refuses an
// upgrade that cannot find it, as Bitnami's charts do.
const parityAuth = `{{- $s := lookup "v1" "Secret" .Release.Namespace "auth" }}
{{- if and .Release.IsUpgrade (not $s) }}{{ fail "PASSWORDS ERROR: You must provide your current passwords when upgrading the release." }}{{ end }}
apiVersion: v1
kind: Secret
metadata: {name: auth}
data:
  password: {{ if $s }}{{ index $s.data "password" }}{{ else }}{{ randAlphaNum 16 | b64enc }}{{ end }}
`

func replaced(t *testing.T, doc string, oldNew ...string) string {
	t.Helper()
	for i := 0; i < len(oldNew); i += 2 {
		if !strings.Contains(doc, oldNew[i]) {
			t.Fatalf("fixture lacks %q", oldNew[i])
		}
		doc = strings.Replace(doc, oldNew[i], oldNew[i+1], 1)
	}
	return doc
}

type parityCase struct {
	name       string
	file, base string
	head       func(t *testing.T) string
	// kind/name of the object compared.
	kind, object string
}

func parityCases() []parityCase {
	db := func(name string, oldNew ...string) parityCase {
		return parityCase{name: name, file: "db.yaml", base: parityDB, kind: "StatefulSet", object: "db",
			head: func(t *testing.T) string { return replaced(t, parityDB, oldNew...) }}
	}
	return []parityCase{
		db("claim template gains apiVersion and kind, image changes",
			"  - metadata: {name: data}", "  - apiVersion: v1\n    kind: PersistentVolumeClaim\n    metadata: {name: data}",
			"postgres:16.1", "postgres:16.2"),
		db("claim template storage spelled 8192Mi", "storage: 8Gi", "storage: 8192Mi"),
		db("claim template volumeMode written out", "accessModes: [ReadWriteOnce]", "accessModes: [ReadWriteOnce]\n      volumeMode: Filesystem"),
		db("claim template storageClassName empty", "accessModes: [ReadWriteOnce]", "accessModes: [ReadWriteOnce]\n      storageClassName: \"\""),
		db("claim template grows", "storage: 8Gi", "storage: 16Gi"),
		db("claim template labels", "  - metadata: {name: data}", "  - metadata: {name: data, labels: {app: db}}"),
		db("quantities respelled", "memory: 512Mi, cpu: 500m", "memory: 0.5Gi, cpu: \"0.5\""),
		db("defaults written out", "  serviceName: db-headless", "  serviceName: db-headless\n  podManagementPolicy: OrderedReady\n  revisionHistoryLimit: 10",
			"{name: sql, containerPort: 5432}", "{name: sql, containerPort: 5432, protocol: TCP}",
			"image: postgres:16.1", "image: postgres:16.1\n        imagePullPolicy: IfNotPresent"),
		db("empty maps and lists", "      containers:", "      nodeSelector: {}\n      tolerations: []\n      containers:"),
		db("object labels churn", "  labels: {app: db, helm.sh/chart: db-1.0.0}", "  labels: {app: db, helm.sh/chart: db-1.1.0}"),
		db("template labels churn", "      labels: {app: db, helm.sh/chart: db-1.0.0}", "      labels: {app: db, helm.sh/chart: db-1.1.0}"),
		db("selector changes", "selector: {matchLabels: {app: db}}", "selector: {matchLabels: {app: db, role: primary}}",
			"      labels: {app: db,", "      labels: {app: db, role: primary,"),
		db("template labels no longer match the selector (the seed report)", "      labels: {app: db,", "      labels: {app: db-v2,"),
		db("selector changes, template labels left behind", "selector: {matchLabels: {app: db}}", "selector: {matchLabels: {app: db, role: primary}}"),
		db("serviceName changes", "serviceName: db-headless", "serviceName: db-hl"),
		db("sidecar added", "      containers:\n", "      containers:\n      - {name: metrics, image: \"exporter:0.15\"}\n"),
		db("probe port by number", "resources: {requests:", "readinessProbe: {tcpSocket: {port: 5432}}\n        resources: {requests:"),
		{name: "deployment defaults and cpu spelled 1000m", file: "web.yaml", base: parityWeb, kind: "Deployment", object: "web",
			head: func(t *testing.T) string {
				return replaced(t, parityWeb, `cpu: "1"`, "cpu: 1000m",
					"  selector:", "  replicas: 1\n  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 25%, maxUnavailable: 25%}}\n  selector:")
			}},
		{name: "service targetPort by name", file: "svc.yaml", base: paritySvc, kind: "Service", object: "api",
			head: func(t *testing.T) string { return replaced(t, paritySvc, "targetPort: 8080", "targetPort: http") }},
		{name: "service defaults written out", file: "svc.yaml", base: paritySvc, kind: "Service", object: "api",
			head: func(t *testing.T) string {
				return replaced(t, paritySvc, "targetPort: 8080}", "targetPort: 8080, protocol: TCP}", "  selector:", "  type: ClusterIP\n  sessionAffinity: None\n  selector:")
			}},
		{name: "service made headless", file: "svc.yaml", base: paritySvc, kind: "Service", object: "api",
			head: func(t *testing.T) string {
				return replaced(t, paritySvc, "  selector:", "  clusterIP: None\n  selector:")
			}},
		{name: "service stops writing clusterIP None", file: "svc.yaml", base: strings.Replace(paritySvc, "  selector:", "  clusterIP: None\n  selector:", 1),
			kind: "Service", object: "api", head: func(t *testing.T) string { return paritySvc }},
		{name: "rolebinding apiGroups written out", file: "rb.yaml", base: parityRB, kind: "RoleBinding", object: "readers",
			head: func(t *testing.T) string {
				return replaced(t, parityRB, "roleRef: {kind", "roleRef: {apiGroup: rbac.authorization.k8s.io, kind", "[{kind: User", "[{apiGroup: rbac.authorization.k8s.io, kind: User")
			}},
		{name: "networkpolicy defaults written out", file: "np.yaml", base: parityNP, kind: "NetworkPolicy", object: "db",
			head: func(t *testing.T) string {
				return replaced(t, parityNP, "ports: [{port: 5432}]", "ports: [{port: 5432, protocol: TCP}]", "  podSelector:", "  policyTypes: [Ingress]\n  podSelector:")
			}},
		{name: "generated password kept through lookup", file: "auth.yaml", base: parityAuth, kind: "Secret", object: "auth",
			head: func(t *testing.T) string { return parityAuth + "  user: YWRtaW4=\n" }},
		{name: "secret type written out", file: "secret.yaml", base: paritySecret, kind: "Secret", object: "creds",
			head: func(t *testing.T) string { return replaced(t, paritySecret, "\ndata:", "\ntype: Opaque\ndata:") }},
		{name: "storageclass defaults written out", file: "sc.yaml", base: parityClass, kind: "StorageClass",
			head: func(t *testing.T) string {
				return parityClass + "reclaimPolicy: Delete\nvolumeBindingMode: Immediate\n"
			}},
	}
}

// TestOfflineParity is issue 11's acceptance: chart pairs that reproduce what
// real charts change between releases, planned live (the server's verdicts
// are the truth) and offline; offline must give the same action and class.
func TestOfflineParity(t *testing.T) {
	c := testcluster.Get(t)
	t.Logf("API server %s", c.ServerVersion)
	for _, tc := range parityCases() {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			t.Parallel()
			ns := c.Namespace(t)
			base := writeChart(t, "app", "1.0.0", map[string]string{tc.file: tc.base})
			head := writeChart(t, "app", "2.0.0", map[string]string{tc.file: tc.head(t)})
			c.Helm(t, "install", "app", base, "-n", ns)
			object := tc.object
			if object == "" {
				object = "fast-" + ns
			}
			live, lr := planJSON(t, c, "app", head, "-n", ns)
			offline, or := planJSON(t, c, "app", head, "-n", ns, "--offline", "--from-chart", base)
			l, o := live.change(t, tc.kind, object), offline.change(t, tc.kind, object)
			if l.Action != o.Action || l.Class != o.Class || l.Destructive != o.Destructive {
				t.Fatalf("live %s %s (reasons %+v)\noffline %s %s (reasons %+v)\nlive stderr: %s\noffline stderr: %s",
					l.Action, l.Class, l.Reasons, o.Action, o.Class, o.Reasons, lr.Stderr, or.Stderr)
			}
			t.Logf("both: %s %s", l.Action, l.Class)
		})
	}
}

// TestRemovedAPIInStoredRelease: a cluster upgrade left a release whose
// stored manifest holds policy/v1beta1 PodDisruptionBudget (edited in
// storage, as a cluster upgrade leaves it). Helm's upgrade fails on it; the
// plan names the object and the fix and blocks, never a silent no-op.
func TestRemovedAPIInStoredRelease(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	pdb := "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: web}\nspec: {minAvailable: 1, selector: {matchLabels: {app: web}}}\n"
	chart := writeChart(t, "app", "1.0.0", map[string]string{"pdb.yaml": pdb})
	c.Helm(t, "install", "app", chart, "-n", ns)

	getter := genericclioptions.NewConfigFlags(false)
	getter.KubeConfig, getter.Namespace = &c.Kubeconfig, &ns
	cfg, err := releasestate.NewConfiguration(getter, ns, "secret", t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	rel, err := cfg.Releases.Get("app", 1)
	if err != nil {
		t.Fatal(err)
	}
	rel.Manifest = strings.Replace(rel.Manifest, "apiVersion: policy/v1\n", "apiVersion: policy/v1beta1\n", 1)
	if !strings.Contains(rel.Manifest, "policy/v1beta1") || rel.Info.Status != release.StatusDeployed {
		t.Fatalf("stored release not edited: %s\n%s", rel.Info.Status, rel.Manifest)
	}
	if err := cfg.Releases.Update(rel); err != nil {
		t.Fatal(err)
	}
	// Helm itself refuses.
	if out, err := c.HelmErr("upgrade", "app", chart, "-n", ns); err == nil {
		t.Fatalf("helm upgrade accepted a release holding policy/v1beta1:\n%s", out)
	}
	p, r := planJSON(t, c, "app", chart, "-n", ns)
	got := p.change(t, "PodDisruptionBudget", "web")
	if r.Code != 2 || got.Class != "invalid" || len(got.Reasons) == 0 {
		t.Fatalf("exit %d, change %+v\nstderr:\n%s", r.Code, got, r.Stderr)
	}
	msg := got.Reasons[0].Message
	for _, want := range []string{`policy/v1beta1 PodDisruptionBudget "web"`, "removed in Kubernetes 1.25", "helm mapkubeapis"} {
		if !strings.Contains(msg, want) {
			t.Errorf("reason %q lacks %q", msg, want)
		}
	}
	t.Logf("reason: %s", msg)
}
