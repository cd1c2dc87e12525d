package predict

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/pod-security-admission/policy"
)

// TestDerivePodSecurity is the table of when a derived update of a pod
// controller would lose a PodSecurity warning the server gives (asked),
// and when PodSecurity cannot warn (derived), evaluated with the policy
// library as admission evaluates it.
func TestDerivePodSecurity(t *testing.T) {
	eval, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// plain runs as root with privilege escalation allowed: baseline
	// passes it, restricted does not.
	plain := map[string]interface{}{"containers": []interface{}{map[string]interface{}{"name": "app", "image": "nginx"}}}
	compliant := map[string]interface{}{
		"securityContext": map[string]interface{}{"runAsNonRoot": true, "seccompProfile": map[string]interface{}{"type": "RuntimeDefault"}},
		"containers": []interface{}{map[string]interface{}{"name": "app", "image": "nginx", "securityContext": map[string]interface{}{
			"allowPrivilegeEscalation": false, "capabilities": map[string]interface{}{"drop": []interface{}{"ALL"}}}}},
	}
	hostPath := map[string]interface{}{"containers": plain["containers"],
		"volumes": []interface{}{map[string]interface{}{"name": "h", "hostPath": map[string]interface{}{"path": "/"}}}}
	controller := func(apiVersion, kind string, spec map[string]interface{}) *unstructured.Unstructured {
		tmpl := map[string]interface{}{"spec": spec}
		s := map[string]interface{}{"template": tmpl}
		if kind == "CronJob" {
			s = map[string]interface{}{"jobTemplate": map[string]interface{}{"spec": map[string]interface{}{"template": tmpl}}}
		}
		return object(apiVersion, kind, nil, nil, map[string]interface{}{"spec": s})
	}
	deploy := controller("apps/v1", "Deployment", plain)
	// A sysctl baseline allows from 1.37 on: a 1.36 server warns about it.
	sysctl := controller("apps/v1", "Deployment", map[string]interface{}{"containers": plain["containers"],
		"securityContext": map[string]interface{}{"sysctls": []interface{}{map[string]interface{}{"name": "net.ipv4.tcp_notsent_lowat", "value": "16384"}}}})
	eval36, err := policy.NewEvaluator(policy.DefaultChecks(), PodSecurityEmulation(36))
	if err != nil {
		t.Fatal(err)
	}
	warn := func(level string) map[string]string {
		return map[string]string{"pod-security.kubernetes.io/warn": level}
	}
	tests := []struct {
		name   string
		obj    *unstructured.Unstructured
		labels map[string]string
		eval   policy.Evaluator
		// server is the API server's minor; 0 here: 37, -1: unknown.
		server int
		// asked: a part of why the server is asked; "": derived.
		asked string
	}{
		{name: "warn restricted, template fails it", obj: deploy, labels: warn("restricted"), eval: eval, asked: `restricted:latest`},
		{name: "warn restricted, no evaluator", obj: controller("apps/v1", "Deployment", compliant), labels: warn("restricted"), asked: "restricted"},
		{name: "warn restricted, compliant template", obj: controller("apps/v1", "Deployment", compliant), labels: warn("restricted"), eval: eval},
		{name: "warn privileged", obj: deploy, labels: warn("privileged"), eval: eval},
		{name: "unlabelled: the server's default, privileged", obj: deploy, eval: eval},
		{name: "only audit restricted: no client sees it", obj: deploy, labels: map[string]string{"pod-security.kubernetes.io/audit": "restricted"}, eval: eval},
		{name: "enforce restricted: warn follows it", obj: deploy, labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}, eval: eval, asked: "restricted"},
		{name: "a bad warn level fails open", obj: deploy, labels: warn("strict"), eval: eval},
		{name: "warn baseline at a version, template passes", obj: deploy, labels: map[string]string{
			"pod-security.kubernetes.io/warn": "baseline", "pod-security.kubernetes.io/warn-version": "v1.30"}, eval: eval},
		{name: "warn baseline, host path", obj: controller("apps/v1", "DaemonSet", hostPath), labels: warn("baseline"), eval: eval, asked: "baseline:latest"},
		{name: "a Job", obj: controller("batch/v1", "Job", plain), labels: warn("restricted"), eval: eval, asked: "restricted"},
		{name: "a CronJob's job template", obj: controller("batch/v1", "CronJob", plain), labels: warn("restricted"), eval: eval, asked: "restricted"},
		{name: "a newer server evaluates latest with its own checks", obj: controller("apps/v1", "Deployment", compliant), labels: warn("restricted"), eval: eval, server: 38, asked: "newer"},
		{name: "a newer server, a pinned version the library knows", obj: controller("apps/v1", "Deployment", compliant), labels: map[string]string{
			"pod-security.kubernetes.io/warn": "restricted", "pod-security.kubernetes.io/warn-version": "v1.30"}, eval: eval, server: 38},
		{name: "a sysctl 1.37 allows, a 1.37 server", obj: sysctl, labels: warn("baseline"), eval: eval},
		{name: "a sysctl 1.37 allows, a 1.36 server evaluates its own checks", obj: sysctl, labels: warn("baseline"), eval: eval36, server: 36, asked: "baseline:latest"},
		{name: "a sysctl 1.37 allows, a 1.36 server, warn-version v1.37", obj: sysctl, labels: map[string]string{
			"pod-security.kubernetes.io/warn": "baseline", "pod-security.kubernetes.io/warn-version": "v1.37"}, eval: eval36, server: 36, asked: "baseline:v1.37"},
		{name: "the server's version unknown", obj: controller("apps/v1", "Deployment", compliant), labels: warn("restricted"), eval: eval, server: -1, asked: "newer"},
		{name: "not a pod controller", obj: object("v1", "ConfigMap", nil, nil, nil), labels: warn("restricted"), eval: eval},
		{name: "no template", obj: object("apps/v1", "Deployment", nil, nil, nil), labels: warn("restricted"), eval: eval},
		{name: "template unreadable", obj: controller("apps/v1", "Deployment", map[string]interface{}{"containers": "?"}), labels: warn("restricted"), eval: eval, asked: "unreadable"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			server := tc.server
			switch server {
			case 0:
				server = 37
			case -1:
				server = 0
			}
			got := PodSecurityWarns(tc.eval, tc.obj, tc.labels, server)
			if (got == "") != (tc.asked == "") || !strings.Contains(got, tc.asked) {
				t.Errorf("got %q, want asked %q", got, tc.asked)
			}
		})
	}
}

// TestPodSecurityLibraryMinor keeps podSecurityLibraryMinor the minor of the
// policy library go.mod requires: the checks PodSecurityWarns trusts.
// TestPodSecurityEmulation: an evaluator at an older server's minor, the
// library's own for the library's minor, a newer or an unknown server.
func TestPodSecurityEmulation(t *testing.T) {
	for minor, want := range map[int]string{36: "v1.36", 30: "v1.30", 37: "", 38: "", 0: ""} {
		got := ""
		if v := PodSecurityEmulation(minor); v != nil {
			got = v.String()
		}
		if got != want {
			t.Errorf("server 1.%d: evaluator at %q, want %q", minor, got, want)
		}
	}
}

func TestPodSecurityLibraryMinor(t *testing.T) {
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("k8s.io/pod-security-admission v0.%d.", podSecurityLibraryMinor)
	if !strings.Contains(string(mod), want) {
		t.Errorf("go.mod does not require %q: update podSecurityLibraryMinor", want)
	}
}
