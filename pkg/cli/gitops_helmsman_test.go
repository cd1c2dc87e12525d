package cli

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/chartrepo"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/filetree"
)

// kafkaChart writes the first report's chart at version: a 6-replica
// StatefulSet (kafka.instances) with an init container and a claim
// template of claimSize; from 0.6.410 on the init container runs as user
// 1000 (the report's change: the pod template changes).
func kafkaChart(t *testing.T, version, claimSize string) string {
	t.Helper()
	security := ""
	if version != "0.6.402" {
		security = "          securityContext: {runAsUser: 1000}\n"
	}
	return filepath.Join(filetree.Write(t, map[string]string{
		"kafka/Chart.yaml":  "apiVersion: v2\nname: kafka\nversion: " + version + "\n",
		"kafka/values.yaml": "kafka: {instances: 3}\nimage: {tag: \"2.2\"}\n",
		"kafka/templates/service.yaml": `apiVersion: v1
kind: Service
metadata: {name: "{{ .Release.Name }}-svc"}
spec:
  clusterIP: None
  ports: [{port: 9092, name: broker}]
  selector: {app: "{{ .Release.Name }}"}
`,
		"kafka/templates/statefulset.yaml": `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: "{{ .Release.Name }}"}
spec:
  serviceName: "{{ .Release.Name }}-svc"
  replicas: {{ .Values.kafka.instances }}
  selector: {matchLabels: {app: "{{ .Release.Name }}"}}
  template:
    metadata: {labels: {app: "{{ .Release.Name }}"}}
    spec:
      initContainers:
        - name: appd-agent-attach
          image: docker.io/appdynamics/java-agent:latest
` + security + `      containers:
        - name: kafka
          image: "kafka:{{ .Values.image.tag }}"
          volumeMounts: [{name: data-volume, mountPath: /data}]
  volumeClaimTemplates:
    - metadata: {name: data-volume}
      spec:
        accessModes: [ReadWriteOnce]
        storageClassName: gp2
        resources: {requests: {storage: ` + claimSize + `}}
`,
	}), "kafka")
}

// kafkaRepo serves the kafka chart at 0.6.402, 0.6.410 (the init
// container's change) and 0.7.0 (the claim template grows), and a chart
// cache 1.0.0 of one templated PersistentVolumeClaim.
func kafkaRepo(t *testing.T) string {
	t.Helper()
	cache := filepath.Join(filetree.Write(t, map[string]string{
		"cache/Chart.yaml": "apiVersion: v2\nname: cache\nversion: 1.0.0\n",
		"cache/templates/pvc.yaml": `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: "{{ .Release.Name }}-data"}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
`,
	}), "cache")
	url, _ := chartrepo.Serve(t, kafkaChart(t, "0.6.402", "2048Gi"), kafkaChart(t, "0.6.410", "2048Gi"), kafkaChart(t, "0.7.0", "4096Gi"), cache)
	return url
}

// kafkaDSF is the first report's desired state in TOML or YAML: app
// c1-kafka-green in namespace ns at version, kafka.instances set to 6.
func kafkaDSF(format, url, version, ns string) string {
	if format == "toml" {
		return `# the first report's desired state
[helmRepos]
  helm-charts = "` + url + `"

[namespaces]
  [namespaces.ana-kafka]
  [namespaces.streaming]

[apps]
  [apps.c1-kafka-green]
    namespace = "` + ns + `"
    enabled = true
    chart = "helm-charts/kafka"
    version = "` + version + `"
    priority = -2
  [apps.c1-kafka-green.set]
    "kafka.instances" = "6"
`
	}
	return `# the first report's desired state
helmRepos:
  helm-charts: "` + url + `"
namespaces:
  ana-kafka: {}
  streaming: {}
apps:
  c1-kafka-green:
    namespace: ` + ns + `
    enabled: true
    chart: helm-charts/kafka
    version: "` + version + `"
    priority: -2
    set:
      kafka.instances: "6"
`
}

// helmsmanRepo writes base and head checkouts holding the DSF (and extra
// files in the head).
func helmsmanRepo(t *testing.T, file, base, head string, extra map[string]string) (string, string) {
	t.Helper()
	h := map[string]string{file: head}
	for k, v := range extra {
		h[k] = v
	}
	return filetree.Write(t, map[string]string{file: base}), filetree.Write(t, h)
}

// TestHelmsmanPullRequest is the first report's change replayed, in a
// TOML and a YAML desired state: the chart version bump changes the
// StatefulSet's pod template (a rolling update of its 6 pods), the claim
// template's change is blocked until acknowledged in the head, and a
// namespace move is an uninstall (the claims stay behind: data loss) and
// an install.
func TestHelmsmanPullRequest(t *testing.T) {
	url := kafkaRepo(t)
	for _, format := range []string{"toml", "yaml"} {
		t.Run(format, func(t *testing.T) {
			file := "helmsman." + format
			versionLine := map[string]int{"toml": 14, "yaml": 12}[format]

			base, head := helmsmanRepo(t, file, kafkaDSF(format, url, "0.6.402", "ana-kafka"), kafkaDSF(format, url, "0.6.410", "ana-kafka"), nil)
			out, errOut, code := execute(t, "helm-safe-upgrade", "gitops", base, head, "-o", "json", "--detailed-exitcode")
			if code != ExitPending {
				t.Fatalf("version bump: exit %d, want 3\n%s\n%s", code, errOut, out)
			}
			var doc gitopsJSON
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if len(doc.Releases) != 1 || doc.Releases[0].Object != "HelmsmanApp ana-kafka/c1-kafka-green" {
				t.Fatalf("releases %+v", doc.Releases)
			}
			r := doc.Releases[0]
			if got := verdicts(t, r.Plan); !reflect.DeepEqual(got, []string{"Service ana-kafka/c1-kafka-green-svc noop ", "StatefulSet ana-kafka/c1-kafka-green update rolling"}) {
				t.Errorf("plan %v, want the StatefulSet's rolling update alone", got)
			}
			if !strings.Contains(string(r.Plan), "6 of 6 pod(s) replaced one at a time in reverse ordinal order") {
				t.Errorf("the rollout does not say the 6 pods are replaced:\n%s", r.Plan)
			}
			if !strings.HasSuffix(r.File, file) || r.Line != versionLine {
				t.Errorf("change at %s:%d, want %s:%d (the version)", r.File, r.Line, file, versionLine)
			}

			// The claim template grows: recreate-required, blocked.
			base, head = helmsmanRepo(t, file, kafkaDSF(format, url, "0.6.402", "ana-kafka"), kafkaDSF(format, url, "0.7.0", "ana-kafka"), nil)
			sarif, errOut, code := execute(t, "helm-safe-upgrade", "gitops", base, head, "-o", "sarif")
			if code != ExitBlocked {
				t.Fatalf("claim template: exit %d, want 2\n%s\n%s", code, errOut, sarif)
			}
			if !strings.Contains(sarif, `"recreate-required"`) || !strings.Contains(sarif, file) || !strings.Contains(sarif, `"startLine": `+itoa(versionLine)) {
				t.Errorf("SARIF lacks the recreate-required result at %s:%d:\n%s", file, versionLine, sarif)
			}
			// The acknowledgement committed in the head lets it through.
			ack := map[string]string{DefaultAckFile: "- kind: StatefulSet\n  namespace: ana-kafka\n  name: c1-kafka-green\n  reason: claims migrated by hand\n"}
			base, head = helmsmanRepo(t, file, kafkaDSF(format, url, "0.6.402", "ana-kafka"), kafkaDSF(format, url, "0.7.0", "ana-kafka"), ack)
			text, errOut, code := execute(t, "helm-safe-upgrade", "gitops", base, head, "--detailed-exitcode")
			if code != ExitPending || !strings.Contains(text, "recreate-required") {
				t.Fatalf("with the ack file: exit %d, want 3\n%s\n%s", code, errOut, text)
			}

			// A namespace move: Helmsman uninstalls the release it no
			// longer tracks and installs the new one.
			base, head = helmsmanRepo(t, file, kafkaDSF(format, url, "0.6.410", "ana-kafka"), kafkaDSF(format, url, "0.6.410", "streaming"), nil)
			out, errOut, code = execute(t, "helm-safe-upgrade", "gitops", base, head, "-o", "json")
			if code != ExitBlocked {
				t.Fatalf("namespace move: exit %d, want 2\n%s\n%s", code, errOut, out)
			}
			doc = gitopsJSON{}
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if len(doc.Releases) != 2 || doc.Releases[0].Object != "HelmsmanApp ana-kafka/c1-kafka-green" || doc.Releases[1].Object != "HelmsmanApp streaming/c1-kafka-green" {
				t.Fatalf("releases %+v, want the uninstall from ana-kafka then the install in streaming", doc.Releases)
			}
			if got := verdicts(t, doc.Releases[0].Plan); !reflect.DeepEqual(got, []string{"Service ana-kafka/c1-kafka-green-svc delete recreatable", "StatefulSet ana-kafka/c1-kafka-green delete data-loss"}) {
				t.Errorf("uninstall plan %v", got)
			}
			if !strings.Contains(string(doc.Releases[0].Plan), "data-volume-c1-kafka-green-5") || !strings.Contains(string(doc.Releases[0].Plan), `"operation": "uninstall"`) {
				t.Errorf("the uninstall's plan does not name the claims left behind:\n%s", doc.Releases[0].Plan)
			}
			if got := verdicts(t, doc.Releases[1].Plan); !reflect.DeepEqual(got, []string{"Service streaming/c1-kafka-green-svc create ", "StatefulSet streaming/c1-kafka-green create "}) {
				t.Errorf("install plan %v", got)
			}
			nsLine := map[string]int{"toml": 11, "yaml": 9}[format]
			for _, rel := range doc.Releases {
				if !strings.HasSuffix(rel.File, file) || rel.Line != nsLine {
					t.Errorf("%s at %s:%d, want %s:%d (the namespace)", rel.Object, rel.File, rel.Line, file, nsLine)
				}
			}

			// Comments, ordering and priority: nothing Helmsman renders
			// differently.
			moved := strings.Replace(kafkaDSF(format, url, "0.6.410", "ana-kafka"), "priority = -2", "priority = -5", 1)
			moved = strings.Replace(moved, "priority: -2", "priority: -5", 1)
			moved = strings.Replace(moved, "# the first report's desired state", "# reviewed: priority only", 1)
			base, head = helmsmanRepo(t, file, kafkaDSF(format, url, "0.6.410", "ana-kafka"), moved, nil)
			out, errOut, code = execute(t, "helm-safe-upgrade", "gitops", base, head, "--detailed-exitcode", "-o", "json")
			if code != ExitOK || strings.Contains(out, "HelmsmanApp") {
				t.Errorf("priority and comment: exit %d, want 0 and nothing planned\n%s\n%s", code, errOut, out)
			}
		})
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestHelmsmanJob: how the job runs Helmsman. A value from the job's
// environment (set: $VAR) is masked wherever the plan shows it; an unset
// variable, a postRenderer, a values file out of the checkout are errors
// naming the file and the field (exit 1); several DSFs merge as
// helmsman -f a -f b merges them.
func TestHelmsmanJob(t *testing.T) {
	url := kafkaRepo(t)
	const secret = "t0ken-from-the-job-4242"
	t.Setenv("KAFKA_TAG", secret)
	withSet := func(dsf, line string) string {
		return strings.Replace(dsf, `      kafka.instances: "6"`, `      kafka.instances: "6"`+"\n"+line, 1)
	}
	for _, tt := range []struct {
		name       string
		base, head map[string]string
		args       []string
		code       int
		want       string // in stdout, or in stderr when code is 1
	}{
		{name: "a value from the environment is masked",
			base: map[string]string{"h.yaml": kafkaDSF("yaml", url, "0.6.410", "ana-kafka")},
			head: map[string]string{"h.yaml": withSet(kafkaDSF("yaml", url, "0.6.410", "ana-kafka"), "      image.tag: $KAFKA_TAG")},
			code: ExitPending, want: "+      - image: 'kafka:(sensitive: hmac-sha256:"},
		{name: "an unset variable is an error naming it",
			base: map[string]string{"h.yaml": kafkaDSF("yaml", url, "0.6.402", "ana-kafka")},
			head: map[string]string{"h.yaml": withSet(kafkaDSF("yaml", url, "0.6.410", "ana-kafka"), "      image.tag: ${UNSET_IN_THE_JOB}")},
			code: ExitError, want: "h.yaml:16: ${UNSET_IN_THE_JOB} is used as an environment variable but is unset"},
		{name: "a postRenderer is refused by name",
			base: map[string]string{"h.yaml": kafkaDSF("yaml", url, "0.6.402", "ana-kafka")},
			head: map[string]string{"h.yaml": kafkaDSF("yaml", url, "0.6.410", "ana-kafka") + "    postRenderer: ./hack.sh\n"},
			code: ExitError, want: `apps.c1-kafka-green.postRenderer: "./hack.sh" is an executable the pull request names`},
		{name: "a values file out of the checkout is refused",
			base: map[string]string{"h.yaml": kafkaDSF("yaml", url, "0.6.402", "ana-kafka")},
			head: map[string]string{"h.yaml": kafkaDSF("yaml", url, "0.6.410", "ana-kafka") + "    valuesFile: ../../../../../../etc/hostname.yaml\n"},
			code: ExitError, want: "is outside the checkout"},
		{name: "-f a -f b: the second file's version wins",
			base: map[string]string{"a.yaml": kafkaDSF("yaml", url, "0.6.402", "ana-kafka"), "prod/b.yaml": "apps:\n  c1-kafka-green:\n    version: 0.6.402\n"},
			head: map[string]string{"a.yaml": kafkaDSF("yaml", url, "0.6.402", "ana-kafka"), "prod/b.yaml": "apps:\n  c1-kafka-green:\n    version: 0.7.0\n"},
			args: []string{"--helmsman-file", "a.yaml", "--helmsman-file", "prod/b.yaml"},
			code: ExitBlocked, want: `"file": "` + "PLACEHOLDER"},
		{name: "a templated claim's namespace move is a destructive delete",
			base: map[string]string{"h.yaml": "namespaces: {a: {}, b: {}}\nhelmRepos: {r: \"" + url + "\"}\napps:\n  cache: {namespace: a, enabled: true, chart: r/cache, version: 1.0.0}\n"},
			head: map[string]string{"h.yaml": "namespaces: {a: {}, b: {}}\nhelmRepos: {r: \"" + url + "\"}\napps:\n  cache: {namespace: b, enabled: true, chart: r/cache, version: 1.0.0}\n"},
			code: ExitBlocked, want: `"class": "data-loss"`},
		{name: "--helmsman-replace-on-rename: another chart's name is an uninstall and an install",
			base: map[string]string{"h.yaml": kafkaDSF("yaml", url, "0.6.410", "ana-kafka")},
			head: map[string]string{"h.yaml": strings.Replace(strings.Replace(kafkaDSF("yaml", url, "0.6.410", "ana-kafka"), "helm-charts/kafka", "helm-charts/cache", 1), `"0.6.410"`, "1.0.0", 1)},
			args: []string{"--helmsman-replace-on-rename"},
			code: ExitBlocked, want: `"operation": "uninstall"`},
		{name: "without it, the same change is an upgrade",
			base: map[string]string{"h.yaml": kafkaDSF("yaml", url, "0.6.410", "ana-kafka")},
			head: map[string]string{"h.yaml": strings.Replace(strings.Replace(kafkaDSF("yaml", url, "0.6.410", "ana-kafka"), "helm-charts/kafka", "helm-charts/cache", 1), `"0.6.410"`, "1.0.0", 1)},
			code: ExitBlocked, want: `"operation": "upgrade"`},
		{name: "--helmsman-force-upgrades is Helm's --force",
			base: map[string]string{"h.yaml": kafkaDSF("yaml", url, "0.6.402", "ana-kafka")},
			head: map[string]string{"h.yaml": kafkaDSF("yaml", url, "0.6.410", "ana-kafka")},
			args: []string{"--helmsman-force-upgrades"},
			code: ExitPending, want: "--force: Helm replaces every object"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			base, head := filetree.Write(t, tt.base), filetree.Write(t, tt.head)
			args := append([]string{"gitops", base, head, "--detailed-exitcode", "-o", "json"}, tt.args...)
			out, errOut, code := execute(t, "helm-safe-upgrade", args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tt.code, errOut, out)
			}
			want := strings.Replace(tt.want, "PLACEHOLDER", filepath.Join(head, "prod", "b.yaml"), 1)
			if got := out; code == ExitError {
				got = errOut
				if !strings.Contains(got, want) {
					t.Errorf("stderr lacks %q:\n%s", want, got)
				}
			} else if !strings.Contains(got, want) && !strings.Contains(strings.ReplaceAll(got, `\n`, "\n"), want) {
				t.Errorf("report lacks %q:\n%s", want, got)
			}
			if strings.Contains(out+errOut, secret) {
				t.Errorf("the environment's value is in the output")
			}
		})
	}
}
