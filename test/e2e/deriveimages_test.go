package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// imagesCase is one pod controller of imagesChart: its pod spec in version
// 1 and 2 (a YAML flow mapping's content; pod where only the image
// nginx:1.25 changes), what the default plan predicts
// of its change (derived or server) and its class; kind is Deployment
// unless set. warns is a text of the warning the server answers the update
// with, which the default plan must print as --server-dry-run=all does.
// drift is a strategic merge patch made to the live object after the
// install, as kubectl makes one.
type imagesCase struct {
	name                string
	kind                string
	pod                 string // v1, and v2 with nginx:1.25 bumped to nginx:1.26
	v1, v2              string
	labels              [2]string // metadata labels of version 1 and 2, if any
	annotations         string    // pod template annotations, if any (%d: the version)
	prediction, class   string
	prediction4, class4 string
	warns               string
	helm3               bool // in Helm 3's chart only: Helm 4's apply refuses it
	drift               string
	driftShown          bool // the drift is of a field the release set: shown, for Helm 3
	paused              bool // spec.paused
}

const (
	imagesDigest = "nginx@sha256:6af79ae5de407283dcea8b00d5c37ace95441fd58a8b1d2aa1ed93f5511bb18c"
	// imagesRich is a pod spec of fields the pod template warnings read,
	// holding nothing they warn about.
	imagesRich = "imagePullSecrets: [{name: regcred}], nodeSelector: {kubernetes.io/os: linux}, " +
		"volumes: [{name: conf, configMap: {name: conf, items: [{key: a, path: a}]}}], " +
		"containers: [{name: app, image: 'nginx:1.25', env: [{name: A, value: 'x'}, {name: B, value: 'y'}], " +
		"ports: [{name: http, containerPort: 8080}, {name: metrics, containerPort: 9090}], " +
		"resources: {requests: {memory: 64Mi, cpu: 100m}, limits: {memory: 128Mi}}, volumeMounts: [{name: conf, mountPath: /etc/conf}]}]"
)

// imagesCases are the pod controllers of imagesChart: a Deployment's
// container image change is derived where the pod template warnings are
// certainly empty, asked where anything else of the spec changes, the
// template may be warned about, or the kind is another.
var imagesCases = []imagesCase{
	// Derived.
	{name: "tag", pod: "containers: [{name: app, image: 'nginx:1.25'}]", prediction: "derived", class: "rolling"},
	{name: "digest", v1: "containers: [{name: app, image: 'nginx:1.25'}]", v2: "containers: [{name: app, image: '" + imagesDigest + "'}]", prediction: "derived", class: "rolling"},
	{name: "init", v1: "initContainers: [{name: init, image: 'busybox:1.36'}], containers: [{name: app, image: 'nginx:1.25'}]",
		v2: "initContainers: [{name: init, image: 'busybox:1.37'}], containers: [{name: app, image: 'nginx:1.26'}]", prediction: "derived", class: "rolling"},
	{name: "oneoftwo", v1: "containers: [{name: app, image: 'nginx:1.25'}, {name: side, image: 'busybox:1.36'}]",
		v2: "containers: [{name: app, image: 'nginx:1.25'}, {name: side, image: 'busybox:1.37'}]", prediction: "derived", class: "rolling"},
	{name: "bumped", pod: "containers: [{name: app, image: 'nginx:1.25'}]", labels: [2]string{"helm.sh/chart: img-1.0.0", "helm.sh/chart: img-2.0.0"}, prediction: "derived", class: "rolling"},
	{name: "registry", v1: "containers: [{name: app, image: 'registry.example.com:5000/team/app:1.0'}]", v2: "containers: [{name: app, image: 'registry.example.com:5000/team/app:1.1'}]", prediction: "derived", class: "rolling"},
	{name: "grace", pod: "terminationGracePeriodSeconds: 30, containers: [{name: app, image: 'nginx:1.25'}]", prediction: "derived", class: "rolling"},
	{name: "pullsecrets", pod: "imagePullSecrets: [{name: a}, {name: b}], containers: [{name: app, image: 'nginx:1.25'}]", prediction: "derived", class: "rolling"},
	// kubectl rollout restart's annotation, kept by the patch and the apply
	// (not drift: the release never set it).
	{name: "restarted", pod: "containers: [{name: app, image: 'nginx:1.25'}]", prediction: "derived", class: "rolling",
		drift: `{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":"2026-12-03T00:00:00Z"}}}}}`},
	// An image set by hand: Helm 3's patch puts the chart's new one in its
	// place (drift shown, reverted); Helm 4's apply conflicts with the
	// manager that set it (asked).
	{name: "sethand", pod: "containers: [{name: app, image: 'nginx:1.25'}]", prediction: "derived", class: "rolling",
		drift: `{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:1.25-alpine"}]}}}}`, driftShown: true,
		prediction4: "server", class4: "invalid"},
	{name: "paused", pod: "containers: [{name: app, image: 'nginx:1.25'}]", paused: true, prediction: "derived", class: "rolling"},
	{name: "cpu", pod: "containers: [{name: app, image: 'nginx:1.25', resources: {limits: {memory: 512Mi, cpu: 500m}}}]", prediction: "derived", class: "rolling"},
	// Not an image reference, yet what a template's validation accepts.
	{name: "oddref", v1: "containers: [{name: app, image: 'nginx:1.25'}]", v2: "containers: [{name: app, image: 'Not A//valid::ref'}]", prediction: "derived", class: "rolling"},
	// The pull policy defaulted at the install (IfNotPresent for a tag,
	// Always for latest or none) is kept: it is not defaulted again.
	{name: "latest", v1: "containers: [{name: app, image: 'nginx:1.25'}]", v2: "containers: [{name: app, image: 'nginx:latest'}]", prediction: "derived", class: "rolling"},
	{name: "untagged", v1: "containers: [{name: app, image: 'nginx:1.25'}]", v2: "containers: [{name: app, image: nginx}]", prediction: "derived", class: "rolling"},
	{name: "fromuntagged", v1: "containers: [{name: app, image: nginx}]", v2: "containers: [{name: app, image: 'nginx:1.26'}]", prediction: "derived", class: "rolling"},
	{name: "tagdigest", v1: "containers: [{name: app, image: 'nginx:1.25'}]", v2: "containers: [{name: app, image: 'nginx:1.26@" + imagesDigest[len("nginx@"):] + "'}]", prediction: "derived", class: "rolling"},
	{name: "sidecar", v1: "initContainers: [{name: proxy, image: 'envoy:1.30', restartPolicy: Always}], containers: [{name: app, image: 'nginx:1.25'}]",
		v2: "initContainers: [{name: proxy, image: 'envoy:1.31', restartPolicy: Always}], containers: [{name: app, image: 'nginx:1.25'}]", prediction: "derived", class: "rolling"},
	{name: "checksum", annotations: "checksum/config: abc", pod: "containers: [{name: app, image: 'nginx:1.25'}]", prediction: "derived", class: "rolling"},
	// What charts render from empty values (helm create's chart renders
	// both securityContexts and resources as {}): derived where the server
	// stores what Helm's patch or apply leaves, asked where they send an
	// empty list or map the live object lacks (the server drops it), or a
	// null the server puts back (resources: {}), and Helm 4's apply of a
	// null env.
	{name: "emptyres", pod: "containers: [{name: app, image: 'nginx:1.25', resources: {}}]", prediction: "derived", class: "rolling"},
	{name: "emptypodsc", pod: "securityContext: {}, containers: [{name: app, image: 'nginx:1.25'}]", prediction: "derived", class: "rolling"},
	{name: "emptysc", pod: "containers: [{name: app, image: 'nginx:1.25', securityContext: {}}]", prediction: "derived", class: "rolling"},
	{name: "nullvolumes", pod: "volumes: null, containers: [{name: app, image: 'nginx:1.25'}]", prediction: "derived", class: "rolling"},
	{name: "nullenv", pod: "containers: [{name: app, image: 'nginx:1.25', env: null}]", prediction: "derived", class: "rolling", prediction4: "server"},
	{name: "nullres", pod: "containers: [{name: app, image: 'nginx:1.25', resources: null}]", prediction: "server", class: "rolling"},
	{name: "emptyenv", pod: "containers: [{name: app, image: 'nginx:1.25', env: []}]", prediction: "server", class: "rolling"},
	{name: "emptyvolumes", pod: "volumes: [], containers: [{name: app, image: 'nginx:1.25'}]", prediction: "server", class: "rolling"},
	{name: "emptyselector", pod: "nodeSelector: {}, tolerations: [], containers: [{name: app, image: 'nginx:1.25', ports: []}]", prediction: "server", class: "rolling"},
	{name: "hostport", pod: "containers: [{name: app, image: 'nginx:1.25', ports: [{containerPort: 8080, hostPort: 8080}]}]", prediction: "derived", class: "rolling"},
	{name: "tcpudp", pod: "containers: [{name: app, image: 'nginx:1.25', ports: [{containerPort: 53}]}, {name: side, image: 'busybox:1.36', ports: [{containerPort: 53, protocol: UDP}]}]", prediction: "derived", class: "rolling"},
	{name: "volumes", pod: "volumes: [{name: a, emptyDir: {}}, {name: b, secret: {secretName: s, items: [{key: k, path: k}]}}, " +
		"{name: d, persistentVolumeClaim: {claimName: data}}, {name: e, hostPath: {path: /var/log}}], containers: [{name: app, image: 'nginx:1.25'}]", prediction: "derived", class: "rolling"},
	{name: "probes", pod: "serviceAccountName: default, tolerations: [{key: k, operator: Exists}], containers: [{name: app, image: 'nginx:1.25', " +
		"livenessProbe: {httpGet: {path: /, port: 80}}, readinessProbe: {tcpSocket: {port: 80}}, lifecycle: {preStop: {sleep: {seconds: 5}}}}]", prediction: "derived", class: "rolling"},
	{name: "rich", pod: imagesRich, prediction: "derived", class: "rolling"},

	// Asked: more than the images changes.
	{name: "command", v1: "containers: [{name: app, image: 'nginx:1.25'}]", v2: "containers: [{name: app, image: 'nginx:1.26', command: [nginx, -g, 'daemon off;']}]", prediction: "server", class: "rolling"},
	{name: "renamed", v1: "containers: [{name: app, image: 'nginx:1.25'}]", v2: "containers: [{name: web, image: 'nginx:1.26'}]", prediction: "server", class: "rolling"},
	{name: "reordered", v1: "containers: [{name: app, image: 'nginx:1.25'}, {name: side, image: 'busybox:1.36'}]",
		v2: "containers: [{name: side, image: 'busybox:1.36'}, {name: app, image: 'nginx:1.26'}]", prediction: "server", class: "rolling"},
	// Quantities not in the server's canonical form: Helm 3's patch sends
	// them again (0.5Gi against the live 512Mi), and Helm 4's apply holds
	// them, so more than the images changes.
	{name: "noncanonical", pod: "containers: [{name: app, image: 'nginx:1.25', resources: {limits: {memory: '0.5Gi', cpu: '0.5'}}}]", prediction: "server", class: "rolling"},
	// The commonest upgrade beside the image: a config checksum changes.
	{name: "rechecked", annotations: "checksum/config: 'sum%d'", pod: "containers: [{name: app, image: 'nginx:1.25'}]", prediction: "server", class: "rolling"},
	// A downward API item's fieldRef, whose apiVersion the server
	// defaults: the items are an atomic list, which Helm 3's patch and
	// Helm 4's apply send whole, without it.
	{name: "downward", pod: "volumes: [{name: c, downwardAPI: {items: [{path: labels, fieldRef: {fieldPath: metadata.labels}}]}}], containers: [{name: app, image: 'nginx:1.25'}]",
		prediction: "server", class: "rolling"},
	// A field the server does not know: Helm 3's patch sends it every time
	// (the live object lacks it).
	{name: "unknown", pod: "containers: [{name: app, image: 'nginx:1.25', colour: blue}]", prediction: "server", class: "rolling", helm3: true},
	{name: "added", v1: "containers: [{name: app, image: 'nginx:1.25'}]", v2: "containers: [{name: app, image: 'nginx:1.26'}, {name: side, image: 'busybox:1.36'}]", prediction: "server", class: "rolling"},
	// Asked: the server warns about the template.
	{name: "betaos", pod: "nodeSelector: {beta.kubernetes.io/os: linux}, containers: [{name: app, image: 'nginx:1.25'}]", prediction: "server", class: "rolling", warns: "nodeSelector[beta.kubernetes.io/os]"},
	{name: "fracmem", pod: "containers: [{name: app, image: 'nginx:1.25', resources: {limits: {memory: 500m}}}]", prediction: "server", class: "rolling", warns: "fractional byte value"},
	{name: "dupenv", pod: "containers: [{name: app, image: 'nginx:1.25', env: [{name: A, value: 'x'}, {name: A, value: 'y'}]}]", prediction: "server", class: "rolling", warns: "hides previous definition",
		helm3: true},
	{name: "dupport", pod: "containers: [{name: app, image: 'nginx:1.25', ports: [{containerPort: 8080}]}, {name: side, image: 'busybox:1.36', ports: [{containerPort: 8080}]}]", prediction: "server", class: "rolling", warns: "duplicate port definition"},
	{name: "spread", pod: "topologySpreadConstraints: [{maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: ScheduleAnyway}], containers: [{name: app, image: 'nginx:1.25'}]", prediction: "server", class: "rolling", warns: "labelSelector"},
	{name: "seccomp", annotations: "seccomp.security.alpha.kubernetes.io/pod: runtime/default",
		pod: "containers: [{name: app, image: 'nginx:1.25'}]", prediction: "server", class: "rolling", warns: "seccomp"},
	{name: "graceneg", pod: "terminationGracePeriodSeconds: -1, containers: [{name: app, image: 'nginx:1.25'}]", prediction: "server", class: "rolling", warns: "terminationGracePeriodSeconds: must be >= 0"},
	{name: "pulldup", pod: "imagePullSecrets: [{name: a}, {name: a}], containers: [{name: app, image: 'nginx:1.25'}]", prediction: "server", class: "rolling", warns: "imagePullSecrets[1].name: duplicate name", helm3: true},
	{name: "hostip", pod: "containers: [{name: app, image: 'nginx:1.25', ports: [{containerPort: 8080, hostIP: 127.0.0.1}]}]", prediction: "server", class: "rolling", warns: "hostIP set without hostPort"},
	{name: "portname", pod: "containers: [{name: app, image: 'nginx:1.25', ports: [{name: http, containerPort: 8080}]}, {name: side, image: 'busybox:1.36', ports: [{name: http, containerPort: 8081}]}]", prediction: "server", class: "rolling", warns: "duplicate port name"},
	{name: "ephemeral", pod: "containers: [{name: app, image: 'nginx:1.25', resources: {requests: {ephemeral-storage: 1500m}}}]", prediction: "server", class: "rolling", warns: "requests[ephemeral-storage]: fractional byte value"},
	{name: "overlap", pod: "volumes: [{name: conf, configMap: {name: conf, items: [{key: a, path: etc}, {key: b, path: etc/b}]}}], containers: [{name: app, image: 'nginx:1.25'}]", prediction: "server", class: "rolling", warns: "overlapping paths"},
	{name: "antiaffinity", pod: "affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: kubernetes.io/hostname}]}}, containers: [{name: app, image: 'nginx:1.25'}]", prediction: "server", class: "rolling", warns: "podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector"},
	{name: "apparmor", annotations: "container.apparmor.security.beta.kubernetes.io/app: runtime/default",
		pod: "containers: [{name: app, image: 'nginx:1.25'}]", prediction: "server", class: "rolling", warns: "appArmorProfile"},
	// Asked though the server does not warn: affinity is not reproduced,
	// nor are the items of more than one of a volume.
	{name: "affinity", pod: "affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: kubernetes.io/os, operator: In, values: [linux]}]}]}}}, containers: [{name: app, image: 'nginx:1.25'}]", prediction: "server", class: "rolling"},
	{name: "envref", pod: "containers: [{name: app, image: 'nginx:1.25', env: [{name: A, value: 'x'}, {name: A, value: '$(A)y'}]}]", prediction: "server", class: "rolling", helm3: true},
	{name: "dns", pod: "dnsConfig: {nameservers: [192.0.2.53]}, containers: [{name: app, image: 'nginx:1.25'}]", prediction: "server", class: "rolling"},
	{name: "hosts", pod: "hostAliases: [{ip: 192.0.2.1, hostnames: [a.example]}], containers: [{name: app, image: 'nginx:1.25'}]", prediction: "server", class: "rolling"},
	{name: "items", pod: "volumes: [{name: conf, configMap: {name: conf, items: [{key: a, path: a}, {key: b, path: b}]}}], containers: [{name: app, image: 'nginx:1.25'}]", prediction: "server", class: "rolling"},
	// Asked: not a derived kind; an image the server refuses (empty) or its
	// pods would (surrounding spaces: a template's validation accepts it).
	{name: "sts", kind: "StatefulSet", pod: "containers: [{name: app, image: 'nginx:1.25'}]", prediction: "server", class: "rolling"},
	{name: "empty", v1: "containers: [{name: app, image: 'nginx:1.25'}]", v2: "containers: [{name: app, image: ''}]", prediction: "server", class: "invalid"},
	{name: "space", v1: "containers: [{name: app, image: 'nginx:1.25'}]", v2: "containers: [{name: app, image: 'nginx:1.26 '}]", prediction: "server", class: "rolling"},
}

// imagesChart is the chart of imagesCases at version (1 or 2), for a Helm
// 4 release if helm4.
func imagesChart(t *testing.T, version int, helm4 bool) string {
	templates := map[string]string{}
	for _, ic := range imagesCases {
		if helm4 && ic.helm3 {
			continue
		}
		kind, extra := "Deployment", ""
		if ic.kind == "StatefulSet" {
			kind, extra = ic.kind, "  serviceName: "+ic.name+"\n"
		}
		meta := "metadata: {name: " + ic.name + "}"
		if l := ic.labels[version-1]; l != "" {
			meta = "metadata: {name: " + ic.name + ", labels: {" + l + "}}"
		}
		tplMeta := "{labels: {app: " + ic.name + "}}"
		if a := ic.annotations; a != "" {
			if strings.Contains(a, "%d") {
				a = fmt.Sprintf(a, version)
			}
			tplMeta = "{labels: {app: " + ic.name + "}, annotations: {" + a + "}}"
		}
		pod := ic.v1
		switch {
		case ic.pod != "" && version == 1:
			pod = ic.pod
		case ic.pod != "":
			pod = strings.ReplaceAll(ic.pod, "nginx:1.25", "nginx:1.26")
		case version == 2:
			pod = ic.v2
		}
		if ic.paused {
			extra += "  paused: true\n"
		}
		templates[ic.name+".yaml"] = fmt.Sprintf("apiVersion: apps/v1\nkind: %s\n%s\nspec:\n  replicas: 0\n%s"+
			"  selector: {matchLabels: {app: %s}}\n  template:\n    metadata: %s\n    spec: {%s}\n", kind, meta, extra, ic.name, tplMeta, pod)
	}
	return writeChart(t, "img", fmt.Sprintf("%d.0.0", version), templates)
}

// TestDerivedImages (issue 41): a Deployment's container image change of a
// Helm 3 release is derived without a dry-run where its pod template holds
// nothing the server warns about, and asked where more than the images
// changes, the template may be warned about, or the kind is not a
// Deployment; every verdict is the one --server-dry-run=all gets from the
// server, the default plan prints the server's warnings, and the audit log
// shows exactly the asked objects sent.
func TestDerivedImages(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	c.Helm(t, "install", "img", imagesChart(t, 1, false), "-n", ns)
	derivedImages(t, c, ns, false)
}

// TestHelm4DerivedImages is TestDerivedImages for a Helm 4 (server-side
// apply) release: the images the field manager merges.
func TestHelm4DerivedImages(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	mustBin(t, c, c.Helm4, "install", "img", imagesChart(t, 1, true), "-n", ns)
	derivedImages(t, c, ns, true)
}

// derivedImages plans imagesChart's version 2 of release img in ns by
// default and with --server-dry-run=all and compares each object's
// verdicts and the warnings printed; helm4 says the release is Helm 4's.
func derivedImages(t *testing.T, c *testcluster.Cluster, ns string, helm4 bool) {
	t.Helper()
	for _, ic := range imagesCases {
		if ic.drift == "" {
			continue
		}
		if _, err := c.Clientset(t).AppsV1().Deployments(ns).Patch(t.Context(), ic.name, types.StrategicMergePatchType, []byte(ic.drift), metav1.PatchOptions{}); err != nil {
			t.Fatalf("drifting Deployment/%s: %v", ic.name, err)
		}
	}
	settled(t, c, ns)
	byDefault, asked, r1, r2, sent := planBothWays(t, c, ns, "img", imagesChart(t, 2, helm4), "deployments", "statefulsets")
	var outcomes, texts []string
	for _, ic := range imagesCases {
		if helm4 && ic.helm3 {
			continue
		}
		kind := "Deployment"
		if ic.kind != "" {
			kind = ic.kind
		}
		prediction, class := ic.prediction, ic.class
		if helm4 && ic.prediction4 != "" {
			prediction = ic.prediction4
		}
		if helm4 && ic.class4 != "" {
			class = ic.class4
		}
		d, outcome := compareChange(t, byDefault, asked, kind, ic.name, prediction, class, sent)
		outcomes = append(outcomes, outcome)
		if ic.driftShown && !helm4 && len(d.Drift) == 0 {
			t.Errorf("%s/%s: no drift shown of the change made by hand", kind, ic.name)
		}
		if ic.warns != "" {
			texts = append(texts, ic.warns)
		}
	}
	logOutcomes(t, r1, r2, outcomes, sent)
	// Every warning the server printed, those of the cases and any other.
	w1, w2 := warningLines(r1.Stderr, "Warning:"), warningLines(r2.Stderr, "Warning:")
	for _, text := range texts {
		if !slices.ContainsFunc(w2, func(l string) bool { return strings.Contains(l, text) }) {
			t.Errorf("--server-dry-run=all printed no warning holding %q: %q", text, w2)
		}
	}
	if !slices.Equal(w1, w2) {
		t.Errorf("warnings differ:\ndefault %q\nall     %q", w1, w2)
	}
	t.Logf("why asked: %q", warningLines(r1.Stderr, "derived without a dry-run"))
	t.Logf("warnings printed:\n%s", strings.Join(w2, "\n"))
}

// settled waits until the controllers have done with the pod controllers
// of ns (the revision annotation and the status of a Deployment), so that
// both plans start from the same live objects.
func settled(t *testing.T, c *testcluster.Cluster, ns string) {
	t.Helper()
	cs := c.Clientset(t)
	waitFor(t, "the Deployments and StatefulSets of "+ns+" observed", func() bool {
		ds, err := cs.AppsV1().Deployments(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, d := range ds.Items {
			progressed := false
			for _, cond := range d.Status.Conditions {
				progressed = progressed || cond.Type == appsv1.DeploymentProgressing &&
					(cond.Reason == "NewReplicaSetAvailable" || d.Spec.Paused && cond.Reason == "DeploymentPaused")
			}
			if d.Status.ObservedGeneration != d.Generation || !progressed {
				return false
			}
		}
		ss, err := cs.AppsV1().StatefulSets(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, s := range ss.Items {
			if s.Status.ObservedGeneration != s.Generation {
				return false
			}
		}
		return true
	})
}

// podSecurityImagesChart is two Deployments whose only change is their
// image: one whose template passes PodSecurity's restricted level, one
// whose template does not.
func podSecurityImagesChart(t *testing.T, image string) string {
	deployment := func(name, podSecurity, containerSecurity string) string {
		return fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: %[1]s}\nspec:\n  replicas: 0\n"+
			"  selector: {matchLabels: {app: %[1]s}}\n  template:\n    metadata: {labels: {app: %[1]s}}\n"+
			"    spec: {%[2]scontainers: [{name: app, image: '%[3]s'%[4]s}]}\n", name, podSecurity, image, containerSecurity)
	}
	return writeChart(t, "psa", "1.0.0", map[string]string{
		"compliant.yaml": deployment("compliant", "securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}, ",
			", securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}"),
		"plain.yaml": deployment("plain", "", ""),
	})
}

// TestDerivedImagesPodSecurity: in a namespace whose PodSecurity warn level
// is restricted (its warn label, or its enforce label, which a warn level
// follows), the image change of a Deployment whose template passes
// restricted is derived, with no warning either way, and that of one whose
// template fails it is asked, the default plan printing the server's
// PodSecurity warning as --server-dry-run=all does; at baseline, which
// both pass, both are derived. Helm 3 and Helm 4 releases alike.
func TestDerivedImagesPodSecurity(t *testing.T) {
	c := testcluster.Get(t)
	levels := []struct{ name, labels, plain, warning string }{
		{"warn", `"pod-security.kubernetes.io/warn":"restricted"`, "server", `"restricted:latest"`},
		{"pinned", `"pod-security.kubernetes.io/warn":"restricted","pod-security.kubernetes.io/warn-version":"v1.30"`, "server", `"restricted:v1.30"`},
		{"enforce", `"pod-security.kubernetes.io/enforce":"restricted"`, "server", `"restricted:latest"`},
		{"baseline", `"pod-security.kubernetes.io/warn":"baseline"`, "derived", ""},
	}
	eachHelm(t, c, func(t *testing.T, bin string) {
		for _, level := range levels {
			t.Run(level.name, func(t *testing.T) {
				ns := c.Namespace(t)
				labelNamespace(t, c, ns, level.labels)
				mustBin(t, c, bin, "install", "psa", podSecurityImagesChart(t, "nginx:1.25"), "-n", ns)
				settled(t, c, ns)
				byDefault, asked, r1, r2, sent := planBothWays(t, c, ns, "psa", podSecurityImagesChart(t, "nginx:1.26"), "deployments")
				var outcomes []string
				for _, d := range []struct{ name, prediction string }{{"compliant", "derived"}, {"plain", level.plain}} {
					_, outcome := compareChange(t, byDefault, asked, "Deployment", d.name, d.prediction, "rolling", sent)
					outcomes = append(outcomes, outcome)
				}
				logOutcomes(t, r1, r2, outcomes, sent)
				w1, w2 := podSecurityWarnings(r1.Stderr), podSecurityWarnings(r2.Stderr)
				if level.warning == "" && len(w2) != 0 {
					t.Errorf("--server-dry-run=all: PodSecurity warnings %q, want none", w2)
				}
				if level.warning != "" && (len(w2) != 1 || !strings.Contains(w2[0], level.warning)) {
					t.Errorf("--server-dry-run=all: PodSecurity warnings %q, want one of %s, of the plain Deployment", w2, level.warning)
				}
				if !slices.Equal(w1, w2) {
					t.Errorf("PodSecurity warnings differ:\ndefault %q\nall     %q", w1, w2)
				}
			})
		}
	})
}
