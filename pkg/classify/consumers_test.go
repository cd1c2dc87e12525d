package classify

import (
	"reflect"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

func TestConfigRefs(t *testing.T) {
	tests := []struct {
		name        string
		group, kind string
		doc         string
		want        []ConfigRef
	}{
		{name: "env valueFrom, optional and not", group: "apps", kind: "Deployment", doc: `
spec: {template: {spec: {containers: [{name: app, env: [
  {name: A, valueFrom: {configMapKeyRef: {name: cfg, key: a}}},
  {name: P, valueFrom: {secretKeyRef: {name: creds, key: password, optional: true}}},
  {name: PLAIN, value: x}]}]}}}`,
			want: []ConfigRef{
				{Kind: "ConfigMap", Name: "cfg", Container: "app", Via: plan.ViaEnv, Key: "a", Env: "A"},
				{Kind: "Secret", Name: "creds", Container: "app", Via: plan.ViaEnv, Key: "password", Env: "P", Optional: true},
			}},
		{name: "envFrom with a prefix, of an init container", group: "apps", kind: "StatefulSet", doc: `
spec: {template: {spec: {initContainers: [{name: init, envFrom: [{prefix: CFG_, configMapRef: {name: cfg}}]}],
  containers: [{name: app, envFrom: [{secretRef: {name: creds, optional: true}}]}]}}}`,
			want: []ConfigRef{
				{Kind: "ConfigMap", Name: "cfg", Container: "init", Via: plan.ViaEnvFrom, Env: "CFG_"},
				{Kind: "Secret", Name: "creds", Container: "app", Via: plan.ViaEnvFrom, Optional: true},
			}},
		{name: "whole volume, subPath, items", group: "apps", kind: "DaemonSet", doc: `
spec: {template: {spec: {
  volumes: [{name: whole, configMap: {name: cfg}}, {name: some, secret: {secretName: tls, items: [{key: tls.crt, path: cert.pem}]}}],
  containers: [{name: app, volumeMounts: [{name: whole, mountPath: /etc/cfg}, {name: whole, mountPath: /etc/app.yaml, subPath: app.yaml},
    {name: some, mountPath: /tls/cert.pem, subPath: cert.pem}, {name: some, mountPath: /tls}]}]}}}`,
			want: []ConfigRef{
				{Kind: "ConfigMap", Name: "cfg", Container: "app", Via: plan.ViaVolume},
				{Kind: "ConfigMap", Name: "cfg", Container: "app", Via: plan.ViaSubPath, Key: "app.yaml"},
				{Kind: "Secret", Name: "tls", Container: "app", Via: plan.ViaSubPath, Key: "tls.crt"},
				{Kind: "Secret", Name: "tls", Container: "app", Via: plan.ViaVolume, Key: "tls.crt"},
			}},
		{name: "projected sources, a subPath in the second source", group: "batch", kind: "CronJob", doc: `
spec: {jobTemplate: {spec: {template: {spec: {
  volumes: [{name: p, projected: {sources: [{configMap: {name: cfg, items: [{key: a, path: a.txt}]}}, {secret: {name: creds, optional: true}}, {serviceAccountToken: {path: token}}]}}],
  containers: [{name: job, volumeMounts: [{name: p, mountPath: /p}, {name: p, mountPath: /pw, subPath: password}]}]}}}}}`,
			want: []ConfigRef{
				{Kind: "ConfigMap", Name: "cfg", Container: "job", Via: plan.ViaVolume, Key: "a"},
				{Kind: "Secret", Name: "creds", Container: "job", Via: plan.ViaVolume, Optional: true},
				{Kind: "Secret", Name: "creds", Container: "job", Via: plan.ViaSubPath, Key: "password", Optional: true},
			}},
		{name: "a volume no container mounts, imagePullSecrets, of a Pod", group: "", kind: "Pod", doc: `
spec: {volumes: [{name: v, configMap: {name: cfg}}], imagePullSecrets: [{name: registry}], containers: [{name: app}]}`,
			want: []ConfigRef{
				{Kind: "ConfigMap", Name: "cfg", Via: plan.ViaVolume},
				{Kind: "Secret", Name: "registry", Via: plan.ViaImagePullSecrets},
			}},
		{name: "a Job's template", group: "batch", kind: "Job", doc: `
spec: {template: {spec: {containers: [{name: j, envFrom: [{configMapRef: {name: cfg}}]}]}}}`,
			want: []ConfigRef{{Kind: "ConfigMap", Name: "cfg", Container: "j", Via: plan.ViaEnvFrom}}},
		{name: "not a workload kind", group: "", kind: "ConfigMap", doc: `data: {a: b}`},
		{name: "a Deployment of another group is not one", group: "example.com", kind: "Deployment", doc: `
spec: {template: {spec: {containers: [{name: app, envFrom: [{configMapRef: {name: cfg}}]}]}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var obj map[string]interface{}
			if err := yaml.Unmarshal([]byte(tt.doc), &obj); err != nil {
				t.Fatal(err)
			}
			got := ConfigRefs(tt.group, tt.kind, obj)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ConfigRefs:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}
