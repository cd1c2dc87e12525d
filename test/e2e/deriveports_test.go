package e2e

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// portsCase is one Service of portsChart: its spec in version 1 and 2 (the
// text after "spec: {selector: …, "), what the default plan predicts of its
// change (derived, server, or "" where only the equality with the server's
// verdict is asserted), and its class where meaningful; prediction4 and
// class4 are a Helm 4 release's where they differ. drift is a strategic
// merge patch made to the live Service after the install, as kubectl patch
// makes one.
type portsCase struct {
	name                string
	v1, v2              string
	labels              [2]string // metadata labels of version 1 and 2, if any
	selector            [2]string // selector of version 1 and 2 (app: name if empty)
	prediction, class   string
	prediction4, class4 string
	drift               string
}

// portsCases are the Services of portsChart, each changing its ports one
// way: derived for a ClusterIP Service (headless included) whose only spec
// change is a valid ports list, asked where the server refuses the ports
// or anything else of the spec changes.
var portsCases = []portsCase{
	// Derived: what the server accepts of a ClusterIP Service's ports.
	{name: "number", v1: "ports: [{port: 80}]", v2: "ports: [{port: 8080}]", prediction: "derived", class: "in-place"},
	{name: "second", v1: "ports: [{name: http, port: 80}]", v2: "ports: [{name: http, port: 80}, {name: metrics, port: 9090}]", prediction: "derived", class: "in-place"},
	{name: "rename", v1: "ports: [{name: http, port: 80}]", v2: "ports: [{name: web, port: 80}]", prediction: "derived", class: "in-place"},
	{name: "named-target", v1: "ports: [{port: 80, targetPort: 8080}]", v2: "ports: [{port: 80, targetPort: http}]", prediction: "derived", class: "in-place"},
	{name: "target", v1: "ports: [{port: 80, targetPort: 8080}]", v2: "ports: [{port: 80, targetPort: 9000}]", prediction: "derived", class: "in-place"},
	// Two ports of one number are asked (predict's servicePorts: a
	// strategic merge patch keys ports by number alone). Helm 3's patch
	// indeed makes the server turn the TCP port UDP (still named dns) and
	// drop dns-udp; Helm 4's apply, keyed by (port, protocol), adds it.
	{name: "udp", v1: "ports: [{name: dns, port: 53}]", v2: "ports: [{name: dns, port: 53}, {name: dns-udp, port: 53, protocol: UDP}]", prediction: "server", class: "in-place"},
	{name: "sctp", v1: "ports: [{name: http, port: 80}]", v2: "ports: [{name: http, port: 80}, {name: assoc, port: 7777, protocol: SCTP}]", prediction: "derived", class: "in-place"},
	{name: "appproto", v1: "ports: [{name: http, port: 80}]", v2: "ports: [{name: http, port: 80, appProtocol: http}]", prediction: "derived", class: "in-place"},
	{name: "removed", v1: "ports: [{name: http, port: 80}, {name: metrics, port: 9090}]", v2: "ports: [{name: http, port: 80}]", prediction: "derived", class: "in-place"},
	// protocol: TCP where the server defaulted it: Helm 3's three-way
	// patch finds it in the live object (a no-op, no request); Helm 4's
	// apply changes only the managed fields (a no-op the server is asked).
	{name: "tcp", v1: "ports: [{port: 80}]", v2: "ports: [{port: 80, protocol: TCP}]"},
	// targetPort 0 or "" is defaulted to the port, as when unset.
	{name: "zerotarget", v1: "ports: [{port: 80, targetPort: 8080}]", v2: "ports: [{port: 80, targetPort: 0}]", prediction: "derived", class: "in-place"},
	{name: "emptytarget", v1: "ports: [{port: 80, targetPort: 8080}]", v2: "ports: [{port: 80, targetPort: ''}]", prediction: "derived", class: "in-place"},
	// Reordered, and numbers swapped between names: the patch's
	// $setElementOrder.
	{name: "reorder", v1: "ports: [{name: a, port: 80}, {name: b, port: 81}]", v2: "ports: [{name: b, port: 81}, {name: a, port: 80}]", prediction: "derived"},
	{name: "swap", v1: "ports: [{name: a, port: 80}, {name: b, port: 81}]", v2: "ports: [{name: b, port: 80}, {name: a, port: 81}]", prediction: "derived", class: "in-place"},
	// The protocol changed: Helm 4's apply keys ports by (port, protocol).
	{name: "toudp", v1: "ports: [{port: 53}]", v2: "ports: [{port: 53, protocol: UDP}]", prediction: "derived", class: "in-place"},
	// A port added by hand beside the chart's: Helm 3's three-way patch
	// keeps it; Helm 4's apply leaves it to its manager.
	{name: "drifted", v1: "ports: [{name: http, port: 80}]", v2: "ports: [{name: http, port: 8080}]",
		drift: `{"spec":{"ports":[{"name":"extra","port":9999}]}}`, prediction: "derived", class: "in-place"},
	{name: "headless", v1: "clusterIP: None, ports: [{port: 80}]", v2: "clusterIP: None, ports: [{port: 8080}]", prediction: "derived", class: "in-place"},
	{name: "labelled", v1: "ports: [{port: 80}]", v2: "ports: [{port: 8080}]", labels: [2]string{"tier: a", "tier: b"}, prediction: "derived", class: "in-place"},

	// Asked: ports the server refuses.
	{name: "unnamed", v1: "ports: [{name: http, port: 80}]", v2: "ports: [{name: http, port: 80}, {port: 9090}]", prediction: "server", class: "invalid"},
	// Duplicate (port, protocol): Helm 3's three-way patch, keyed by port,
	// makes nothing of the second port (the server answers a no-op);
	// Helm 4's apply is refused by the field manager.
	{name: "dup", v1: "ports: [{name: a, port: 80}]", v2: "ports: [{name: a, port: 80}, {name: b, port: 80}]", prediction4: "server", class4: "invalid"},
	{name: "bigport", v1: "ports: [{port: 80}]", v2: "ports: [{port: 70000}]", prediction: "server", class: "invalid"},
	{name: "nodeport", v1: "ports: [{port: 80}]", v2: "ports: [{port: 80, nodePort: 30080}]", prediction: "server", class: "invalid"},
	{name: "dupname", v1: "ports: [{name: a, port: 80}]", v2: "ports: [{name: a, port: 80}, {name: a, port: 81}]", prediction: "server", class: "invalid"},
	{name: "noports", v1: "ports: [{port: 80}]", v2: "ports: []", prediction: "server", class: "invalid"},
	{name: "badname", v1: "ports: [{name: http, port: 80}]", v2: "ports: [{name: HTTP_1, port: 80}]", prediction: "server", class: "invalid"},
	{name: "badproto", v1: "ports: [{port: 80}]", v2: "ports: [{port: 80, protocol: HTTP}]", prediction: "server", class: "invalid"},
	{name: "badappproto", v1: "ports: [{name: http, port: 80}]", v2: "ports: [{name: http, port: 80, appProtocol: 'not/a/name'}]", prediction: "server", class: "invalid"},
	{name: "badtarget", v1: "ports: [{port: 80}]", v2: "ports: [{port: 80, targetPort: a-name-far-too-long}]", prediction: "server", class: "invalid"},
	// Asked: what else allocates or changes.
	{name: "nodeporttype", v1: "type: NodePort, ports: [{port: 80}]", v2: "type: NodePort, ports: [{port: 8080}]", prediction: "server"},
	{name: "selector", v1: "ports: [{port: 80}]", v2: "ports: [{port: 8080}]", selector: [2]string{"app: selector", "app: other"}, prediction: "server", class: "in-place"},
	{name: "affinity", v1: "ports: [{port: 80}]", v2: "sessionAffinity: ClientIP, ports: [{port: 8080}]", prediction: "server", class: "in-place"},
}

// portsChart is the chart of portsCases at version (1 or 2).
func portsChart(t *testing.T, version int) string {
	templates := map[string]string{}
	for _, pc := range portsCases {
		labels, selector, spec := pc.labels[version-1], pc.selector[version-1], pc.v1
		if version == 2 {
			spec = pc.v2
		}
		if selector == "" {
			selector = "app: " + pc.name
		}
		meta := "metadata: {name: " + pc.name + "}"
		if labels != "" {
			meta = "metadata: {name: " + pc.name + ", labels: {" + labels + "}}"
		}
		templates[pc.name+".yaml"] = fmt.Sprintf("apiVersion: v1\nkind: Service\n%s\nspec: {selector: {%s}, %s}\n", meta, selector, spec)
	}
	return writeChart(t, "app", fmt.Sprintf("%d.0.0", version), templates)
}

// TestDerivedServicePorts: a ClusterIP Service's ports change of a Helm 3
// release is derived without a dry-run where the server would accept it,
// and asked where it refuses it or the change is more than the ports; every
// verdict, reason, diff and drift is the one --server-dry-run=all gets from
// the server, and the audit log shows exactly the asked Services sent.
func TestDerivedServicePorts(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	c.Helm(t, "install", "app", portsChart(t, 1), "-n", ns)
	derivedPorts(t, c, ns, false)
}

// TestHelm4DerivedServicePorts is TestDerivedServicePorts for a Helm 4
// (server-side apply) release: the ports the field manager merges, then
// defaulted and validated as the server does.
func TestHelm4DerivedServicePorts(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	mustBin(t, c, c.Helm4, "install", "app", portsChart(t, 1), "-n", ns)
	derivedPorts(t, c, ns, true)
}

// derivedPorts plans portsChart's version 2 of release app in ns by
// default and with --server-dry-run=all and compares each Service's
// verdicts; helm4 says the release is Helm 4's.
func derivedPorts(t *testing.T, c *testcluster.Cluster, ns string, helm4 bool) {
	t.Helper()
	for _, pc := range portsCases {
		if pc.drift == "" {
			continue
		}
		if _, err := c.Clientset(t).CoreV1().Services(ns).Patch(t.Context(), pc.name, types.StrategicMergePatchType, []byte(pc.drift), metav1.PatchOptions{}); err != nil {
			t.Fatalf("drifting Service/%s: %v", pc.name, err)
		}
	}
	byDefault, asked, r1, r2, sent := planBothWays(t, c, ns, "app", portsChart(t, 2), "services")
	var outcomes []string
	for _, pc := range portsCases {
		prediction, class := pc.prediction, pc.class
		if helm4 && pc.prediction4 != "" {
			prediction = pc.prediction4
		}
		if helm4 && pc.class4 != "" {
			class = pc.class4
		}
		d, outcome := compareChange(t, byDefault, asked, "Service", pc.name, prediction, class, sent)
		outcomes = append(outcomes, outcome)
		if pc.drift != "" && len(d.Drift) == 0 {
			t.Errorf("Service/%s: no drift shown of the port added by hand", pc.name)
		}
	}
	logOutcomes(t, r1, r2, outcomes, sent)
}

// compareChange checks kind/name's change in the default plan byDefault
// against the one of asked, planned with --server-dry-run=all: the
// prediction and class wanted (unless ""), the same verdict, and a
// dry-run sent (sent, unless nil) exactly if the server was asked. It
// returns the default plan's change and a line saying both.
func compareChange(t *testing.T, byDefault, asked *jsonPlan, kind, name, prediction, class string, sent map[string]int) (jsonChange, string) {
	t.Helper()
	d, a := byDefault.change(t, kind, name), asked.change(t, kind, name)
	if prediction != "" && d.Prediction != prediction {
		t.Errorf("%s/%s: prediction %q by default, want %q: %s %s %+v", kind, name, d.Prediction, prediction, d.Action, d.Class, d.Reasons)
	}
	if a.Action == "update" && a.Prediction != "server" {
		t.Errorf("%s/%s: prediction %q with --server-dry-run=all, want server", kind, name, a.Prediction)
	}
	if class != "" && d.Class != class {
		t.Errorf("%s/%s: class %q, want %q: %+v", kind, name, d.Class, class, d.Reasons)
	}
	if !reflect.DeepEqual(verdict(d), verdict(a)) {
		t.Errorf("%s/%s: derived and server verdicts differ:\ndefault %+v\nall     %+v", kind, name, d, a)
	}
	if sent != nil && (sent[name] > 0) != (d.Prediction == "server") {
		t.Errorf("%s/%s: %d dry-runs by default, prediction %q", kind, name, sent[name], d.Prediction)
	}
	return d, fmt.Sprintf("%s: %s %s %s / %s %s %s", name, d.Action, d.Class, d.Prediction, a.Action, a.Class, a.Prediction)
}

// logOutcomes logs the lines of compareChange and the objects the default
// plan sent to the server.
func logOutcomes(t *testing.T, r1, r2 result, outcomes []string, sent map[string]int) {
	t.Helper()
	t.Logf("default / --server-dry-run=all (exit %d, %d):\n%s", r1.Code, r2.Code, strings.Join(outcomes, "\n"))
	if sent != nil {
		var names []string
		for name := range sent {
			names = append(names, name)
		}
		sort.Strings(names)
		t.Logf("sent by default: %v", names)
	}
}

// planBothWays plans chart next of release in ns by default (with --debug)
// and with --server-dry-run=all, checking that the default plan wrote
// nothing and that both exit alike, and returns both plans and runs and,
// unless on a user's cluster, the default plan's dry-runs of objects of
// resources, per name.
func planBothWays(t *testing.T, c *testcluster.Cluster, ns, release, next string, resources ...string) (byDefault, asked *jsonPlan, r1, r2 result, sent map[string]int) {
	t.Helper()
	before := auditMark(t, c)
	byDefault, r1 = planJSON(t, c, release, next, "-n", ns, "--debug")
	if !c.UserCluster {
		sent = map[string]int{}
		for _, resource := range resources {
			for name, n := range dryRunObjects(t, c, ns, before, resource) {
				sent[name] += n
			}
		}
	}
	assertOnlyDryRunWrites(t, c, ns, before)
	asked, r2 = planJSON(t, c, release, next, "-n", ns, "--server-dry-run=all")
	if r1.Code != r2.Code {
		t.Errorf("exit %d by default, %d with --server-dry-run=all\n%s\n%s", r1.Code, r2.Code, r1.Stderr, r2.Stderr)
	}
	return byDefault, asked, r1, r2, sent
}

// dryRunObjects counts, per object name, the tool's dry-run PATCHes of
// objects of resource in ns since the audit mark before: Helm 3's
// strategic merge patches and Helm 4's dry-run applies (a PATCH with the
// apply content type) alike.
func dryRunObjects(t *testing.T, c *testcluster.Cluster, ns string, before int, resource string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, e := range c.AuditEvents(t, nil)[before:] {
		if strings.HasPrefix(e.UserAgent, "helm-safe-upgrade/") && e.Verb == "patch" && e.ObjectRef.Namespace == ns &&
			e.ObjectRef.Resource == resource && strings.Contains(e.RequestURI, "dryRun=All") && e.Stage == "ResponseComplete" {
			out[e.ObjectRef.Name]++
		}
	}
	return out
}
