package cli

import (
	"strings"
	"testing"
)

const staleChart = "../../testdata/charts/staleconfig"

// TestOfflineStaleConfig: offline, a changed ConfigMap value names the
// readers inside the release whose running pods keep the old value, says
// that readers outside it were not looked for, counts as a pending change,
// and blocks with --fail-on-stale-config.
func TestOfflineStaleConfig(t *testing.T) {
	args := []string{"app", staleChart, "-n", "demo", "--offline", "--from-chart", staleChart, "--set", "greeting=hi"}
	out, errOut, code := execute(t, "helm-safe-upgrade", append(args, "--detailed-exitcode")...)
	if code != ExitPending {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, ExitPending, out, errOut)
	}
	for _, want := range []string{
		"1 changed ConfigMap/Secret: running pods of 2 workloads keep its old value until they restart",
		"running pods of Deployment/a keep the old value until they restart (envFrom, container app)",
		"running pods of Deployment/b keep the old value until they restart (subPath mount of key greeting, container app)",
		"Deployment/c: the kubelet updates the file within about a minute",
		"Deployment/d picks the change up by rolling",
		"Deployment/a reads only keys this change leaves as they are (env COLOUR from key colour, container app)",
		"the readers of changed ConfigMaps and Secrets are those inside the release only",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	_, errOut, code = execute(t, "helm-safe-upgrade", append(args, "--fail-on-stale-config")...)
	if code != ExitBlocked || !strings.Contains(errOut, "Refused: 1 changed ConfigMap/Secret: running pods of 2 workloads keep its old value until they restart (--fail-on-stale-config)") {
		t.Errorf("--fail-on-stale-config: exit %d, want %d naming the stale readers\n%s", code, ExitBlocked, errOut)
	}
	// Every reader's template changes too (a new image): all of them roll,
	// nothing is stale, nothing blocks.
	out, errOut, code = execute(t, "helm-safe-upgrade", append(args, "--set", "image=registry.example/app:2", "--fail-on-stale-config")...)
	if code != ExitOK || strings.Contains(out, "keep the old value") || !strings.Contains(out, "Deployment/a picks the change up by rolling") {
		t.Errorf("every reader rolls: exit %d, want 0 and no stale reader\n%s\n%s", code, out, errOut)
	}
}

// TestOfflineRemovedKeyBlocks: removing a key a reader reads through env
// without optional is destructive, naming the reader and the key.
func TestOfflineRemovedKeyBlocks(t *testing.T) {
	out, errOut, code := execute(t, "helm-safe-upgrade", "app", staleChart, "-n", "demo", "--offline", "--from-chart", staleChart, "--set", "withColour=false")
	if code != ExitBlocked || !strings.Contains(out, "the next pod of Deployment/a that starts fails (CreateContainerConfigError): key colour is read without optional") ||
		!strings.Contains(errOut, "--ack ConfigMap/demo/settings@") {
		t.Errorf("exit %d, want %d naming Deployment/a and key colour\n%s\n%s", code, ExitBlocked, out, errOut)
	}
}

// TestOfflineRestartStaleGolden: --restart-stale shows Deployments a and b
// (envFrom, subPath) as rolling restarts before the gate, in every output
// form, and none of the readers as stale; planning writes nothing (offline
// there is nothing to write to), and the pending restarts count (3).
func TestOfflineRestartStaleGolden(t *testing.T) {
	t.Setenv("GITHUB_ACTIONS", "")
	for _, format := range []string{"text", "json", "markdown", "sarif"} {
		t.Run(format, func(t *testing.T) {
			out, errOut, code := execute(t, "helm-safe-upgrade", "app", staleChart, "-n", "demo", "--offline", "--from-chart", staleChart,
				"--set", "greeting=hi", "--restart-stale", "--fail-on-stale-config", "--detailed-exitcode", "-o", format)
			if code != ExitPending {
				t.Fatalf("exit %d, want %d (nothing left stale, restarts pending)\n%s", code, ExitPending, errOut)
			}
			assertGolden(t, "restart."+format, out)
		})
	}
}
