package predict

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestUpdateWarnings: each check of GetWarningsForService (1.37), and the
// kinds whose update strategy warns about nothing a derived change reaches.
func TestUpdateWarnings(t *testing.T) {
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
		{name: "not a Service", obj: &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]interface{}{"name": "c", "annotations": map[string]interface{}{"service.kubernetes.io/topology-aware-hints": "auto"}},
		}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := UpdateWarnings(tt.obj)
			switch {
			case tt.want == "" && len(got) != 0:
				t.Errorf("warnings %q, want none", got)
			case tt.want != "" && (len(got) == 0 || !strings.Contains(strings.Join(got, "\n"), tt.want)):
				t.Errorf("warnings %q, want one with %q", got, tt.want)
			}
		})
	}
}
