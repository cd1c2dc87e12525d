package predict

import (
	"cmp"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/applyconfigurations"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// service is a Service object of the given spec (YAML flow), as the chart
// renders it.
func service(t testing.TB, spec string) *unstructured.Unstructured {
	t.Helper()
	return yamlObject(t, `{apiVersion: v1, kind: Service, metadata: {name: svc, namespace: ns, labels: {v: "1"}}, spec: `+spec+`}`)
}

// served is obj as the server stores a ClusterIP Service: spec defaulted
// (type, sessionAffinity, an allocated cluster IP, each port's protocol and
// target port).
func served(t testing.TB, obj *unstructured.Unstructured, ports string) *unstructured.Unstructured {
	t.Helper()
	out := obj.DeepCopy()
	spec := out.Object["spec"].(map[string]interface{})
	if _, ok := spec["type"]; !ok {
		spec["type"] = "ClusterIP"
	}
	if _, ok := spec["clusterIP"]; !ok {
		spec["clusterIP"] = "10.0.0.10"
	}
	spec["sessionAffinity"] = "None"
	// Integers as a live object holds them (the client decodes JSON
	// numbers that are integers as int64).
	raw, err := yaml.YAMLToJSON([]byte(ports))
	if err != nil {
		t.Fatal(err)
	}
	var list []interface{}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(raw, &list); err != nil {
		t.Fatal(err)
	}
	spec["ports"] = list
	return out
}

// TestDeriveServicePorts derives Helm 3's patch of a ClusterIP Service's
// ports (the patch Helm builds, applied as the server applies it, then
// defaulted and validated as it does), and asks the server where the
// result is not certain or the server refuses it.
func TestDeriveServicePorts(t *testing.T) {
	p := NewPatcher()
	const one = `{selector: {app: a}, ports: [{port: 80}]}`
	const oneLive = `[{port: 80, protocol: TCP, targetPort: 80}]`
	const two = `{selector: {app: a}, ports: [{name: http, port: 80}, {name: metrics, port: 9090}]}`
	const twoLive = `[{name: http, port: 80, protocol: TCP, targetPort: 80}, {name: metrics, port: 9090, protocol: TCP, targetPort: 9090}]`
	tests := []struct {
		name            string
		v1, live, v2    string
		patch           string // a patch other than Helm's
		liveType        string
		want, wantWhyIn string // want: the derived ports (YAML flow)
	}{
		{name: "port number (targetPort defaulted)", v1: one, live: oneLive,
			v2: `{selector: {app: a}, ports: [{port: 8080}]}`, want: `[{port: 8080, protocol: TCP, targetPort: 8080}]`},
		{name: "second port added", v1: one, live: oneLive,
			v2:   `{selector: {app: a}, ports: [{name: http, port: 80}, {name: metrics, port: 9090, targetPort: metrics}]}`,
			want: `[{name: http, port: 80, protocol: TCP, targetPort: 80}, {name: metrics, port: 9090, protocol: TCP, targetPort: metrics}]`},
		{name: "port removed", v1: two, live: twoLive,
			v2: `{selector: {app: a}, ports: [{name: http, port: 80}]}`, want: `[{name: http, port: 80, protocol: TCP, targetPort: 80}]`},
		{name: "port renamed", v1: two, live: twoLive,
			v2:   `{selector: {app: a}, ports: [{name: web, port: 80}, {name: metrics, port: 9090}]}`,
			want: `[{name: web, port: 80, protocol: TCP, targetPort: 80}, {name: metrics, port: 9090, protocol: TCP, targetPort: 9090}]`},
		{name: "target port named, app protocol", v1: one, live: oneLive,
			v2: `{selector: {app: a}, ports: [{port: 80, targetPort: http, appProtocol: kubernetes.io/h2c}]}`, want: `[{port: 80, protocol: TCP, targetPort: http, appProtocol: kubernetes.io/h2c}]`},
		{name: "UDP port beside", v1: one, live: oneLive,
			v2:        `{selector: {app: a}, ports: [{name: tcp, port: 80}, {name: dns, port: 53, protocol: UDP}]}`,
			want:      `[{name: tcp, port: 80, protocol: TCP, targetPort: 80}, {name: dns, port: 53, protocol: UDP, targetPort: 53}]`,
			wantWhyIn: ""},
		{name: "target port changed where a user edited it live", v1: one, live: `[{port: 80, protocol: TCP, targetPort: 8081}]`,
			v2: `{selector: {app: a}, ports: [{port: 80, targetPort: 8082}]}`, want: `[{port: 80, protocol: TCP, targetPort: 8082}]`},
		{name: "headless", v1: `{clusterIP: None, selector: {app: a}, ports: [{port: 80}]}`, live: oneLive,
			v2: `{clusterIP: None, selector: {app: a}, ports: [{port: 81}]}`, want: `[{port: 81, protocol: TCP, targetPort: 81}]`},

		{name: "two ports, one without a name", v1: one, live: oneLive,
			v2: `{selector: {app: a}, ports: [{port: 80}, {name: b, port: 81}]}`, wantWhyIn: "without a name"},
		{name: "port out of range", v1: one, live: oneLive,
			v2: `{selector: {app: a}, ports: [{port: 70000}]}`, wantWhyIn: "port number"},
		{name: "port and protocol twice", v1: one, live: oneLive,
			v2: `{selector: {app: a}, ports: [{name: a, port: 80}, {name: b, port: 80}]}`, wantWhyIn: "two ports"},
		{name: "node port on ClusterIP", v1: one, live: oneLive,
			v2: `{selector: {app: a}, ports: [{port: 80, nodePort: 30080}]}`, wantWhyIn: "node port"},
		{name: "unknown protocol", v1: one, live: oneLive,
			v2: `{selector: {app: a}, ports: [{port: 80, protocol: tcp}]}`, wantWhyIn: "protocol"},
		{name: "bad target port name", v1: one, live: oneLive,
			v2: `{selector: {app: a}, ports: [{port: 80, targetPort: "8080"}]}`, wantWhyIn: "target port"},
		{name: "bad app protocol", v1: one, live: oneLive,
			v2: `{selector: {app: a}, ports: [{port: 80, appProtocol: "a b"}]}`, wantWhyIn: "appProtocol"},
		{name: "unknown port field", v1: one, live: oneLive,
			v2: `{selector: {app: a}, ports: [{port: 81, nodeport: 3}]}`, wantWhyIn: "unknown"},
		{name: "port of another type (a patch Helm cannot build)", v1: one, live: oneLive,
			patch: `{"spec":{"ports":[{"port":{"a":"b"}},{"port":{"a":"b"}}]}}`, wantWhyIn: "two ports map[a:b] in the patch"},
		{name: "patch directive", v1: one, live: oneLive,
			patch: `{"spec":{"$retainKeys":["ports"],"ports":[{"port":81}]}}`, wantWhyIn: "patch sets spec.$retainKeys"},
		{name: "fractional port", v1: one, live: oneLive,
			v2: `{selector: {app: a}, ports: [{port: 80.5}]}`, wantWhyIn: "not of its type"},
		{name: "selector beside", v1: one, live: oneLive,
			v2: `{selector: {app: b}, ports: [{port: 81}]}`, wantWhyIn: "patch sets spec.selector"},
		{name: "NodePort type", v1: `{type: NodePort, selector: {app: a}, ports: [{port: 80}]}`, liveType: "NodePort",
			live: `[{port: 80, protocol: TCP, targetPort: 80, nodePort: 30080}]`,
			v2:   `{type: NodePort, selector: {app: a}, ports: [{port: 81}]}`, wantWhyIn: `type "NodePort"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			original, target := service(t, tc.v1), service(t, cmp.Or(tc.v2, tc.v1))
			live := served(t, original, tc.live)
			if tc.liveType != "" {
				live.Object["spec"].(map[string]interface{})["type"] = tc.liveType
			}
			patch, pt, err := []byte(tc.patch), types.StrategicMergePatchType, error(nil)
			if tc.patch == "" {
				if patch, pt, err = p.Patch(original, target, live); err != nil {
					t.Fatal(err)
				}
			}
			got, why := Derive(live, patch, pt)
			if tc.want == "" {
				if got != nil || !strings.Contains(why, tc.wantWhyIn) {
					t.Fatalf("patch %s: derived %v (%q), want asked for %q", patch, got != nil, why, tc.wantWhyIn)
				}
				return
			}
			if got == nil {
				t.Fatalf("patch %s: not derived: %s", patch, why)
			}
			want := served(t, live, tc.want)
			if !reflect.DeepEqual(got.Object, want.Object) {
				t.Errorf("patch %s:\nderived %v\nwant    %v", patch, got.Object["spec"], want.Object["spec"])
			}
		})
	}
}

// TestDeriveApplyServicePorts derives Helm 4's server-side apply of a
// ClusterIP Service's ports: the field manager's merge (the released port
// pruned, the applied one undefaulted) defaulted as the server does after
// the merge.
func TestDeriveApplyServicePorts(t *testing.T) {
	tc := applyconfigurations.NewTypeConverter(clientgoscheme.Scheme)
	tests := []struct {
		name, v1, live, v2, want string
	}{
		{name: "port number", v1: `{selector: {app: a}, ports: [{port: 80}]}`, live: `[{port: 80, protocol: TCP, targetPort: 80}]`,
			v2: `{selector: {app: a}, ports: [{port: 8080}]}`, want: `[{port: 8080, protocol: TCP, targetPort: 8080}]`},
		{name: "second port", v1: `{selector: {app: a}, ports: [{name: a, port: 80}]}`, live: `[{name: a, port: 80, protocol: TCP, targetPort: 80}]`,
			v2:   `{selector: {app: a}, ports: [{name: a, port: 80}, {name: b, port: 81, protocol: UDP}]}`,
			want: `[{name: a, port: 80, protocol: TCP, targetPort: 80}, {name: b, port: 81, protocol: UDP, targetPort: 81}]`},
	}
	for _, c := range tests {
		t.Run(c.name, func(t *testing.T) {
			installed := service(t, c.v1)
			liveObj := serverApply(t, tc, nil, installed, FieldManager, "")
			liveObj = served(t, liveObj, c.live)
			d := decideApply(tc, liveObj, service(t, c.v2), false)
			if d.Verdict != ApplyChange {
				t.Fatalf("decided %v (%s), want a change", d.Verdict, d.Why)
			}
			got, why := DeriveApply(liveObj, d.Merged)
			if got == nil {
				t.Fatalf("not derived: %s", why)
			}
			want := served(t, withoutManagedFields(liveObj), c.want)
			if g := withoutManagedFields(got); !reflect.DeepEqual(g.Object, want.Object) {
				t.Errorf("derived %v\nwant    %v", g.Object["spec"], want.Object["spec"])
			}
		})
	}
}
