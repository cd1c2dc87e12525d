package predict

import (
	"fmt"
	"math"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation"
)

// serviceKind is the kind whose spec.ports change Derive predicts.
var serviceKind = schema.GroupKind{Kind: "Service"}

// portsChange is how a change of a Service's spec.ports reaches Derive:
// as Helm 3's strategic merge patch of spec, or as the ports list Helm 4's
// server-side apply merged (the field manager's merge, before defaulting).
type portsChange int

const (
	portsPatched portsChange = iota + 1
	portsMerged
)

// portFields are the fields of a v1 ServicePort and the JSON type each
// holds; a port with any other field (unknown: the server drops it with a
// warning) is asked.
var portFields = map[string]string{
	"name": "string", "protocol": "string", "appProtocol": "string",
	"port": "int", "nodePort": "int", "targetPort": "int-or-string",
}

// patchServicePorts changes obj's spec.ports as the API server does for a
// ClusterIP Service (k8s.io/kubernetes 1.37): spec, a strategic merge
// patch of spec with no key but ports (and its $setElementOrder), applied
// with the versioned Service's patch strategy (apiserver's
// applyPatchToObject), or, merged, the ports list the field manager's
// merge left; then each port defaulted (SetDefaults_Service: protocol TCP,
// targetPort the port when unset) and the list validated as
// ValidateServiceUpdate validates ports. It returns why the server must be
// asked, "" when obj now holds what the server would store.
//
// Only ClusterIP Services (headless included): for them the service
// registry's update allocates nothing and copies no node port
// (patchAllocatedValues, allocateUpdate), quota counts no node port, and
// GetWarningsForService reads no port. Other types allocate node ports.
func patchServicePorts(obj map[string]interface{}, spec interface{}, how portsChange) string {
	change, ok := spec.(map[string]interface{})
	if !ok {
		return "spec is not a map"
	}
	for key := range change {
		if key != "ports" && !(how == portsPatched && key == "$setElementOrder/ports") {
			return "patch sets spec." + key
		}
	}
	liveSpec, ok := obj["spec"].(map[string]interface{})
	if !ok {
		return "live spec is not a map"
	}
	if t, _ := liveSpec["type"].(string); t != string(corev1.ServiceTypeClusterIP) {
		return fmt.Sprintf("Service of type %q", t) // node ports are allocated
	}
	if _, why := servicePorts(liveSpec["ports"]); why != "" {
		return "live " + why
	}
	var ports interface{}
	switch how {
	case portsPatched:
		// A patch naming one port number twice (the chart's ports of one
		// number and two protocols, or a duplicate) is merged by number
		// alone, collapsing them: what the server makes of it, it says.
		for _, key := range []string{"ports", "$setElementOrder/ports"} {
			if why := onePerNumber(change[key]); why != "" {
				return why + " in the patch"
			}
		}
		patched, err := strategicpatch.StrategicMergeMapPatch(
			map[string]interface{}{"spec": runtime.DeepCopyJSONValue(liveSpec)},
			map[string]interface{}{"spec": runtime.DeepCopyJSONValue(change)}, &corev1.Service{})
		if err != nil {
			return "the patch does not apply"
		}
		s, _ := patched["spec"].(map[string]interface{})
		ports = s["ports"]
	case portsMerged:
		ports = change["ports"]
	}
	parsed, why := servicePorts(ports)
	if why != "" {
		return why
	}
	for i := range parsed {
		defaultServicePort(&parsed[i])
	}
	if why := validClusterIPPorts(parsed); why != "" {
		return why
	}
	out := make([]interface{}, len(parsed))
	for i, p := range parsed {
		out[i] = servicePortContent(p)
	}
	spec2 := make(map[string]interface{}, len(liveSpec))
	for k, v := range liveSpec {
		spec2[k] = v
	}
	spec2["ports"] = out
	obj["spec"] = spec2
	return ""
}

// servicePorts reads a ports list as the server's decoder would, or says
// why the server must be asked: anything not a list of ports whose fields
// are known and of their type. Two ports of one number (of different
// protocols) are asked too: a strategic merge patch keys ports by number
// alone.
func servicePorts(v interface{}) ([]corev1.ServicePort, string) {
	list, ok := v.([]interface{})
	if !ok {
		return nil, "spec.ports is not a list"
	}
	out := make([]corev1.ServicePort, 0, len(list))
	numbers := map[int32]bool{}
	for i, item := range list {
		m, ok := item.(map[string]interface{})
		if !ok {
			return nil, fmt.Sprintf("spec.ports[%d] is not a map", i)
		}
		var p corev1.ServicePort
		for key, val := range m {
			var ok bool
			switch portFields[key] {
			case "string":
				var s string
				if s, ok = val.(string); ok {
					switch key {
					case "name":
						p.Name = s
					case "protocol":
						p.Protocol = corev1.Protocol(s)
					case "appProtocol":
						p.AppProtocol = &s
					}
				}
			case "int":
				var n int32
				if n, ok = int32Value(val); ok {
					if key == "port" {
						p.Port = n
					} else {
						p.NodePort = n
					}
				}
			case "int-or-string":
				if s, isString := val.(string); isString {
					p.TargetPort, ok = intstr.FromString(s), true
				} else if n, isInt := int32Value(val); isInt {
					p.TargetPort, ok = intstr.FromInt32(n), true
				}
			}
			if !ok {
				return nil, fmt.Sprintf("spec.ports[%d].%s unknown or not of its type", i, key)
			}
		}
		if numbers[p.Port] {
			return nil, fmt.Sprintf("two ports %d", p.Port)
		}
		numbers[p.Port] = true
		out = append(out, p)
	}
	return out, ""
}

// onePerNumber says whether a patch's list of ports (nil: none) names a port
// number twice.
func onePerNumber(v interface{}) string {
	list, _ := v.([]interface{})
	seen := map[string]bool{}
	for _, item := range list {
		m, ok := item.(map[string]interface{})
		if !ok {
			return "a port not a map"
		}
		// As text: a value of any JSON type, 80 and 80.0 alike.
		n := fmt.Sprint(m["port"])
		if seen[n] {
			return "two ports " + n
		}
		seen[n] = true
	}
	return ""
}

// int32Value is v as the unstructured converter decodes an int32: an
// integer in range (JSON integers decode as int64; a float only when
// integral).
func int32Value(v interface{}) (int32, bool) {
	var f float64
	switch n := v.(type) {
	case int64:
		if n < math.MinInt32 || n > math.MaxInt32 {
			return 0, false
		}
		return int32(n), true
	case float64:
		f = n
	default:
		return 0, false
	}
	if f != math.Trunc(f) || f < math.MinInt32 || f > math.MaxInt32 {
		return 0, false
	}
	return int32(f), true
}

// defaultServicePort is SetDefaults_Service for one port.
func defaultServicePort(p *corev1.ServicePort) {
	if p.Protocol == "" {
		p.Protocol = corev1.ProtocolTCP
	}
	if p.TargetPort == intstr.FromInt32(0) || p.TargetPort == intstr.FromString("") {
		p.TargetPort = intstr.FromInt32(p.Port)
	}
}

// validClusterIPPorts is what ValidateService (pkg/apis/core/validation,
// 1.37) checks of a ClusterIP Service's ports: at least one (a headless
// Service may have none; asked), each as validateServicePort checks it, no
// node port, no (port, protocol) twice.
func validClusterIPPorts(ports []corev1.ServicePort) string {
	if len(ports) == 0 {
		return "no ports"
	}
	names := map[string]bool{}
	keys := map[corev1.ServicePort]bool{}
	for _, p := range ports {
		switch {
		case len(ports) > 1 && p.Name == "":
			return "a port without a name"
		case p.Name != "" && (len(validation.IsDNS1123Label(p.Name)) > 0 || names[p.Name]):
			return "a port name the server refuses"
		case len(validation.IsValidPortNum(int(p.Port))) > 0:
			return "a port number the server refuses"
		case p.Protocol != corev1.ProtocolTCP && p.Protocol != corev1.ProtocolUDP && p.Protocol != corev1.ProtocolSCTP:
			return "a protocol the server refuses"
		case p.TargetPort.Type == intstr.Int && len(validation.IsValidPortNum(p.TargetPort.IntValue())) > 0,
			p.TargetPort.Type == intstr.String && len(validation.IsValidPortName(p.TargetPort.StrVal)) > 0:
			return "a target port the server refuses"
		case p.AppProtocol != nil && len(validation.IsQualifiedName(*p.AppProtocol)) > 0:
			return "an appProtocol the server refuses"
		case p.NodePort != 0:
			return "a node port on a ClusterIP Service"
		}
		names[p.Name] = true
		key := corev1.ServicePort{Protocol: p.Protocol, Port: p.Port}
		if keys[key] {
			return "a port and protocol twice"
		}
		keys[key] = true
	}
	return ""
}

// servicePortContent is p as the server returns it in JSON (the v1
// ServicePort's omitempty fields left out), as unstructured holds it.
func servicePortContent(p corev1.ServicePort) map[string]interface{} {
	out := map[string]interface{}{"port": int64(p.Port), "protocol": string(p.Protocol)}
	if p.Name != "" {
		out["name"] = p.Name
	}
	if p.AppProtocol != nil {
		out["appProtocol"] = *p.AppProtocol
	}
	if p.TargetPort.Type == intstr.String {
		out["targetPort"] = p.TargetPort.StrVal
	} else {
		out["targetPort"] = int64(p.TargetPort.IntVal)
	}
	if p.NodePort != 0 {
		out["nodePort"] = int64(p.NodePort)
	}
	return out
}
