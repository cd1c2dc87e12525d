package classify

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// keepAllocated returns predicted with the values the server allocated on
// the live object and keeps when an update leaves them unset (its registry's
// patchAllocatedValues): a Service's cluster IPs (unless either side is an
// ExternalName Service) and node ports, matched by port name. Offline the
// base stands in for live, so a chart that stops writing clusterIP: None is
// no change, as on the server. predicted is modified in place.
func keepAllocated(kind schema.GroupKind, live, predicted map[string]interface{}) map[string]interface{} {
	if kind != (schema.GroupKind{Kind: "Service"}) || live == nil || predicted == nil {
		return predicted
	}
	external := func(o map[string]interface{}) bool { return Lookup(o, "spec.type") == "ExternalName" }
	spec, ok := predicted["spec"].(map[string]interface{})
	if !ok || external(live) || external(predicted) {
		return predicted
	}
	for _, f := range []string{"clusterIP", "clusterIPs"} {
		if v := Lookup(live, "spec."+f); v != nil && Lookup(predicted, "spec."+f) == nil {
			spec[f] = runtime.DeepCopyJSONValue(v)
		}
	}
	livePorts := map[string]interface{}{}
	if ports, ok := Lookup(live, "spec.ports").([]interface{}); ok {
		for _, p := range ports {
			if m, ok := p.(map[string]interface{}); ok && m["nodePort"] != nil {
				livePorts[fmt.Sprint(m["name"])] = m["nodePort"]
			}
		}
	}
	needsNodePorts := spec["type"] == "NodePort" || spec["type"] == "LoadBalancer"
	if ports, ok := spec["ports"].([]interface{}); ok && len(livePorts) > 0 && needsNodePorts {
		for _, p := range ports {
			if m, ok := p.(map[string]interface{}); ok && m["nodePort"] == nil && livePorts[fmt.Sprint(m["name"])] != nil {
				m["nodePort"] = livePorts[fmt.Sprint(m["name"])]
			}
		}
	}
	return predicted
}
