package predict

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestServiceWarnings: each check of GetWarningsForService (1.37).
func TestServiceWarnings(t *testing.T) {
	service := func(spec map[string]interface{}, annotations map[string]interface{}) *unstructured.Unstructured {
		meta := map[string]interface{}{"name": "s", "namespace": "ns"}
		if annotations != nil {
			meta["annotations"] = annotations
		}
		return &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": spec,
		}}
	}
	ports := []interface{}{map[string]interface{}{"port": int64(80), "protocol": "TCP"}}
	clusterIP := func(extra map[string]interface{}) map[string]interface{} {
		spec := map[string]interface{}{"type": "ClusterIP", "clusterIP": "10.0.0.1", "clusterIPs": []interface{}{"10.0.0.1"}, "ports": ports, "sessionAffinity": "None"}
		for k, v := range extra {
			spec[k] = v
		}
		return spec
	}
	tests := []struct {
		name string
		obj  *unstructured.Unstructured
		want string // a substring of the one warning, "" for none
	}{
		{name: "plain ClusterIP", obj: service(clusterIP(nil), nil)},
		{name: "headless", obj: service(clusterIP(map[string]interface{}{"clusterIP": "None", "clusterIPs": []interface{}{"None"}}), nil)},
		{name: "topology-aware-hints annotation", obj: service(clusterIP(nil), map[string]interface{}{"service.kubernetes.io/topology-aware-hints": "auto"}), want: "topology-aware-hints is deprecated"},
		{name: "topology-mode annotation", obj: service(clusterIP(nil), map[string]interface{}{"service.kubernetes.io/topology-mode": "Auto"})},
		{name: "externalIPs", obj: service(clusterIP(map[string]interface{}{"externalIPs": []interface{}{"192.0.2.10"}}), nil), want: "spec.externalIPs is deprecated"},
		{name: "non-canonical clusterIP", obj: service(clusterIP(map[string]interface{}{"clusterIP": "2001:DB8::1", "clusterIPs": []interface{}{"2001:DB8::1"}}), nil), want: "spec.clusterIPs[0]"},
		{name: "headless with loadBalancerIP", obj: service(clusterIP(map[string]interface{}{"clusterIP": "None", "clusterIPs": []interface{}{"None"}, "loadBalancerIP": "192.0.2.1"}), nil), want: "ignored for headless"},
		{name: "headless with ClientIP affinity", obj: service(clusterIP(map[string]interface{}{"clusterIP": "None", "clusterIPs": []interface{}{"None"}, "sessionAffinity": "ClientIP"}), nil), want: "SessionAffinity is ignored"},
		{name: "loadBalancerSourceRanges canonical", obj: service(clusterIP(map[string]interface{}{"type": "LoadBalancer", "loadBalancerSourceRanges": []interface{}{"192.0.2.0/24"}}), nil)},
		{name: "loadBalancerSourceRanges not canonical", obj: service(clusterIP(map[string]interface{}{"type": "LoadBalancer", "loadBalancerSourceRanges": []interface{}{"192.0.2.1/24"}}), nil), want: "loadBalancerSourceRanges[0]"},
		{name: "externalName on ClusterIP", obj: service(clusterIP(map[string]interface{}{"externalName": "db.example.com"}), nil), want: "spec.externalName is ignored"},
		{name: "ExternalName", obj: service(map[string]interface{}{"type": "ExternalName", "externalName": "db.example.com", "sessionAffinity": "None"}, nil)},
		{name: "trafficDistribution PreferClose", obj: service(clusterIP(map[string]interface{}{"trafficDistribution": "PreferClose"}), nil), want: `"PreferClose" is deprecated`},
		{name: "trafficDistribution PreferSameZone", obj: service(clusterIP(map[string]interface{}{"trafficDistribution": "PreferSameZone"}), nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var svc corev1.Service
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(tt.obj.Object, &svc); err != nil {
				t.Fatal(err)
			}
			got := serviceWarnings(&svc)
			if why := UpdateWarns(tt.obj); (why == "") != (len(got) == 0) {
				t.Errorf("UpdateWarns %q with warnings %q", why, got)
			}
			switch {
			case tt.want == "" && len(got) != 0:
				t.Errorf("warnings %q, want none", got)
			case tt.want != "" && (len(got) == 0 || !strings.Contains(strings.Join(got, "\n"), tt.want)):
				t.Errorf("warnings %q, want one with %q", got, tt.want)
			}
		})
	}
}

// TestUpdateWarns: the kinds whose update strategy warns about the whole
// object stored are asked when it would warn (or, unchecked, may), the
// others never are.
func TestUpdateWarns(t *testing.T) {
	obj := func(apiVersion, kind string, meta map[string]interface{}, fields map[string]interface{}) *unstructured.Unstructured {
		m := map[string]interface{}{"name": "x", "namespace": "ns"}
		for k, v := range meta {
			m[k] = v
		}
		o := map[string]interface{}{"apiVersion": apiVersion, "kind": kind, "metadata": m}
		for k, v := range fields {
			o[k] = v
		}
		return &unstructured.Unstructured{Object: o}
	}
	claimSpec := func(storage string) map[string]interface{} {
		return map[string]interface{}{"accessModes": []interface{}{"ReadWriteOnce"}, "resources": map[string]interface{}{"requests": map[string]interface{}{"storage": storage}}}
	}
	sts := func(storage string, history int64) *unstructured.Unstructured {
		return obj("apps/v1", "StatefulSet", nil, map[string]interface{}{"spec": map[string]interface{}{
			"revisionHistoryLimit": history,
			"volumeClaimTemplates": []interface{}{map[string]interface{}{"metadata": map[string]interface{}{"name": "data"}, "spec": claimSpec(storage)}},
		}})
	}
	policy := func(cidr string, except ...interface{}) *unstructured.Unstructured {
		return obj("networking.k8s.io/v1", "NetworkPolicy", nil, map[string]interface{}{"spec": map[string]interface{}{
			"egress": []interface{}{map[string]interface{}{"to": []interface{}{map[string]interface{}{"ipBlock": map[string]interface{}{"cidr": cidr, "except": except}}}}},
		}})
	}
	tests := []struct {
		name string
		obj  *unstructured.Unstructured
		asks bool
	}{
		{name: "ConfigMap, even with a Service's warned annotation", obj: obj("v1", "ConfigMap", map[string]interface{}{"annotations": map[string]interface{}{"service.kubernetes.io/topology-aware-hints": "auto"}}, nil)},
		{name: "Opaque Secret", obj: obj("v1", "Secret", nil, map[string]interface{}{"type": "Opaque"})},
		{name: "TLS Secret (the key checked against the certificate)", obj: obj("v1", "Secret", nil, map[string]interface{}{"type": "kubernetes.io/tls"}), asks: true},
		{name: "Deployment", obj: obj("apps/v1", "Deployment", nil, nil)},
		{name: "claim", obj: obj("v1", "PersistentVolumeClaim", nil, map[string]interface{}{"spec": claimSpec("1Gi")})},
		{name: "claim with the beta storage-class annotation", obj: obj("v1", "PersistentVolumeClaim", map[string]interface{}{"annotations": map[string]interface{}{"volume.beta.kubernetes.io/storage-class": "fast"}}, map[string]interface{}{"spec": claimSpec("1Gi")}), asks: true},
		{name: "claim of a fractional byte", obj: obj("v1", "PersistentVolumeClaim", nil, map[string]interface{}{"spec": claimSpec("1500m")}), asks: true},
		{name: "StatefulSet", obj: sts("10Gi", 10)},
		{name: "StatefulSet claim template of a fractional byte", obj: sts("0.5", 10), asks: true},
		{name: "StatefulSet keeping every revision", obj: sts("10Gi", -1), asks: true},
		{name: "CronJob", obj: obj("batch/v1", "CronJob", nil, map[string]interface{}{"spec": map[string]interface{}{"schedule": "0 * * * *", "timeZone": "Etc/UTC"}})},
		{name: "CronJob with TZ in its schedule", obj: obj("batch/v1", "CronJob", nil, map[string]interface{}{"spec": map[string]interface{}{"schedule": "CRON_TZ=UTC 0 * * * *"}}), asks: true},
		{name: "NetworkPolicy", obj: policy("10.0.0.0/8", "10.1.0.0/16")},
		{name: "NetworkPolicy CIDR with host bits", obj: policy("10.0.0.1/8"), asks: true},
		{name: "NetworkPolicy exception with host bits", obj: policy("10.0.0.0/8", "10.1.2.3/16"), asks: true},
		{name: "Endpoints", obj: obj("v1", "Endpoints", nil, nil), asks: true},
		{name: "StorageClass", obj: obj("storage.k8s.io/v1", "StorageClass", nil, nil), asks: true},
		{name: "ValidatingWebhookConfiguration", obj: obj("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", nil, nil), asks: true},
		{name: "unreadable Service", obj: obj("v1", "Service", nil, map[string]interface{}{"spec": "not a map"}), asks: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if why := UpdateWarns(tt.obj); (why != "") != tt.asks {
				t.Errorf("UpdateWarns = %q, want asked %v", why, tt.asks)
			}
		})
	}
}
