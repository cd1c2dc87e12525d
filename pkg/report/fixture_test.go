package report

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// obj builds an unstructured object from a literal map.
func obj(content map[string]interface{}) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: content}
}

func meta(name, namespace string) map[string]interface{} {
	return map[string]interface{}{
		"name":      name,
		"namespace": namespace,
		"labels":    map[string]interface{}{"app.kubernetes.io/name": "shop", "app.kubernetes.io/instance": "shop"},
	}
}

func postgres(storage string) *unstructured.Unstructured {
	return obj(map[string]interface{}{
		"apiVersion": "apps/v1",
		"kind":       "StatefulSet",
		"metadata":   meta("postgres", "shop"),
		"spec": map[string]interface{}{
			"replicas":    int64(1),
			"serviceName": "postgres",
			"selector":    map[string]interface{}{"matchLabels": map[string]interface{}{"app": "postgres"}},
			"template": map[string]interface{}{
				"metadata": map[string]interface{}{"labels": map[string]interface{}{"app": "postgres"}},
				"spec": map[string]interface{}{
					"containers": []interface{}{map[string]interface{}{
						"name":  "postgres",
						"image": "postgres:16.4",
						"volumeMounts": []interface{}{map[string]interface{}{
							"name": "data", "mountPath": "/var/lib/postgresql/data",
						}},
					}},
				},
			},
			"volumeClaimTemplates": []interface{}{map[string]interface{}{
				"metadata": map[string]interface{}{"name": "data"},
				"spec": map[string]interface{}{
					"accessModes": []interface{}{"ReadWriteOnce"},
					"resources":   map[string]interface{}{"requests": map[string]interface{}{"storage": storage}},
				},
			}},
		},
	})
}

func deployment(name, image string, replicas int64, labels map[string]interface{}) *unstructured.Unstructured {
	return obj(map[string]interface{}{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata":   meta(name, "shop"),
		"spec": map[string]interface{}{
			"replicas": replicas,
			"selector": map[string]interface{}{"matchLabels": map[string]interface{}{"app": name}},
			"strategy": map[string]interface{}{
				"type":          "RollingUpdate",
				"rollingUpdate": map[string]interface{}{"maxUnavailable": "25%", "maxSurge": "25%"},
			},
			"template": map[string]interface{}{
				"metadata": map[string]interface{}{"labels": labels},
				"spec": map[string]interface{}{
					"containers": []interface{}{map[string]interface{}{
						"name":  name,
						"image": image,
						"ports": []interface{}{map[string]interface{}{"containerPort": int64(8080)}},
					}},
				},
			},
		},
	})
}

func configMap(logLevel string) *unstructured.Unstructured {
	return obj(map[string]interface{}{
		"apiVersion": "v1",
		"kind":       "ConfigMap",
		"metadata":   meta("web-config", "shop"),
		"data":       map[string]interface{}{"LOG_LEVEL": logLevel, "LISTEN": ":8080"},
	})
}

func secret(password string) *unstructured.Unstructured {
	return obj(map[string]interface{}{
		"apiVersion": "v1",
		"kind":       "Secret",
		"metadata":   meta("db-credentials", "shop"),
		"type":       "Opaque",
		"data": map[string]interface{}{
			"username": "(sensitive: hmac-sha256:77c0ffee77c0ffee)",
			"password": password,
		},
	})
}

func service() *unstructured.Unstructured {
	return obj(map[string]interface{}{
		"apiVersion": "v1",
		"kind":       "Service",
		"metadata":   meta("web-public", "shop"),
		"spec": map[string]interface{}{
			"type":     "LoadBalancer",
			"selector": map[string]interface{}{"app": "web"},
			"ports": []interface{}{map[string]interface{}{
				"name": "http", "port": int64(80), "targetPort": int64(8080), "protocol": "TCP",
			}},
		},
	})
}

func migrateJob(image string) *unstructured.Unstructured {
	return obj(map[string]interface{}{
		"apiVersion": "batch/v1", "kind": "Job", "metadata": meta("db-migrate", "shop"),
		"spec": map[string]interface{}{"template": map[string]interface{}{"spec": map[string]interface{}{
			"restartPolicy": "Never",
			"containers":    []interface{}{map[string]interface{}{"name": "migrate", "image": image}},
		}}},
	})
}

func pvc() *unstructured.Unstructured {
	return obj(map[string]interface{}{
		"apiVersion": "v1",
		"kind":       "PersistentVolumeClaim",
		"metadata":   meta("uploads", "shop"),
		"spec": map[string]interface{}{
			"accessModes":      []interface{}{"ReadWriteOnce"},
			"storageClassName": "standard",
			"resources":        map[string]interface{}{"requests": map[string]interface{}{"storage": "5Gi"}},
		},
	})
}

func id(group, kind, name string) manifest.ObjectID {
	return manifest.ObjectID{Group: group, Kind: kind, Namespace: "shop", Name: name}
}

// secretValue is a value that must never appear in any output: the raw
// before/after of a Secret reason.
const secretValue = "hunter2-do-not-print"

// fixturePlan is a realistic plan with one change of every kind the report
// distinguishes. Changes are deliberately out of order.
func fixturePlan() *plan.Plan {
	return &plan.Plan{
		Release:       plan.Release{Name: "shop", Namespace: "shop", Revision: 8, CurrentRevision: 7, Chart: "shop-2.0.0"},
		ServerVersion: "v1.37.2",
		Changes: []plan.Change{
			{
				ID: id("", "ConfigMap", "web-config"), APIVersion: "v1",
				Action: plan.ActionUpdate, Class: plan.ClassInPlace, Prediction: plan.PredictionServer,
				Reasons: []plan.Reason{{Path: "data.LOG_LEVEL", Message: "data changed; pods are not restarted", Source: plan.SourceServer}},
				Notes:   []string{"no pod template carries a checksum of it | restart pods to pick it up"},
				Before:  configMap("info"), After: configMap("debug"),
			},
			{
				ID: id("", "ServiceAccount", "web"), APIVersion: "v1", Action: plan.ActionNoop,
				Reasons: []plan.Reason{},
			},
			{
				ID: id("apps", "Deployment", "web"), APIVersion: "apps/v1",
				Action: plan.ActionUpdate, Class: plan.ClassRolling,
				Reasons: []plan.Reason{
					{Path: "spec.template.spec.containers[0].image", Message: "pod template changed", Source: plan.SourceServer},
				},
				Rollout: &plan.Rollout{Replicas: 2, Strategy: "RollingUpdate",
					Impact: "2 pods replaced one at a time (maxUnavailable 25%, maxSurge 25%)"},
				Drift:  []plan.Drift{{Path: "spec.replicas", Reverted: true}},
				Before: deployment("web", "ghcr.io/shop/web:1.27.0", 2, map[string]interface{}{"app": "web"}),
				After:  deployment("web", "ghcr.io/shop/web:1.28.0", 2, map[string]interface{}{"app": "web"}),
			},
			{
				ID: id("", "Secret", "db-credentials"), APIVersion: "v1",
				Action: plan.ActionUpdate, Class: plan.ClassInPlace,
				Reasons: []plan.Reason{{Path: "data.password", Message: "value changed", Source: plan.SourceServer,
					Before: secretValue, After: secretValue + "-new"}},
				Before: secret("(sensitive: hmac-sha256:1a2b3c4d1a2b3c4d)"),
				After:  secret("(sensitive: hmac-sha256:9e8f7a6b9e8f7a6b)"),
			},
			{
				ID: id("", "Service", "web-public"), APIVersion: "v1", Action: plan.ActionCreate,
				Reasons: []plan.Reason{},
				After:   service(),
			},
			{
				ID: id("", "PersistentVolumeClaim", "uploads"), APIVersion: "v1", Action: plan.ActionDelete,
				Destructive: true, Acknowledged: true, Fingerprint: "5d41402abc4b",
				Reasons: []plan.Reason{{Message: "removed from the chart; the claim and its volume (reclaimPolicy Delete) are deleted", Source: plan.SourceHelm}},
				Before:  pvc(),
			},
			{
				ID: id("apps", "StatefulSet", "postgres"), APIVersion: "apps/v1",
				Action: plan.ActionUpdate, Class: plan.ClassRecreateRequired,
				Destructive: true, Fingerprint: "9f2c41d7e0ab",
				Reasons: []plan.Reason{
					{Path: "spec.volumeClaimTemplates[0].spec.resources.requests.storage", Message: "field is immutable", Source: plan.SourceServer},
					{Path: "spec.volumeClaimTemplates", Message: "existing claims keep 10Gi; the StatefulSet must be recreated (orphaning its pods and claims)", Source: plan.SourceCatalogue},
				},
				Before: postgres("10Gi"), After: postgres("20Gi"),
			},
			{
				ID: id("apps", "Deployment", "worker"), APIVersion: "apps/v1",
				Action: plan.ActionUpdate, Class: plan.ClassInvalid,
				Destructive: true, Blocking: true, Fingerprint: "0c8e1f2a3b4d",
				Reasons: []plan.Reason{{
					Path:    "spec.template.metadata.labels",
					Message: "Invalid value: map[string]string{\"app\":\"worker-v2\"}: `selector` does not match template `labels`",
					Source:  plan.SourceServer,
				}},
				// The server rejected the change: there is no prediction.
				Before: deployment("worker", "ghcr.io/shop/worker:1.27.0", 1, map[string]interface{}{"app": "worker"}),
			},
		},
		Hooks: []plan.Hook{{Kind: "Job", Name: "db-migrate", Events: []string{"pre-upgrade", "pre-install"},
			DeletePolicies: []string{"before-hook-creation"}, ID: id("batch", "Job", "db-migrate"),
			Action: plan.ActionUpdate, RunsAtApply: true, Before: migrateJob("migrate:1.0"), After: migrateJob("migrate:1.1")}},
		Notes: []string{"CustomResourceDefinition/widgets.shop.example.com is in crds/: Helm installs it once and never upgrades it"},
	}
}

// bigPlan is a plan of n changes, mostly rolling Deployments, for
// benchmarks and size limits.
func bigPlan(n int) *plan.Plan {
	p := &plan.Plan{Release: plan.Release{Name: "big", Namespace: "big", Revision: 2, CurrentRevision: 1, Chart: "big-1.1.0"}}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("svc-%04d", i)
		c := plan.Change{
			ID: manifest.ObjectID{Group: "apps", Kind: "Deployment", Namespace: "big", Name: name}, APIVersion: "apps/v1",
			Action: plan.ActionUpdate, Class: plan.ClassRolling, Fingerprint: fmt.Sprintf("%012x", i),
			Reasons: []plan.Reason{{Path: "spec.template.spec.containers[0].image", Message: "pod template changed", Source: plan.SourceServer}},
			Rollout: &plan.Rollout{Replicas: 3, Strategy: "RollingUpdate", Impact: "3 pods replaced one at a time"},
			Before:  deployment(name, "example/app:1.0.0", 3, map[string]interface{}{"app": name}),
			After:   deployment(name, "example/app:1.1.0", 3, map[string]interface{}{"app": name}),
		}
		if i%10 == 0 {
			c.Class, c.Destructive = plan.ClassRecreateRequired, true
			c.Reasons = []plan.Reason{{Path: "spec.selector", Message: "field is immutable", Source: plan.SourceServer}}
		}
		p.Changes = append(p.Changes, c)
	}
	return p
}

// rollbackPlan is `rollback shop 6` after the upgrade to revision 7 added
// a claim and grew the StatefulSet's claim template: the claim is deleted
// with its volume, the template shrinks back (recreate-required), the
// post-rollback hook runs.
func rollbackPlan() *plan.Plan {
	return &plan.Plan{
		Release: plan.Release{Name: "shop", Namespace: "shop", Revision: 8, CurrentRevision: 7, RollbackTo: 6, Chart: "shop-1.9.0",
			Operation: plan.OperationRollback},
		ServerVersion: "v1.37.2",
		Changes: []plan.Change{
			{
				ID: id("", "PersistentVolumeClaim", "uploads"), APIVersion: "v1", Action: plan.ActionDelete,
				Destructive: true, Fingerprint: "5d41402abc4b",
				Reasons: []plan.Reason{
					{Message: "not in the revision rolled back to: Helm deletes it (no helm.sh/resource-policy: keep); deleting a PersistentVolumeClaim deletes its volume's data (reclaimPolicy Delete)", Source: plan.SourceHelm},
					{Path: "spec.volumeName", Message: "PersistentVolume pvc-0d1e (5Gi) has reclaimPolicy Delete: its storage and data are deleted", Source: plan.SourceServer},
				},
				Before: pvc(),
			},
			{
				ID: id("apps", "StatefulSet", "postgres"), APIVersion: "apps/v1",
				Action: plan.ActionUpdate, Class: plan.ClassRecreateRequired,
				Destructive: true, Acknowledged: true, Fingerprint: "9f2c41d7e0ab",
				Reasons: []plan.Reason{{Path: "spec.volumeClaimTemplates[0].spec.resources.requests.storage", Message: "field is immutable", Source: plan.SourceServer}},
				Before:  postgres("20Gi"), After: postgres("10Gi"),
			},
		},
		Hooks: []plan.Hook{{Kind: "Job", Name: "db-restore", Events: []string{"post-rollback"},
			DeletePolicies: []string{"before-hook-creation"}, ID: id("batch", "Job", "db-restore"),
			Action: plan.ActionCreate, RunsAtApply: true, After: migrateJob("restore:1.0")}},
	}
}
