package planner

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

const configMapDoc = `---
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data: {%s}
`

const deploymentDoc = `---
apiVersion: apps/v1
kind: Deployment
metadata: {name: %s}
spec:
  selector: {matchLabels: {app: %s}}
  template:
    metadata: {labels: {app: %s}, annotations: {%s}}
    spec:
      containers:
      - name: app
        image: busybox
%s
`

func deployment(name, annotations, containerYAML string) string {
	return strings.NewReplacer("%s", name).Replace(strings.Replace(strings.Replace(deploymentDoc, "annotations: {%s}", "annotations: {"+annotations+"}", 1), "%s\n", containerYAML+"\n", 1))
}

// readers is four Deployments reading ConfigMap cfg: A through envFrom and
// key a through env, B a subPath file, C the whole volume, D through
// envFrom with a checksum annotation the head changes.
func readers(checksum string) string {
	return deployment("a", "", `        envFrom: [{configMapRef: {name: cfg}}]
        env: [{name: A, valueFrom: {configMapKeyRef: {name: cfg, key: a}}}]`) +
		deployment("b", "", `        volumeMounts: [{name: c, mountPath: /etc/b.txt, subPath: b}]
      volumes: [{name: c, configMap: {name: cfg}}]`) +
		deployment("c", "", `        volumeMounts: [{name: c, mountPath: /etc/cfg}]
      volumes: [{name: c, configMap: {name: cfg}}]`) +
		deployment("d", "checksum/config: "+checksum, `        envFrom: [{configMapRef: {name: cfg}}]`)
}

// workloadsFake lists objects of one namespace by kind.
type workloadsFake map[string][]string

func (f workloadsFake) EachObject(_ context.Context, gvk schema.GroupVersionKind, _ string, each func(*unstructured.Unstructured)) error {
	for _, doc := range f[gvk.Kind] {
		var obj map[string]interface{}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			return err
		}
		each(&unstructured.Unstructured{Object: obj})
	}
	return nil
}

// forbiddenLister may list no workload.
type forbiddenLister struct{}

func (forbiddenLister) EachObject(context.Context, schema.GroupVersionKind, string, func(*unstructured.Unstructured)) error {
	return errors.New("forbidden")
}

func TestConfigConsumers(t *testing.T) {
	outside := deployment("outside", "", `        env: [{name: P, valueFrom: {secretKeyRef: {name: creds, key: password}}}]`)
	done := "apiVersion: v1\nkind: Pod\nmetadata: {name: test-pod}\nspec: {containers: [{name: t, envFrom: [{secretRef: {name: creds}}]}]}\nstatus: {phase: Succeeded}\n"
	owned := strings.Replace(outside, "metadata: {name: outside}", "metadata: {name: owned, ownerReferences: [{apiVersion: apps/v1, kind: Deployment, name: x, uid: u, controller: true}]}", 1)
	tests := []struct {
		name        string
		base, head  string
		workloads   WorkloadLister
		object      string
		want        map[string]plan.Sight // workload name and via → sight
		destructive bool
		stale       [2]int
		note        string
	}{
		{name: "one value changes: env readers stale, file updated, checksum rolls",
			base: strings.Replace(configMapDoc, "%s", "a: '1', b: '1'", 1) + readers("one"), head: strings.Replace(configMapDoc, "%s", "a: '1', b: '2'", 1) + readers("two"),
			object: "cfg", want: map[string]plan.Sight{"a envFrom": plan.SightStale, "a env": plan.SightUnaffected, "b subPath": plan.SightStale, "c volume": plan.SightFile, "d envFrom": plan.SightRolls},
			stale: [2]int{1, 2}, note: insideOnly},
		{name: "a key read through env without optional removed: the next pod fails",
			base: strings.Replace(configMapDoc, "%s", "a: '1', b: '1'", 1) + readers("one"), head: strings.Replace(configMapDoc, "%s", "b: '1'", 1) + readers("one"),
			object: "cfg", want: map[string]plan.Sight{"a envFrom": plan.SightStale, "a env": plan.SightFails, "b subPath": plan.SightUnaffected, "c volume": plan.SightFile, "d envFrom": plan.SightStale},
			destructive: true, stale: [2]int{1, 2}},
		{name: "metadata only: no reader listed",
			base: strings.Replace(configMapDoc, "%s", "a: '1'", 1) + readers("one"), head: strings.Replace(strings.Replace(configMapDoc, "%s", "a: '1'", 1), "{name: cfg}", "{name: cfg, labels: {x: y}}", 1) + readers("one"),
			object: "cfg", want: map[string]plan.Sight{}},
		{name: "a Secret read by a Deployment outside the release; not by its controlled copy nor a finished Pod",
			base: strings.Replace(secret, "%s", "old-hunter2", 1), head: strings.Replace(secret, "%s", "new-hunter2", 1),
			workloads: workloadsFake{"Deployment": {outside, owned}, "Pod": {done}},
			object:    "creds", want: map[string]plan.Sight{"outside env": plan.SightStale}, stale: [2]int{1, 1}},
		{name: "workloads outside the release that may not be listed: one note",
			base: strings.Replace(secret, "%s", "old-hunter2", 1), head: strings.Replace(secret, "%s", "new-hunter2", 1),
			workloads: forbiddenLister{}, object: "creds", want: map[string]plan.Sight{},
			note: "outside the release were not all read: listing CronJob, DaemonSet, Deployment, Job, Pod, ReplicaSet, StatefulSet in prod: forbidden"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := readersPlan(t, Input{PreviousManifest: tt.base, NextManifest: tt.head}, tt.workloads)
			for _, ch := range p.Changes {
				if ch.ID.Name != tt.object {
					continue
				}
				got := map[string]plan.Sight{}
				for _, u := range ch.Consumers {
					got[u.Workload.Name+" "+string(u.Via)] = u.Sees
					if tt.workloads != nil && !u.Outside {
						t.Errorf("%s: not marked outside the release", u.Text())
					}
					if text := u.Text(); strings.Contains(text, "hunter2") {
						t.Errorf("a Secret value in %q", text)
					}
				}
				if len(got) != len(tt.want) {
					t.Errorf("consumers %+v, want %v", ch.Consumers, tt.want)
				}
				for k, s := range tt.want {
					if got[k] != s {
						t.Errorf("%s sees %q, want %q (all: %+v)", k, got[k], s, ch.Consumers)
					}
				}
				if ch.Destructive != tt.destructive {
					t.Errorf("destructive %v, want %v (reasons %+v)", ch.Destructive, tt.destructive, ch.Reasons)
				}
				if tt.destructive && (ch.Fingerprint == "" || !strings.Contains(ch.Reasons[len(ch.Reasons)-1].Message, "Deployment/a")) {
					t.Errorf("a failing reader is not a fingerprinted reason naming it: %+v", ch)
				}
			}
			if n, m := p.StaleConfig(); [2]int{n, m} != tt.stale {
				t.Errorf("StaleConfig %d, %d, want %v", n, m, tt.stale)
			}
			if tt.note != "" && !strings.Contains(strings.Join(p.Notes, "\n"), tt.note) {
				t.Errorf("notes %q lack %q", p.Notes, tt.note)
			}
		})
	}
}

// readersPlan plans in offline, as release app in namespace prod, with
// workloads (nil: none) outside the release.
func readersPlan(t *testing.T, in Input, workloads WorkloadLister) *plan.Plan {
	t.Helper()
	c := Offline{Release: "app", Namespace: "prod"}.Parts()
	if workloads != nil {
		c.Workloads = workloads
	}
	in.Release = plan.Release{Name: "app", Namespace: "prod"}
	p, err := New(c, "").Plan(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestServiceAccountPullSecrets: a Secret the release's ServiceAccount
// lists in imagePullSecrets is read by the pods of the workloads that run
// as it (the API server copies the list into each pod it creates), used
// at their next image pull; a workload running as another ServiceAccount
// does not read it.
func TestServiceAccountPullSecrets(t *testing.T) {
	registry := func(v string) string {
		return "---\napiVersion: v1\nkind: Secret\nmetadata: {name: registry}\ntype: kubernetes.io/dockerconfigjson\nstringData: {.dockerconfigjson: '{\"auths\":{\"r\":{\"auth\":\"" + v + "\"}}}'}\n"
	}
	sa := "---\napiVersion: v1\nkind: ServiceAccount\nmetadata: {name: builder}\nimagePullSecrets: [{name: registry}]\n"
	puller := strings.Replace(deployment("puller", "", ""), "      containers:", "      serviceAccountName: builder\n      containers:", 1)
	other := deployment("other", "", "")
	p := readersPlan(t, Input{PreviousManifest: registry("old-hunter2") + sa + puller + other, NextManifest: registry("new-hunter2") + sa + puller + other}, nil)
	var got []string
	for _, ch := range p.Changes {
		for _, u := range ch.Consumers {
			got = append(got, u.Text())
		}
	}
	want := []string{"Deployment/puller uses it at its next image pull (imagePullSecrets of ServiceAccount builder)"}
	if !slices.Equal(got, want) {
		t.Errorf("readers %q, want %q", got, want)
	}
}
